/// The header fields of an HTTP message, in the order they came or will be written.
///
/// Names compare case-insensitively (RFC 9110 §5.1); a name may occur more than once, and
/// ``subscript(_:)`` gives its first value. Fields set by an application are checked when
/// a message is written: a name or value containing CR, LF or NUL is refused there, never
/// written (see ``HTTPHeaders/isValidField(name:value:)``).
public struct HTTPHeaders: Sendable, Equatable, Sequence, ExpressibleByDictionaryLiteral, CustomStringConvertible {
    /// The fields as name and value pairs, in order.
    ///
    /// Headers read from the wire keep their bytes as they came (one buffer of the
    /// message head, see `HTTPRawHead`) and make these strings when asked: reading
    /// `fields` (or iterating) decodes every field each time, so prefer the lookups
    /// (``subscript(_:)``, ``values(_:)``, ``contains(_:)``, ``hasToken(_:_:)``), which
    /// compare names on the bytes and decode only the values they return.
    public var fields: [(name: String, value: String)] {
        if let raw { return raw.fields }
        return list
    }

    /// The fields as a response head writes them, made once (see ``Storage/encoded``).
    struct Encoded: @unchecked Sendable {
        // Thread-safety: the buffer is written only inside `make`, before it is published,
        // and only read after.

        /// The fields, whether one is `Date` (the server then writes none of its own), and
        /// the number of bytes encoded.
        struct Header {
            var list: [(name: String, value: String)]
            var hasDate: Bool
            var count: Int
        }

        /// One allocation: the fields, then `Name: value\r\n` for each of them.
        final class Buffer: ManagedBuffer<Header, UInt8> {}

        private let buffer: Buffer

        /// `list` encoded, or `nil` when a field is one a response head treats apart
        /// (`Connection`, `Content-Length`, `Transfer-Encoding`: the server writes those
        /// itself) or when there is none. The fields must be valid (``isValidField(name:value:)``).
        static func make(_ list: [(name: String, value: String)]) -> Encoded? {
            guard !list.isEmpty else { return nil }
            var count = 0
            var hasDate = false
            for (name, value) in list {
                if HTTPHeaders.sameName(name, "Connection") || HTTPHeaders.sameName(name, "Content-Length")
                    || HTTPHeaders.sameName(name, "Transfer-Encoding")
                {
                    return nil
                }
                if HTTPHeaders.sameName(name, "Date") { hasDate = true }
                count += name.utf8.count + value.utf8.count + 4
            }
            let made = Buffer.create(minimumCapacity: count) { _ in Header(list: list, hasDate: hasDate, count: count) }
            let buffer = unsafeDowncast(made, to: Buffer.self)
            buffer.withUnsafeMutablePointerToElements { base in
                var at = base
                func put(_ bytes: some Sequence<UInt8>) {
                    for byte in bytes {
                        at.initialize(to: byte)
                        at += 1
                    }
                }
                for (name, value) in list {
                    put(name.utf8)
                    put([58, 32])
                    put(value.utf8)
                    put([13, 10])
                }
            }
            return Encoded(buffer: buffer)
        }

        // The buffer is the only stored property (the count is in its header): with one
        // reference in every case of `Storage`, a copy of the headers is one retain, not a
        // call to an outlined copy switching on the case (~12 instructions each way).
        private init(buffer: Buffer) { self.buffer = buffer }

        /// Which value this is (made once, by one call), not which fields: equal fields made
        /// twice are two. Unique only while the value is held.
        var identity: ObjectIdentifier { ObjectIdentifier(buffer) }

        /// The number of bytes of ``withBytes(_:)``.
        var count: Int { buffer.withUnsafeMutablePointerToHeader { $0.pointee.count } }

        var list: [(name: String, value: String)] { buffer.withUnsafeMutablePointerToHeader { $0.pointee.list } }
        var hasDate: Bool { buffer.withUnsafeMutablePointerToHeader { $0.pointee.hasDate } }

        /// `body` applied to the encoded fields.
        @inline(__always)
        func withBytes<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
            buffer.withUnsafeMutablePointerToElements { body(UnsafeRawBufferPointer(start: $0, count: count)) }
        }
    }

    /// Where the fields are: decoded strings (added by an application, or decoded from the
    /// wire's bytes once an application changed headers read from it), or the bytes as
    /// read. One enum of two references rather than two properties: headers are copied
    /// into every request and response, and a third word and second retain per copy
    /// showed in the per-request count.
    private enum Storage {
        case list([(name: String, value: String)])
        case raw(HTTPRawHead)
        /// Fields given whole by an application (``init(_:)``, a literal), every one valid
        /// and none of them one the server writes itself, together with the bytes a
        /// response head writes for them, made once: an application answers with the same
        /// headers again and again (`let plain: HTTPHeaders = [...]`), and walking them
        /// field by field per response head (its size bound, then each name and value
        /// written) cost ~300 instructions of a request (callgrind, ruv-http-hello). Made
        /// when the fields are, so never changed after (the value is shared between
        /// threads); a change (``add(_:_:)``, ...) makes the headers a plain list again.
        case encoded(Encoded)
    }

    private var storage: Storage

    /// The fields read from the wire, still as bytes; `nil` once changed.
    private var raw: HTTPRawHead? {
        if case .raw(let raw) = storage { return raw }
        return nil
    }

    /// The decoded fields; empty while `raw` holds them.
    private var list: [(name: String, value: String)] {
        switch storage {
        case .list(let list): list
        case .encoded(let encoded): encoded.list
        case .raw: []
        }
    }

    /// Changes the decoded fields in place (decoding the wire's bytes first), keeping the
    /// array uniquely referenced so the change does not copy it.
    private mutating func changeList(_ change: (inout [(name: String, value: String)]) -> Void) {
        var list: [(name: String, value: String)]
        switch storage {
        case .list(let held): list = held
        case .raw(let raw): list = raw.fields
        case .encoded(let encoded): list = encoded.list
        }
        storage = .list([])
        change(&list)
        storage = .list(list)
    }

    /// Whether every field passed ``isValidField(name:value:)`` when it was added, so a
    /// response need not check them again: an application's headers are mostly constants
    /// (`let plain: HTTPHeaders = ["Content-Type": "text/plain"]`) answered with on every
    /// request, and checking their fields on every response cost ~520 instructions of a
    /// request's ~12,600 (callgrind, ruv-http-hello; they were checked when answered and
    /// again when the head was written). `false` says only "not known": fields read by
    /// the parser are added unchecked (most are never written back), and the check is
    /// then made where the headers are written. Removing a field keeps it as it was.
    private(set) var fieldsChecked: Bool

    /// Empty headers.
    public init() {
        storage = .list([])
        fieldsChecked = true
    }

    /// Headers holding `fields` in order.
    ///
    /// - Parameter fields: name and value pairs.
    public init(_ fields: [(String, String)]) {
        let list = fields.map { (name: $0.0, value: $0.1) }
        fieldsChecked = fields.allSatisfy { Self.isValidField(name: $0.0, value: $0.1) }
        if fieldsChecked, let encoded = Encoded.make(list) {
            storage = .encoded(encoded)
        } else {
            storage = .list(list)
        }
    }

    /// Headers read from the wire: `raw`'s fields, unchecked (see ``fieldsChecked``).
    ///
    /// Kept as `raw` even without fields: a request reads its start line from here
    /// (``rawHead``) rather than keeping a second reference to the same head.
    /// `consuming`: a parser's head is moved in (borrowed, storing it was a retain, and
    /// the caller's copy a release after).
    init(raw: consuming HTTPRawHead) {
        fieldsChecked = raw.fieldCount == 0
        storage = .raw(raw)
    }

    /// `body` applied to the fields as name and value pairs, borrowed where they are held
    /// as strings: ``fields`` returned a copy of the array (a retain and a release), asked
    /// per response head written (twice: its size bound, then the head).
    @inline(__always)
    func withFieldList<R>(_ body: ([(name: String, value: String)]) -> R) -> R {
        switch storage {
        case .list(let list): body(list)
        case .raw(let raw): body(raw.fields)
        case .encoded(let encoded): body(encoded.list)
        }
    }

    /// `body` applied to the fields as a response head writes them and whether one is
    /// `Date`, when they were made whole by an application (see ``Storage/encoded``);
    /// `nil` otherwise (the head then walks ``withFieldList(_:)``).
    @inline(__always)
    func withEncoded<R>(_ body: (Encoded) -> R) -> R? {
        if case .encoded(let encoded) = storage { return body(encoded) }
        return nil
    }

    /// The head these fields were read from, while they are unchanged; `nil` otherwise.
    var rawHead: HTTPRawHead? { raw }

    /// `body` applied to the head these fields were read from, while they are unchanged;
    /// `nil` otherwise. Borrows the head where ``rawHead`` returns a copy (a retain and a
    /// release, per request for ``HTTPRequest/path``).
    @inline(__always)
    func withRawHead<R>(_ body: (borrowing HTTPRawHead) -> R) -> R? {
        switch storage {
        case .raw(let raw): body(raw)
        case .list, .encoded: nil
        }
    }

    /// Headers written as a literal, in the literal's order.
    ///
    /// - Parameter elements: name and value pairs.
    public init(dictionaryLiteral elements: (String, String)...) { self.init(elements) }

    /// The number of fields.
    var count: Int {
        switch storage {
        case .list(let list): list.count
        case .raw(let raw): raw.fieldCount
        case .encoded(let encoded): encoded.list.count
        }
    }

    /// The first value of `name`, compared case-insensitively; `nil` when absent.
    public subscript(_ name: String) -> String? {
        if let raw {
            var value: String?
            raw.forEachValue(named: name) { bytes in
                value = String(decoding: bytes, as: UTF8.self)
                return false
            }
            return value
        }
        return list.first { Self.sameName($0.name, name) }?.value
    }

    /// Every value of `name`, in order (for fields that may repeat, such as `Set-Cookie`).
    ///
    /// - Parameter name: the field name, compared case-insensitively.
    /// - Returns: the values, possibly none.
    public func values(_ name: String) -> [String] {
        if let raw {
            var values: [String] = []
            raw.forEachValue(named: name) { bytes in
                values.append(String(decoding: bytes, as: UTF8.self))
                return true
            }
            return values
        }
        return list.filter { Self.sameName($0.name, name) }.map(\.value)
    }

    /// Whether `name` is present.
    ///
    /// - Parameter name: the field name, compared case-insensitively.
    /// - Returns: `true` when at least one field has this name.
    public func contains(_ name: String) -> Bool {
        if let raw { return raw.forEachValue(named: name) { _ in false } }
        return list.contains { Self.sameName($0.name, name) }
    }

    /// Appends a field, keeping any others of the same name.
    ///
    /// - Parameters:
    ///   - name: the field name.
    ///   - value: the field value.
    public mutating func add(_ name: String, _ value: String) {
        if fieldsChecked && !Self.isValidField(name: name, value: value) { fieldsChecked = false }
        changeList { $0.append((name: name, value: value)) }
    }

    /// Appends a field read from the wire, without checking it (see ``fieldsChecked``).
    mutating func addUnchecked(_ name: String, _ value: String) {
        fieldsChecked = false
        changeList { $0.append((name: name, value: value)) }
    }

    /// Whether every field may be written (``isValidField(name:value:)``), without looking
    /// at them again when they were checked as they were added.
    ///
    /// Inlined, the walk apart: asked per answer, and almost always answered by
    /// ``fieldsChecked`` alone, which the call cost more than.
    @inline(__always)
    var allFieldsValid: Bool {
        fieldsChecked || checkEveryField()
    }

    @inline(never)
    private func checkEveryField() -> Bool {
        fields.allSatisfy { Self.isValidField(name: $0.name, value: $0.value) }
    }

    /// Replaces every field named `name` with one field holding `value`.
    ///
    /// - Parameters:
    ///   - name: the field name, compared case-insensitively.
    ///   - value: the new value.
    public mutating func set(_ name: String, _ value: String) {
        remove(name)
        add(name, value)
    }

    /// Removes every field named `name`.
    ///
    /// - Parameter name: the field name, compared case-insensitively.
    public mutating func remove(_ name: String) {
        changeList { $0.removeAll { Self.sameName($0.name, name) } }
    }

    /// Whether a comma-separated field such as `Connection` lists `token` (case-insensitive).
    ///
    /// - Parameters:
    ///   - name: the field name.
    ///   - token: the token to look for, e.g. `close` or `upgrade`.
    /// - Returns: `true` when any value of the field lists the token.
    public func hasToken(_ name: String, _ token: String) -> Bool {
        // Asked of every request and response (`Connection`, `Expect`): no array of values
        // or of list elements is made, the fields are walked in place (on the bytes as
        // read, for headers from the wire). The storage is switched on in place: `if let
        // raw` copied the head out of it, a retain and a release per call.
        if case .raw(let raw) = storage {
            var listed = false
            raw.forEachValue(named: name) { bytes in
                listed = Self.list(bytes, contains: token)
                return !listed
            }
            return listed
        }
        for field in list where Self.sameName(field.name, name) {
            if Self.list(field.value, contains: token) { return true }
        }
        return false
    }

    /// Whether the comma-separated `list` has an element equal to `token`, ASCII
    /// case-insensitively, ignoring spaces and tabs around elements (RFC 9110 §5.6.1).
    static func list(_ list: String, contains token: String) -> Bool {
        var list = list
        return list.withUTF8 { Self.list($0, contains: token) }
    }

    /// ``list(_:contains:)`` over a field's bytes.
    static func list(_ bytes: UnsafeBufferPointer<UInt8>, contains token: String) -> Bool {
        let tokenCount = token.utf8.count
        var i = 0
        let n = bytes.count
        while i <= n {
            var end = i
            while end < n && bytes[end] != UInt8(ascii: ",") { end += 1 }
            var lo = i, hi = end
            while lo < hi, bytes[lo] == 32 || bytes[lo] == 9 { lo += 1 }
            while hi > lo, bytes[hi - 1] == 32 || bytes[hi - 1] == 9 { hi -= 1 }
            if hi > lo, hi - lo == tokenCount {
                var k = lo
                var same = true
                for t in token.utf8 {
                    if !sameByte(bytes[k], t) { same = false; break }
                    k += 1
                }
                if same { return true }
            }
            i = end + 1
        }
        return false
    }

    /// Iterates the fields in order.
    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> { fields.makeIterator() }

    /// The fields as they would be written, one `Name: value` per line.
    public var description: String { fields.map { "\($0.name): \($0.value)" }.joined(separator: "\n") }

    /// Two header sets are equal when they hold the same fields in the same order (names
    /// compared case-insensitively, values exactly).
    public static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
        let (l, r) = (lhs.fields, rhs.fields)
        return l.count == r.count
            && zip(l, r).allSatisfy { sameName($0.name, $1.name) && $0.value == $1.value }
    }

    /// Whether a field may be written as it is: a name of RFC 9110 token characters and a
    /// value without CR, LF or NUL (which would split the message: response splitting).
    ///
    /// - Parameters:
    ///   - name: the field name.
    ///   - value: the field value.
    /// - Returns: `true` when both are safe to write.
    public static func isValidField(name: String, value: String) -> Bool {
        // Checked for every field of every response: over the strings' UTF-8 storage in
        // place when they have it (native strings do), byte by byte through the view if not.
        let nameValid = name.utf8.withContiguousStorageIfAvailable { bytes in
            !bytes.isEmpty && bytes.allSatisfy(isTokenByte)
        } ?? (!name.utf8.isEmpty && name.utf8.allSatisfy(isTokenByte))
        guard nameValid else { return false }
        return value.utf8.withContiguousStorageIfAvailable { bytes in
            !bytes.contains { $0 == 13 || $0 == 10 || $0 == 0 }
        } ?? !value.utf8.contains { $0 == 13 || $0 == 10 || $0 == 0 }
    }

    /// RFC 9110's `tchar`: the bytes a field name or method may hold (the head scanner's
    /// bit table, one definition for both).
    @inline(__always)
    static func isTokenByte(_ b: UInt8) -> Bool { HTTPHeadScanner.isTokenByte(b) }

    /// ASCII case-insensitive comparison, without allocating.
    static func sameName<A: StringProtocol, B: StringProtocol>(_ a: A, _ b: B) -> Bool {
        let x = a.utf8, y = b.utf8
        guard x.count == y.count else { return false }
        return zip(x, y).allSatisfy { sameByte($0, $1) }
    }

    /// Whether two bytes are equal, ASCII letters compared case-insensitively.
    @inline(__always)
    static func sameByte(_ a: UInt8, _ b: UInt8) -> Bool {
        (a | 0x20) == (b | 0x20) && ((a | 0x20) >= 97 && (a | 0x20) <= 122 || a == b)
    }
}

extension Substring {
    /// The substring without leading and trailing spaces and tabs (HTTP's OWS).
    var trimmingSpaces: Substring {
        var s = self
        while let f = s.first, f == " " || f == "\t" { s.removeFirst() }
        while let l = s.last, l == " " || l == "\t" { s.removeLast() }
        return s
    }
}

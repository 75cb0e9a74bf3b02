/// A message head's bytes as read: the start line's text (a request's target, a response's
/// reason phrase) and each field's name and value, as offsets into one buffer.
///
/// Why raw: making a `String` of the target and of every field name and value while
/// parsing (UTF-8 repair, a heap string when longer than 15 bytes), and an array of the
/// pairs, was the largest part of a request's cost (~3,400 of ~11,700 instructions under
/// callgrind, ruv-http-hello), and most of those strings were never read: an application
/// asks for a few fields, not every one. So the parser copies the head's text once into
/// this object (one allocation: the offsets and the bytes in its tail), and a `String` is
/// made only when asked for (``HTTPHeaders``' lookups compare names on these bytes).
///
/// Tail layout, in `UInt32` elements: `4 × fieldCount` offsets (name start, name length,
/// value start, value length, each field in order), then the text's bytes packed from
/// there on. Immutable once made, so it is shared between threads freely.
struct HTTPRawHead: @unchecked Sendable {
    // Thread-safety: the buffer is written only inside `make`, before it is published, and
    // only read after. (`ManagedBuffer` is not `Sendable`, whatever a subclass says, hence
    // this wrapper.)

    /// The counts kept in the buffer's header.
    struct Counts {
        var fieldCount: Int
        var byteCount: Int
        var startLineStart: Int
        var startLineCount: Int
    }

    /// One allocation: the counts, then the offsets and the bytes.
    final class Buffer: ManagedBuffer<Counts, UInt32> {}

    private let buffer: Buffer
    /// The counts, read through the header's pointer: `buffer.header` is a class's stored
    /// `var`, and each access to it paid a run-time exclusivity check.
    private var header: Counts { buffer.withUnsafeMutablePointerToHeader { $0.pointee } }

    /// A head holding `fieldCount` fields whose offsets (4 `UInt32`s per field, in order)
    /// are stored field by field backward from `spansEnd` (field `i` at
    /// `spansEnd - 16 × (i + 1)`, as the parser keeps them), into `bytes`, and the start
    /// line's text at `startLine`.
    static func make(
        spansEnd: UnsafeRawPointer, fieldCount: Int, bytes: UnsafePointer<UInt8>, byteCount: Int,
        startLine: Range<Int>
    ) -> HTTPRawHead {
        let spanWords = 4 * fieldCount
        let byteWords = (byteCount + 3) / 4
        let made = Buffer.create(minimumCapacity: spanWords + byteWords) { _ in
            Counts(fieldCount: fieldCount, byteCount: byteCount, startLineStart: startLine.lowerBound, startLineCount: startLine.count)
        }
        let buffer = unsafeDowncast(made, to: Buffer.self)
        buffer.withUnsafeMutablePointerToElements { words in
            for i in 0..<fieldCount {
                UnsafeMutableRawPointer(words + 4 * i).copyMemory(from: spansEnd - 16 * (i + 1), byteCount: 16)
            }
            UnsafeMutableRawPointer(words + spanWords).copyMemory(from: bytes, byteCount: byteCount)
        }
        return HTTPRawHead(buffer: buffer)
    }

    var fieldCount: Int { header.fieldCount }

    /// Runs `body` with the offsets and the bytes.
    @inline(__always)
    func withParts<R>(_ body: (UnsafePointer<UInt32>, UnsafePointer<UInt8>) throws -> R) rethrows -> R {
        try buffer.withUnsafeMutablePointers { header, words in
            try body(words, UnsafeRawPointer(words + 4 * header.pointee.fieldCount).assumingMemoryBound(to: UInt8.self))
        }
    }

    /// The start line's text: a request's target, a response's reason phrase.
    var startLine: String {
        let start = header.startLineStart, count = header.startLineCount
        return withParts { _, bytes in String(decoding: UnsafeBufferPointer(start: bytes + start, count: count), as: UTF8.self) }
    }

    /// The start line's text before its first `?`: a request target's path. Cut on the
    /// bytes, so that routing on ``HTTPRequest/path`` does not make the whole target and
    /// search it through `String`'s generic UTF-8 view (~375 instructions of
    /// ruv-http-hello's request, most of its handler). `?` is ASCII: the cut never splits
    /// a character, so this is the prefix of ``startLine`` before its first `?`.
    var startLineBeforeQuery: String {
        let start = header.startLineStart, count = header.startLineCount
        return withParts { _, bytes in
            var end = 0
            while end < count && bytes[start + end] != UInt8(ascii: "?") { end += 1 }
            return String(decoding: UnsafeBufferPointer(start: bytes + start, count: end), as: UTF8.self)
        }
    }

    /// Field `i`'s name and value as strings (invalid UTF-8 repaired).
    func field(_ i: Int) -> (name: String, value: String) {
        withParts { spans, bytes in
            let s = spans + 4 * i
            return (
                name: String(decoding: UnsafeBufferPointer(start: bytes + Int(s[0]), count: Int(s[1])), as: UTF8.self),
                value: String(decoding: UnsafeBufferPointer(start: bytes + Int(s[2]), count: Int(s[3])), as: UTF8.self)
            )
        }
    }

    /// Every field as strings, in order.
    var fields: [(name: String, value: String)] {
        (0..<fieldCount).map { field($0) }
    }

    /// Calls `body` with the value of each field named `name` (ASCII case-insensitively),
    /// in order, until it returns `false`.
    ///
    /// - Returns: whether any field had the name.
    @discardableResult @inline(__always)
    func forEachValue(named name: String, _ body: (UnsafeBufferPointer<UInt8>) -> Bool) -> Bool {
        var name = name
        return name.withUTF8 { wanted in
            withParts { spans, bytes in
                var found = false
                for i in 0..<header.fieldCount {
                    let s = spans + 4 * i
                    guard Int(s[1]) == wanted.count,
                        HTTPRawHead.sameName(UnsafeBufferPointer(start: bytes + Int(s[0]), count: Int(s[1])), wanted)
                    else { continue }
                    found = true
                    if !body(UnsafeBufferPointer(start: bytes + Int(s[2]), count: Int(s[3]))) { break }
                }
                return found
            }
        }
    }

    /// Whether a field is named `a` or `b` (ASCII case-insensitively): one pass over the
    /// fields for the framing check every request makes.
    func contains(_ a: StaticString, or b: StaticString) -> Bool {
        let wantedA = UnsafeBufferPointer(start: a.utf8Start, count: a.utf8CodeUnitCount)
        let wantedB = UnsafeBufferPointer(start: b.utf8Start, count: b.utf8CodeUnitCount)
        return withParts { spans, bytes in
            for i in 0..<fieldCount {
                let s = spans + 4 * i
                let count = Int(s[1])
                guard count == wantedA.count || count == wantedB.count else { continue }
                let name = UnsafeBufferPointer(start: bytes + Int(s[0]), count: count)
                if HTTPRawHead.sameName(name, wantedA) || HTTPRawHead.sameName(name, wantedB) { return true }
            }
            return false
        }
    }

    /// ASCII case-insensitive comparison of two names of equal length.
    @inline(__always)
    static func sameName(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        for k in 0..<a.count {
            let x = a[k], y = b[k]
            if x == y { continue }
            // Equal apart from the case bit, and a letter (the bit means case only there).
            let lx = x | 0x20
            guard lx == y | 0x20, lx >= 97, lx <= 122 else { return false }
        }
        return true
    }
}

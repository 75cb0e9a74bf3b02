import Glibc

/// Builds a response head into one byte buffer: the status line, the application's fields
/// (checked, never written when they could split the message), then the framing fields,
/// which are always ours.
enum HTTPResponseHead {
    /// How the body is delimited on the wire.
    enum Framing {
        /// `Content-Length: n`.
        case length(Int)
        /// `Transfer-Encoding: chunked` (HTTP/1.1 only).
        case chunked
        /// Neither: the body ends when the connection closes (HTTP/1.0 streaming), or
        /// there is none by rule (1xx, 204, 304).
        case none
    }

    /// The head's bytes, or `nil` when a field set by the application is not valid
    /// (``HTTPHeaders/isValidField(name:value:)``).
    static func encode(status: Int, headers: HTTPHeaders, framing: Framing, keepAlive: Bool, date: UnsafeRawBufferPointer) -> [UInt8]? {
        var out = HTTPResponseBuffer()
        defer { out.free() }
        var keepAlive = keepAlive
        var headers = headers
        return encode(status: status, headers: &headers, framing: framing, keepAlive: &keepAlive, date: date, into: &out) ? out.bytes : nil
    }

    /// ``encode(status:headers:framing:keepAlive:date:)-(_,_,_,_,UnsafeRawBufferPointer)`` with the date as an array.
    static func encode(status: Int, headers: HTTPHeaders, framing: Framing, keepAlive: Bool, date: [UInt8]) -> [UInt8]? {
        date.withUnsafeBytes { encode(status: status, headers: headers, framing: framing, keepAlive: keepAlive, date: $0) }
    }

    /// Writes the head into `out` (the answers to pipelined requests share one buffer, see
    /// ``HTTPResponseBuffer``); `false`, with `out` unchanged, when a field set by the
    /// application is not valid.
    ///
    /// The head is written in place, into memory sized up front (``bound(reason:headers:date:)``):
    /// appending its ~9 pieces to an array one by one cost ~100 instructions each through
    /// `Array.append(contentsOf:)`'s generic path, and a head written into a temporary
    /// buffer and then appended to an array made per response cost an allocation, the
    /// array's growth and two copies per response.
    ///
    /// `keepAlive` becomes `false` when the application's `Connection` field lists `close`
    /// (and `Connection: close` is written): the fields are walked here anyway, and looking
    /// for it beforehand (`hasToken`) walked them once more per response.
    ///
    /// `headers` is `inout` though only read: a request's answer is passed in place (see
    /// ``HTTPRequest/responseHeaders``), not copied out of the request.
    static func encode(status: Int, headers: inout HTTPHeaders, framing: Framing, keepAlive: inout Bool, date: UnsafeRawBufferPointer, into out: inout HTTPResponseBuffer) -> Bool {
        let reason = status == 200 ? "" : HTTPStatus.reason(status)
        let bound = bound(reason: reason, headers: headers, date: date)
        out.reserve(bound)
        var w = HeadWriter(base: out.end)
        guard write(status: status, reason: reason, headers: headers, framing: framing, keepAlive: &keepAlive, date: date, to: &w) else {
            return false
        }
        precondition(w.count <= bound, "response head larger than its bound")
        out.advance(w.count)
        return true
    }

    /// The start of the last byte answer's head made from fields made whole by the
    /// application (``HTTPHeaders/withEncoded(_:)``): its status line, those fields, our
    /// `Date` and `Content-Length: `, and what it was made from. The next head with the
    /// same status, the same fields (the same made value) and the same `Date` is that
    /// start, its length and its `Connection`: an application answering with the same
    /// constant headers again and again, the usual case, then has each head written as
    /// three copies, not built piece by piece (~200 instructions a request, callgrind,
    /// ruv-http-hello). One per server (``HTTPServerState/headPrefix``), on its loop thread.
    struct PrefixCache {
        /// Room for a start of at most `capacity` bytes; a longer one is not kept.
        static let capacity = 1024
        let bytes = UnsafeMutablePointer<UInt8>.allocate(capacity: capacity)
        /// The bytes kept; 0 while none.
        private(set) var count = 0
        private var status = 0
        /// Held, so that its identity is not another's while kept.
        private var headers: HTTPHeaders.Encoded?
        /// `headers`' identity, compared per head: loading `headers` itself to compare
        /// was a retain and a release.
        private var headersIdentity: ObjectIdentifier?
        private var dateGeneration = -1

        /// Whether the start kept is the one of a head of `status`, the headers of `identity`
        /// and the `Date` of `dateGeneration`. Asked with the identity alone: passing the
        /// headers to a mutating method retained and released them around the call.
        @inline(__always)
        func holds(status: Int, identity: ObjectIdentifier, dateGeneration: Int) -> Bool {
            count != 0 && self.status == status && self.dateGeneration == dateGeneration && headersIdentity == identity
        }

        /// Keeps the start of a head of `status`, `headers` and `date` (of `dateGeneration`);
        /// `false`, keeping none, when it is too long.
        mutating func hold(status: Int, headers: HTTPHeaders.Encoded, date: UnsafeRawBufferPointer, dateGeneration: Int) -> Bool {
            count = 0
            let reason = status == 200 ? "" : HTTPStatus.reason(status)
            guard 64 + reason.utf8.count + headers.count + date.count <= Self.capacity else { return false }
            var w = HeadWriter(base: bytes)
            HTTPResponseHead.putStatusLine(status, reason: reason, to: &w)
            headers.withBytes { w.put($0) }
            w.put(Bytes.date)
            w.put(date)
            w.put(Bytes.crlfContentLength)
            count = w.count
            self.status = status
            self.headers = headers
            headersIdentity = headers.identity
            self.dateGeneration = dateGeneration
            return true
        }

        /// Lets go of the memory.
        mutating func free() {
            headers = nil
            headersIdentity = nil
            count = 0
            bytes.deallocate()
        }
    }

    /// ``encode(status:headers:framing:keepAlive:date:into:)-(_,_,_,_,_,HTTPResponseBuffer)``
    /// for a byte answer of `length` bytes (`nil`: no length, a status without a body),
    /// through `cache` when its head can be (see ``PrefixCache``): the same bytes either
    /// way. `dateGeneration` changes whenever `date` does.
    static func encode(
        status: Int, headers: inout HTTPHeaders, length: Int?, keepAlive: inout Bool, date: UnsafeRawBufferPointer, dateGeneration: Int,
        cache: inout PrefixCache, into out: inout HTTPResponseBuffer
    ) -> Bool {
        // The shape the cache holds is the one `write` writes in fused pieces: our `Date`,
        // a length, our `Connection` (encoded fields hold no `Connection` field).
        if let length, status != 101, !date.isEmpty,
            headers.withEncoded({ encoded in
                !encoded.hasDate
                    && (cache.holds(status: status, identity: encoded.identity, dateGeneration: dateGeneration)
                        || cache.hold(status: status, headers: encoded, date: date, dateGeneration: dateGeneration))
            }) == true
        {
            out.reserve(cache.count + 64)
            var w = HeadWriter(base: out.end)
            w.put(UnsafeRawBufferPointer(start: cache.bytes, count: cache.count))
            w.putDecimal(length)
            w.put(keepAlive ? Bytes.crlfKeepAliveEnd : Bytes.crlfCloseEnd)
            out.advance(w.count)
            return true
        }
        return encode(status: status, headers: &headers, framing: length.map { .length($0) } ?? .none, keepAlive: &keepAlive, date: date, into: &out)
    }

    /// The status line: `HTTP/1.1 200 OK` and CRLF.
    @inline(__always)
    fileprivate static func putStatusLine(_ status: Int, reason: String, to out: inout HeadWriter) {
        if status == 200 {
            out.put(Bytes.ok)
        } else {
            out.put(Bytes.version)
            out.putDecimal(status)
            out.put(32)
            out.put(reason.utf8)
            out.put(Bytes.crlf)
        }
    }

    /// The head's size at most. Every byte `write` puts is counted here, generously: a field
    /// is at most its name, ": ", its value and CRLF; the `Connection` options taken from a
    /// value add at most ", " per byte of it; the fixed pieces are under 200 bytes.
    private static func bound(reason: String, headers: HTTPHeaders, date: UnsafeRawBufferPointer) -> Int {
        var bound = 256 + reason.utf8.count + date.count
        // Encoded fields are written as they are.
        if let count = headers.withEncoded({ $0.count }) { return bound + count }
        // `withFieldList`, not `fields`: see there.
        headers.withFieldList { fields in
            for (name, value) in fields { bound += name.utf8.count + 3 * value.utf8.count + 8 }
        }
        return bound
    }

    private static func write(
        status: Int, reason: String, headers: HTTPHeaders, framing: Framing, keepAlive: inout Bool, date: UnsafeRawBufferPointer,
        to out: inout HeadWriter
    ) -> Bool {
        putStatusLine(status, reason: reason, to: &out)
        var hasDate = false
        // One `Connection` field, written last: the application's options (`Upgrade` on a
        // 101 or a 426 that names the protocol to switch to), then ours. Persistence is
        // decided here, so the application's `close` / `keep-alive` are not repeated; a
        // 426 used to carry its `Connection: Upgrade` and our `Connection: close` as two
        // fields.
        // Made only for a `Connection` field with options of its own (rare): an empty array
        // made and destroyed per head cost its call and a release.
        var connectionOptions: [Substring]?
        // Fields checked as they were added (``HTTPHeaders/fieldsChecked``) are not
        // checked again; every other field is, here, whatever path the head came by.
        let checked = headers.fieldsChecked
        // Fields made whole by the application: their bytes as made once (valid, and none
        // of them one written apart below: see `HTTPHeaders.Storage.encoded`).
        let encoded = headers.withEncoded { encoded -> Bool in
            encoded.withBytes { out.put($0) }
            return encoded.hasDate
        }
        if let encoded { hasDate = encoded }
        // `withFieldList`, not `fields`: see there.
        let valid = encoded != nil || headers.withFieldList { fields -> Bool in
        for (name, value) in fields {
            guard checked || HTTPHeaders.isValidField(name: name, value: value) else { return false }
            // Our own fields are looked for by length first: most names match none of them.
            let length = name.utf8.count
            if length == 10, HTTPHeaders.sameName(name, "Connection") {
                // The same test as `HTTPHeaders.hasToken("Connection", "close")`.
                if keepAlive && HTTPHeaders.list(value, contains: "close") { keepAlive = false }
                for option in value.split(separator: ",") {
                    let token = option.trimmingSpaces
                    if token.isEmpty || HTTPHeaders.sameName(token, "close") || HTTPHeaders.sameName(token, "keep-alive") { continue }
                    if connectionOptions == nil { connectionOptions = [] }
                    connectionOptions!.append(token)
                }
                continue
            }
            // Framing is decided here, from the body we actually send.
            if length == 14 && HTTPHeaders.sameName(name, "Content-Length") || length == 17 && HTTPHeaders.sameName(name, "Transfer-Encoding") {
                continue
            }
            if length == 4 && HTTPHeaders.sameName(name, "Date") { hasDate = true }
            out.put(name.utf8)
            out.put(58)
            out.put(32)
            out.put(value.utf8)
            out.put(Bytes.crlf)
        }
        return true
        }
        guard valid else { return false }
        // The usual end of a head (our `Date`, a length, our `Connection`) in three
        // constant pieces rather than six: each piece is a call to copy it.
        if !hasDate && !date.isEmpty && status != 101 && connectionOptions == nil, case .length(let n) = framing {
            out.put(Bytes.date)
            out.put(date)
            out.put(Bytes.crlfContentLength)
            out.putDecimal(n)
            out.put(keepAlive ? Bytes.crlfKeepAliveEnd : Bytes.crlfCloseEnd)
            return true
        }
        if !hasDate && !date.isEmpty {
            out.put(Bytes.date)
            out.put(date)
            out.put(Bytes.crlf)
        }
        switch framing {
        case .length(let n):
            out.put(Bytes.contentLength)
            out.putDecimal(n)
            out.put(Bytes.crlf)
        case .chunked:
            out.put(Bytes.chunked)
        case .none:
            break
        }
        if let connectionOptions, !connectionOptions.isEmpty {
            out.put(Bytes.connection)
            for (i, option) in connectionOptions.enumerated() {
                if i > 0 { out.put(", ".utf8) }
                out.put(option.utf8)
            }
            if status != 101 {
                out.put(", ".utf8)
                out.put(keepAlive ? "keep-alive".utf8 : "close".utf8)
            }
            out.put(Bytes.crlf)
        } else if status != 101 {
            out.put(keepAlive ? Bytes.keepAlive : Bytes.close)
        }
        out.put(Bytes.crlf)
        return true
    }

    static let crlf: [UInt8] = [13, 10]

    /// The constant parts of a head: appending a `String`'s UTF-8 view copied it out
    /// through the string's storage on every response. Static strings, not arrays made
    /// once: a global array cost its once-check and a retain and a release per use, ~3
    /// uses per response (callgrind, ruv-http-hello).
    private enum Bytes {
        static let version: StaticString = "HTTP/1.1 "
        static let ok: StaticString = "HTTP/1.1 200 OK\r\n"
        static let date: StaticString = "Date: "
        static let contentLength: StaticString = "Content-Length: "
        static let chunked: StaticString = "Transfer-Encoding: chunked\r\n"
        static let connection: StaticString = "Connection: "
        static let keepAlive: StaticString = "Connection: keep-alive\r\n"
        static let close: StaticString = "Connection: close\r\n"
        static let crlf: StaticString = "\r\n"
        static let crlfContentLength: StaticString = "\r\nContent-Length: "
        static let crlfKeepAliveEnd: StaticString = "\r\nConnection: keep-alive\r\n\r\n"
        static let crlfCloseEnd: StaticString = "\r\nConnection: close\r\n\r\n"
    }

    /// `Sun, 06 Nov 1994 08:49:37 GMT` for now (RFC 9110's IMF-fixdate), without Foundation.
    static func imfDate() -> [UInt8] {
        var t = time(nil)
        var parts = tm()
        gmtime_r(&t, &parts)
        var buffer = [CChar](repeating: 0, count: 64)
        let n = strftime(&buffer, buffer.count, "%a, %d %b %Y %H:%M:%S GMT", &parts)
        return buffer[0..<n].map { UInt8(bitPattern: $0) }
    }

    /// A chunk's size line: hex length and CRLF.
    static func chunkPrefix(_ count: Int) -> [UInt8] {
        var out: [UInt8] = []
        var started = false
        for shift in stride(from: 60, through: 0, by: -4) {
            let digit = (count >> shift) & 0xF
            if digit != 0 || started || shift == 0 {
                started = true
                out.append(digit < 10 ? 48 + UInt8(digit) : 87 + UInt8(digit))
            }
        }
        out.append(contentsOf: crlf)
        return out
    }
}

/// Writes a response head into memory sized for it up front (``HTTPResponseHead/encode``):
/// each piece is one copy, with no capacity or uniqueness check.
struct HeadWriter {
    let base: UnsafeMutablePointer<UInt8>
    private(set) var count = 0

    init(base: UnsafeMutablePointer<UInt8>) { self.base = base }

    @inline(__always)
    mutating func put(_ byte: UInt8) {
        base[count] = byte
        count += 1
    }

    @inline(__always)
    mutating func put(_ bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { put(contiguous: $0) }
    }

    @inline(__always)
    mutating func put(_ text: StaticString) {
        put(contiguous: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    @inline(__always)
    mutating func put(_ bytes: UnsafeRawBufferPointer) {
        put(contiguous: bytes.assumingMemoryBound(to: UInt8.self))
    }

    /// A string's bytes: in place when the string has contiguous UTF-8 (native strings
    /// do), byte by byte otherwise.
    @inline(__always)
    mutating func put(_ text: String.UTF8View) {
        if text.withContiguousStorageIfAvailable({ put(contiguous: $0) }) == nil { for byte in text { put(byte) } }
    }

    @inline(__always)
    mutating func put(_ text: Substring.UTF8View) {
        if text.withContiguousStorageIfAvailable({ put(contiguous: $0) }) == nil { for byte in text { put(byte) } }
    }

    @inline(__always)
    private mutating func put(contiguous b: UnsafeBufferPointer<UInt8>) {
        if let source = b.baseAddress { (base + count).initialize(from: source, count: b.count) }
        count += b.count
    }

    /// `n` in decimal (n >= 0).
    mutating func putDecimal(_ n: Int) {
        if n < 10 {
            put(48 + UInt8(n))
            return
        }
        // Two and three digits (most statuses and small bodies' lengths) written straight:
        // the general loop below counted the digits and then wrote them, ~80 instructions.
        if n < 100 {
            base[count] = 48 + UInt8(n / 10)
            base[count + 1] = 48 + UInt8(n % 10)
            count += 2
            return
        }
        if n < 1000 {
            base[count] = 48 + UInt8(n / 100)
            base[count + 1] = 48 + UInt8(n / 10 % 10)
            base[count + 2] = 48 + UInt8(n % 10)
            count += 3
            return
        }
        var digits = 0
        var v = n
        while v > 0 {
            digits += 1
            v /= 10
        }
        v = n
        for k in stride(from: digits - 1, through: 0, by: -1) {
            base[count + k] = 48 + UInt8(v % 10)
            v /= 10
        }
        count += digits
    }
}

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
    static func encode(status: Int, headers: HTTPHeaders, framing: Framing, keepAlive: Bool, date: [UInt8]) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(128 + headers.fields.count * 32)
        return encode(status: status, headers: headers, framing: framing, keepAlive: keepAlive, date: date, into: &out) ? out : nil
    }

    /// Appends the head to `out` (the answers to pipelined requests share one buffer);
    /// `false`, with `out` holding part of a head, when a field set by the application is
    /// not valid: the caller drops `out` from its length before the call.
    static func encode(status: Int, headers: HTTPHeaders, framing: Framing, keepAlive: Bool, date: [UInt8], into out: inout [UInt8]) -> Bool {
        if status == 200 {
            out.append(contentsOf: Bytes.ok)
        } else {
            out.append(contentsOf: Bytes.version)
            appendDecimal(status, to: &out)
            out.append(32)
            out.append(contentsOf: HTTPStatus.reason(status).utf8)
            out.append(contentsOf: crlf)
        }
        var hasDate = false
        // One `Connection` field, written last: the application's options (`Upgrade` on a
        // 101 or a 426 that names the protocol to switch to), then ours. Persistence is
        // decided here, so the application's `close` / `keep-alive` are not repeated; a
        // 426 used to carry its `Connection: Upgrade` and our `Connection: close` as two
        // fields.
        var connectionOptions: [Substring] = []
        for (name, value) in headers.fields {
            guard HTTPHeaders.isValidField(name: name, value: value) else { return false }
            // Our own fields are looked for by length first: most names match none of them.
            let length = name.utf8.count
            if length == 10, HTTPHeaders.sameName(name, "Connection") {
                for option in value.split(separator: ",") {
                    let token = option.trimmingSpaces
                    if token.isEmpty || HTTPHeaders.sameName(token, "close") || HTTPHeaders.sameName(token, "keep-alive") { continue }
                    connectionOptions.append(token)
                }
                continue
            }
            // Framing is decided here, from the body we actually send.
            if length == 14 && HTTPHeaders.sameName(name, "Content-Length") || length == 17 && HTTPHeaders.sameName(name, "Transfer-Encoding") {
                continue
            }
            if length == 4 && HTTPHeaders.sameName(name, "Date") { hasDate = true }
            out.append(contentsOf: name.utf8)
            out.append(58)
            out.append(32)
            out.append(contentsOf: value.utf8)
            out.append(contentsOf: crlf)
        }
        if !hasDate && !date.isEmpty {
            out.append(contentsOf: Bytes.date)
            out.append(contentsOf: date)
            out.append(contentsOf: crlf)
        }
        switch framing {
        case .length(let n):
            out.append(contentsOf: Bytes.contentLength)
            appendDecimal(n, to: &out)
            out.append(contentsOf: crlf)
        case .chunked:
            out.append(contentsOf: Bytes.chunked)
        case .none:
            break
        }
        if status != 101 && connectionOptions.isEmpty {
            out.append(contentsOf: keepAlive ? Bytes.keepAlive : Bytes.close)
        } else if !connectionOptions.isEmpty {
            out.append(contentsOf: Bytes.connection)
            for (i, option) in connectionOptions.enumerated() {
                if i > 0 { out.append(contentsOf: ", ".utf8) }
                out.append(contentsOf: option.utf8)
            }
            if status != 101 {
                if !connectionOptions.isEmpty { out.append(contentsOf: ", ".utf8) }
                out.append(contentsOf: keepAlive ? "keep-alive".utf8 : "close".utf8)
            }
            out.append(contentsOf: crlf)
        }
        out.append(contentsOf: crlf)
        return true
    }

    static let crlf: [UInt8] = [13, 10]

    /// The constant parts of a head as bytes, made once: appending a `String`'s UTF-8 view
    /// copied it out through the string's storage on every response.
    private enum Bytes {
        static let version = Array("HTTP/1.1 ".utf8)
        static let ok = Array("HTTP/1.1 200 OK\r\n".utf8)
        static let date = Array("Date: ".utf8)
        static let contentLength = Array("Content-Length: ".utf8)
        static let chunked = Array("Transfer-Encoding: chunked\r\n".utf8)
        static let connection = Array("Connection: ".utf8)
        static let keepAlive = Array("Connection: keep-alive\r\n".utf8)
        static let close = Array("Connection: close\r\n".utf8)
    }

    static func appendDecimal(_ n: Int, to out: inout [UInt8]) {
        if n < 10 {
            out.append(48 + UInt8(n))
            return
        }
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        var v = n
        withUnsafeMutableBytes(of: &digits) { d in
            while v > 0 {
                d[count] = 48 + UInt8(v % 10)
                v /= 10
                count += 1
            }
            for k in stride(from: count - 1, through: 0, by: -1) { out.append(d[k]) }
        }
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

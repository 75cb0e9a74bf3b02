@testable import ReactiveUVHTTP
import Testing

/// The head scanner on its own: its token table against RFC 9110's list, and its runs of
/// ordinary bytes (method, target, version, names, values) giving the same answer, at the
/// same byte, however the head is split into reads.
@Suite struct HTTPHeadScannerTests {
    /// Scans `head` in reads of `readSize` bytes; returns the result of the read that ended
    /// the scan (as an offset into the whole head) or `.needMore`.
    private func scan(_ head: [UInt8], readSize: Int, maxHead: Int = 65536, maxLine: Int = 8192) -> HTTPHeadScanner.Result {
        var scanner = HTTPHeadScanner(isRequest: true, maxHeadBytes: maxHead, maxStartLineBytes: maxLine)
        var offset = 0
        while offset < head.count {
            let count = min(readSize, head.count - offset)
            let result = head[offset..<offset + count].withUnsafeBytes { scanner.scan($0) }
            switch result {
            case .needMore: offset += count
            case .complete(let at): return .complete(offset + at)
            case .error: return result
            }
        }
        return .needMore
    }

    private func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }

    @Test func tokenBytesAreRFC9110sTchar() {
        // tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." / "^" / "_" /
        //         "`" / "|" / "~" / DIGIT / ALPHA
        let tchar = Set(Array("!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz".utf8))
        for b in 0...255 {
            #expect(HTTPHeadScanner.isTokenByte(UInt8(b)) == tchar.contains(UInt8(b)), "byte \(b)")
        }
    }

    @Test func aHeadEndsAtTheSameByteInEveryReadSize() {
        let heads = [
            "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
            "\r\n\r\nPOST /a/b?c=d HTTP/1.0\r\nContent-Length: 5\r\nX-Empty:\r\nX-Tab:\tv\t\r\n\r\nhello",
            "M-SEARCH * HTTP/1.1\r\nST: ssdp:all\r\nMAN: \"ssdp:discover\"\r\n\r\nGET / HTTP/1.1\r\n\r\n",
        ]
        for head in heads {
            let all = bytes(head)
            let end = all.count - (head.hasSuffix("hello") ? 5 : head.hasPrefix("M-SEARCH") ? 18 : 0)
            for size in [1, 2, 3, 5, 7, 16, all.count] {
                #expect(scan(all, readSize: size) == .complete(end), "\(head.debugDescription) in reads of \(size)")
            }
        }
    }

    @Test func refusedBytesAreFoundAfterARunInEveryReadSize() {
        let cases: [(String, HTTPParseError)] = [
            ("GET /abc\u{7F} HTTP/1.1\r\n\r\n", .badRequest("invalid byte 127 in the request target")),
            ("GE(T / HTTP/1.1\r\n\r\n", .badRequest("invalid byte 40 in the method")),
            ("GET / HTTP/1.1\u{1}\r\n\r\n", .badRequest("invalid byte 1 in the HTTP version")),
            ("GET / HTTP/1.1\r\nHost : x\r\n\r\n", .badRequest("invalid byte 32 in a header field name")),
            ("GET / HTTP/1.1\r\nHost: x\u{0}y\r\n\r\n", .badRequest("control byte 0 in a header field value")),
            ("GET / HTTP/1.1\r\nHost: x\n\r\n", .badRequest("control byte 10 in a header field value")),
            ("GET / HTTP/1.1\r\n folded\r\n\r\n", .badRequest("obsolete line folding in the header section")),
            ("GET / HTTP/2.0\r\n\r\n", .versionNotSupported("HTTP/2.0")),
            // Eight bytes that read `HTTP/1.1` but are not the whole version.
            ("GET / HTTP/1.10\r\n\r\n", .badRequest("malformed HTTP version")),
            ("GET / HTTP/1.1 \r\n\r\n", .badRequest("invalid byte 32 in the HTTP version")),
            ("GET / HTTP/1.1\r\r\n\r\n", .badRequest("CR without LF in the start line")),
        ]
        for (head, error) in cases {
            for size in [1, 2, 3, 7, 64] {
                #expect(scan(bytes(head), readSize: size) == .error(error), "\(head.debugDescription) in reads of \(size)")
            }
        }
    }

    /// The limits fall on their exact byte though a run is taken at once: a head or start
    /// line of exactly the limit passes, one byte more is refused, in every read size.
    @Test func limitsFallOnTheExactByteInsideRuns() {
        let target = "/" + String(repeating: "t", count: 300)
        let line = "GET \(target) HTTP/1.1\r\n"
        let lineBytes = line.utf8.count - 1  // counted up to and including the CR
        let head = bytes(line + "X-" + String(repeating: "n", count: 200) + ": " + String(repeating: "v", count: 200) + "\r\n\r\n")
        for size in [1, 7, 64, head.count] {
            #expect(scan(head, readSize: size, maxLine: lineBytes) == .complete(head.count), "line at its limit, reads of \(size)")
            #expect(scan(head, readSize: size, maxLine: lineBytes - 1) == .error(.uriTooLong(lineBytes - 1)), "line over, reads of \(size)")
            #expect(scan(head, readSize: size, maxHead: head.count) == .complete(head.count), "head at its limit, reads of \(size)")
            #expect(scan(head, readSize: size, maxHead: head.count - 1) == .error(.headersTooLarge(head.count - 1)), "head over, reads of \(size)")
            // A head limit that falls inside the start line is a 414, inside a name a 431.
            #expect(scan(head, readSize: size, maxHead: 100) == .error(.uriTooLong(8192)), "head limit in the target, reads of \(size)")
            #expect(scan(head, readSize: size, maxHead: line.utf8.count + 50) == .error(.headersTooLarge(line.utf8.count + 50)), "head limit in a name, reads of \(size)")
        }
        let longMethod = bytes(String(repeating: "M", count: 100) + " / HTTP/1.1\r\n\r\n")
        for size in [1, 7, longMethod.count] {
            #expect(scan(longMethod, readSize: size, maxHead: 50) == .error(.uriTooLong(8192)), "head limit in the method, reads of \(size)")
        }
    }

    /// The parser skips its framing check when the scanner saw no field name as long as
    /// `Content-Length` or `Transfer-Encoding`: a name of either length is always seen,
    /// however the name is split between reads.
    @Test func namesAsLongAsTheFramingFieldsAreSeenInEveryReadSize() {
        func sees(_ head: String, readSize: Int) -> Bool {
            var scanner = HTTPHeadScanner(isRequest: true, maxHeadBytes: 65536, maxStartLineBytes: 8192)
            let all = bytes(head)
            var offset = 0
            while offset < all.count {
                let count = min(readSize, all.count - offset)
                if case .complete = all[offset..<offset + count].withUnsafeBytes({ scanner.scan($0) }) { break }
                offset += count
            }
            return scanner.mayHaveFramingFields
        }
        for size in [1, 3, 7, 1000] {
            #expect(sees("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\n", readSize: size))
            #expect(sees("POST / HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n", readSize: size))
            #expect(!sees("GET / HTTP/1.1\r\nHost: a\r\nAccept: */*\r\n\r\n", readSize: size))
        }
    }
}

@testable import ReactiveUVHTTP
import Testing

/// The request parser on its own: framing, limits and the smuggling defences, on inline
/// bytes and on the seed corpus the fuzz target starts from, fed whole and byte by byte.
@Suite struct HTTPParserTests {
    private func parse(_ text: String, readSize: Int = 65536, maxHead: Int = 64 * 1024, maxLine: Int = 8 * 1024, maxBody: Int = 1 << 20) -> HTTPRequestParseReport {
        parseHTTPRequests(Array(text.utf8), readSize: readSize, maxHeadBytes: maxHead, maxStartLineBytes: maxLine, maxBodyBytes: maxBody)
    }

    @Test func parsesARequestWithItsParts() throws {
        let r = parse("GET /a/b?x=1&y=%20 HTTP/1.1\r\nHost: example\r\nX-Two: 1\r\nx-two: 2\r\n\r\n")
        #expect(r.error == nil)
        let request = try #require(r.requests.first)
        #expect(r.requests.count == 1)
        #expect(request.method == "GET")
        #expect(request.target == "/a/b?x=1&y=%20")
        #expect(request.version == .http1_1)
        #expect(request.headers["host"] == "example")
        #expect(request.headers.values("X-Two") == ["1", "2"])
        #expect(request.keepAlive)
        #expect(request.body.isEmpty)
    }

    /// Parsed headers keep the head's bytes and make strings when asked: every lookup,
    /// iteration, equality and change must see what the strings would have shown, with
    /// split reads, long values, empty values and repeated names.
    @Test func parsedHeadersAnswerAsStringHeadersDo() throws {
        let long = String(repeating: "v", count: 300)
        let text = "POST /p?q=%C3%A9 HTTP/1.1\r\nHost: h\r\nX-Empty:\r\nconnection: keep-alive, Upgrade\r\nX-Long: \(long)\r\nX-Two: 1\r\nX-TWO: 2\r\nContent-Length: 2\r\n\r\nok"
        for size in [1, 3, 65536] {
            let r = parse(text, readSize: size)
            #expect(r.error == nil, "read size \(size)")
            let request = try #require(r.requests.first)
            var headers = request.headers
            #expect(request.target == "/p?q=%C3%A9")
            #expect(headers["HOST"] == "h")
            #expect(headers["x-empty"] == "")
            #expect(headers["x-long"] == long)
            #expect(headers.values("x-two") == ["1", "2"])
            #expect(headers.contains("content-length") && !headers.contains("Content-Type"))
            #expect(headers.hasToken("Connection", "upgrade") && !headers.hasToken("Connection", "close"))
            let expected: [(String, String)] = [
                ("Host", "h"), ("X-Empty", ""), ("connection", "keep-alive, Upgrade"), ("X-Long", long),
                ("X-Two", "1"), ("X-TWO", "2"), ("Content-Length", "2"),
            ]
            #expect(headers.fields.map(\.name) == expected.map(\.0))
            #expect(headers.fields.map(\.value) == expected.map(\.1))
            #expect(Array(headers).count == expected.count)
            #expect(headers == HTTPHeaders(expected), "equal to the same fields as strings")
            #expect(headers.description.hasPrefix("Host: h\nX-Empty: \n"))
            // A change decodes the bytes first and keeps the order.
            headers.remove("x-two")
            headers.add("X-Added", "a")
            #expect(headers.fields.map(\.name) == ["Host", "X-Empty", "connection", "X-Long", "Content-Length", "X-Added"])
            #expect(request.headers.values("X-Two") == ["1", "2"], "the request's own headers are unchanged")
        }
    }

    @Test func http10ClosesUnlessKeepAlive() throws {
        let plain = try #require(parse("GET / HTTP/1.0\r\n\r\n").requests.first)
        #expect(plain.version == .http1_0)
        #expect(!plain.keepAlive)
        let kept = try #require(parse("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n").requests.first)
        #expect(kept.keepAlive)
        let closed = try #require(parse("GET / HTTP/1.1\r\nConnection: close\r\n\r\n").requests.first)
        #expect(!closed.keepAlive)
    }

    @Test func pipelinedRequestsComeInOrderWhateverTheReads() {
        let text = "GET /1 HTTP/1.1\r\n\r\nPOST /2 HTTP/1.1\r\nContent-Length: 5\r\n\r\nhelloGET /3 HTTP/1.1\r\n\r\n"
        for size in [1, 2, 5, 17, 65536] {
            let r = parse(text, readSize: size)
            #expect(r.error == nil)
            #expect(r.requests.map(\.target) == ["/1", "/2", "/3"], "read size \(size)")
            #expect(r.requests.map { String(decoding: $0.body, as: UTF8.self) } == ["", "hello", ""])
        }
    }

    @Test func chunkedBodyWithExtensionsAndTrailers() throws {
        let text = "POST /up HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5;a=b;c=\"d\"\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\nChecksum: 42\r\nX-Done: yes\r\n\r\n"
        for size in [1, 3, 65536] {
            let r = parse(text, readSize: size)
            #expect(r.error == nil)
            let request = try #require(r.requests.first)
            #expect(String(decoding: request.body, as: UTF8.self) == "hello world")
            #expect(request.trailers == ["Checksum": "42", "X-Done": "yes"])
        }
    }

    @Test func upgradeStopsAtTheHead() throws {
        let r = parse("GET /ws HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n\u{1}\u{2}not http")
        #expect(r.upgraded)
        #expect(r.error == nil)
        #expect(r.requests.map(\.target) == ["/ws"])
    }

    @Test(arguments: [
        ("both lengths", "POST / HTTP/1.1\r\nContent-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nG"),
        ("two lengths", "POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 10\r\n\r\nabc"),
        ("length list", "POST / HTTP/1.1\r\nContent-Length: 3, 10\r\n\r\nabc"),
        ("signed length", "POST / HTTP/1.1\r\nContent-Length: +3\r\n\r\nabc"),
        ("bad chunk size", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n"),
        ("huge chunk size", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFFF\r\nx\r\n0\r\n\r\n"),
        ("not chunked last", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n"),
        ("bare LF", "GET / HTTP/1.1\nHost: x\n\n"),
        ("bare CR", "GET / HTTP/1.1\r\nHost: x\rX: 1\r\n\r\n"),
        ("NUL in value", "GET / HTTP/1.1\r\nHost: a\u{0}b\r\n\r\n"),
        ("obs-fold", "GET / HTTP/1.1\r\nX: a\r\n b\r\n\r\n"),
        ("space before colon", "GET / HTTP/1.1\r\nHost : x\r\n\r\n"),
        ("LF in target", "GET /a\nb HTTP/1.1\r\n\r\n"),
        ("no version", "GET /\r\n\r\n"),
        ("unknown method", "BREW / HTTP/1.1\r\n\r\n"),
        ("control byte in trailer", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX: a\u{1}b\r\n\r\n"),
        ("truncated body", "POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc"),
        ("truncated head", "GET / HTTP/1.1\r\nHost: x\r\n"),
    ])
    func refusedWith400(_ name: String, _ text: String) {
        for size in [1, 65536] {
            let r = parse(text, readSize: size)
            #expect(r.error?.status == 400, "\(name), read size \(size): \(String(describing: r.error))")
            #expect(r.requests.isEmpty, "\(name): nothing before or after a refusal is a request")
        }
    }

    @Test func http2AndLaterGet505() {
        #expect(parse("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").error?.status == 505)
        #expect(parse("GET / HTTP/3.0\r\n\r\n").error?.status == 505)
        #expect(parse("GET / HTTP/12.0\r\n\r\n").error?.status == 505)
        #expect(parse("GET / HTTP/1.1\r\n\r\n").error == nil)
    }

    @Test func headerSectionOverTheLimitGets431() {
        let big = "GET / HTTP/1.1\r\n" + String(repeating: "X-Pad: " + String(repeating: "a", count: 90) + "\r\n", count: 20) + "\r\n"
        #expect(parse(big, maxHead: 4096).error == nil)
        #expect(parse(big, maxHead: 1024).error?.status == 431)
        #expect(parse(big, readSize: 1, maxHead: 1024).error?.status == 431)
        // An endless head is cut at the limit, not buffered.
        let endless = "GET / HTTP/1.1\r\n" + String(repeating: "X: y\r\n", count: 20_000)
        #expect(parse(endless).error == HTTPParseError(status: 431, reason: "header section larger than 65536 bytes"))
    }

    /// Field values are scanned a run of ordinary bytes at a time: the limit still falls on
    /// the exact byte, and a control byte after a long run is still found, in every read size.
    @Test func headLimitIsExactInsideLongValues() {
        let start = "GET / HTTP/1.1\r\nX-Long: "
        let value = String(repeating: "v", count: 3000)
        let head = start + value + "\r\n\r\n"
        let size = head.utf8.count
        for read in [1, 7, 65536] {
            #expect(parse(head, readSize: read, maxHead: size).error == nil, "read size \(read)")
            #expect(parse(head, readSize: read, maxHead: size - 1).error?.status == 431, "read size \(read)")
            #expect(parse(start + value + "\u{7F}x\r\n\r\n", readSize: read).error?.status == 400, "DEL after a run, read size \(read)")
            #expect(parse(start + value + "\u{1}\r\n\r\n", readSize: read).error?.status == 400, "control byte after a run, read size \(read)")
            #expect(parse(start + value + "\tend\r\n\r\n", readSize: read).error == nil, "HTAB is allowed in a value, read size \(read)")
        }
    }

    @Test func longRequestLineGets414() {
        let target = "/" + String(repeating: "a", count: 9000)
        #expect(parse("GET \(target) HTTP/1.1\r\n\r\n").error?.status == 414)
        #expect(parse("GET \(target) HTTP/1.1\r\n\r\n", maxLine: 10_000).error == nil)
    }

    @Test func bodyOverTheLimitGets413() {
        #expect(parse("POST / HTTP/1.1\r\nContent-Length: 11\r\n\r\nhello world", maxBody: 10).error?.status == 413)
        #expect(parse("POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\nhello worl", maxBody: 10).error == nil)
        let chunked = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nhello \r\n5\r\nworld\r\n0\r\n\r\n"
        #expect(parse(chunked, maxBody: 10).error?.status == 413)
        #expect(parse(chunked, maxBody: 11).error == nil)
    }
}

extension HTTPParserTests {
    @Test func upgradeAfterAnotherRequestStopsAtItsHead() {
        let r = parse("GET / HTTP/1.1\r\nHost: x\r\n\r\nGET /chat HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\nearly")
        #expect(r.upgraded)
        #expect(r.error == nil)
        #expect(r.requests.map(\.target) == ["/", "/chat"])
    }
}

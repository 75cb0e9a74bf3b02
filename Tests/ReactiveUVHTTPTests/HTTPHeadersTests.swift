import Testing

@testable import ReactiveUVHTTP

@Suite struct HTTPHeadersTests {
    @Test func namesCompareCaseInsensitivelyAndKeepOrder() {
        var h: HTTPHeaders = ["Content-Type": "text/plain", "Set-Cookie": "a=1"]
        h.add("set-cookie", "b=2")
        #expect(h["content-type"] == "text/plain")
        #expect(h.values("SET-COOKIE") == ["a=1", "b=2"])
        h.set("Content-TYPE", "application/json")
        #expect(h.fields.map(\.name) == ["Set-Cookie", "set-cookie", "Content-TYPE"])
        #expect(h["content-type"] == "application/json")
        #expect(!h.contains("Content-Length"))
        // Letters fold, other bytes do not: '[' (0x5B) is not '{' (0x7B).
        #expect(HTTPHeaders([("a[", "1")])["a{"] == nil)
    }

    @Test func tokensAreFoundInCommaSeparatedValues() {
        let h: HTTPHeaders = ["Connection": "keep-alive, Upgrade", "Upgrade": "websocket"]
        #expect(h.hasToken("connection", "upgrade"))
        #expect(h.hasToken("Connection", "KEEP-ALIVE"))
        #expect(!h.hasToken("Connection", "close"))
    }

    /// The list walk works in place on the value's bytes (no split): spaces and tabs around
    /// elements, empty elements, repeated fields and near misses.
    @Test func tokensAreFoundAcrossListShapes() {
        var h: HTTPHeaders = ["Connection": " ,\tUpgrade\t , ,", "Expect": "100-continue"]
        h.add("connection", "close")
        #expect(h.hasToken("Connection", "upgrade"))
        #expect(h.hasToken("Connection", "close"), "a later field of the same name is looked at too")
        #expect(h.hasToken("expect", "100-Continue"))
        #expect(!h.hasToken("Connection", "upgrad"), "a prefix is not the token")
        #expect(!h.hasToken("Connection", "upgrades"), "nor a longer word")
        #expect(!h.hasToken("Connection", ""), "empty elements are not tokens")
        #expect(!h.hasToken("Upgrade", "websocket"), "an absent field lists nothing")
        let longValue = String(repeating: "x-token, ", count: 500) + "last"
        #expect(HTTPHeaders([("Connection", longValue)]).hasToken("Connection", "LAST"))
    }

    /// Checked over the strings' UTF-8 bytes in place: long (heap) and short (inline)
    /// strings, ASCII or not, every token punctuation byte and every separator.
    @Test func fieldValidityHoldsForEveryStringShape() {
        let long = String(repeating: "a", count: 100)
        #expect(HTTPHeaders.isValidField(name: "X-" + long, value: long + " é ü"))
        #expect(!HTTPHeaders.isValidField(name: "X-" + long, value: long + "\r"))
        #expect(!HTTPHeaders.isValidField(name: "X-" + long + "é", value: "v"), "a name is tokens only")
        for punctuation in "!#$%&'*+-.^_`|~" {
            #expect(HTTPHeaders.isValidField(name: "a\(punctuation)b", value: "v"))
        }
        for bad in "()<>@,;:\\\"/[]?={} \t" {
            #expect(!HTTPHeaders.isValidField(name: "a\(bad)b", value: "v"), "\(bad) is not a token byte")
        }
    }

    /// Headers made whole by an application keep the bytes a response head writes for
    /// them, made once; the head written from those is byte for byte the one written
    /// field by field, and fields the server writes itself (or a change) leave the headers
    /// a plain list, written field by field as before.
    @Test func fieldsMadeWholeAreWrittenAsTheFieldByFieldHeadWouldBe() {
        func fieldByField(_ fields: [(String, String)]) -> HTTPHeaders {
            var h = HTTPHeaders()
            for (name, value) in fields { h.add(name, value) }
            return h
        }
        func head(_ h: HTTPHeaders, status: Int = 200, keepAlive: Bool = true) -> String? {
            HTTPResponseHead.encode(status: status, headers: h, framing: .length(5), keepAlive: keepAlive, date: Array("Sun, 06 Nov 1994 08:49:37 GMT".utf8))
                .map { String(decoding: $0, as: UTF8.self) }
        }
        let long = String(repeating: "v", count: 300)
        let shapes: [[(String, String)]] = [
            [("Content-Type", "text/plain")],
            [("Content-Type", "text/plain"), ("X-Long", long), ("X-Unicode", "é ü"), ("Set-Cookie", "a=1"), ("set-cookie", "b=2")],
            [("Date", "Mon, 07 Nov 1994 08:49:37 GMT"), ("X-A", "")],
            [("Connection", "close"), ("X-A", "1")],
            [("X-A", "1"), ("Content-Length", "99"), ("Transfer-Encoding", "gzip")],
            [("Connection", "Upgrade"), ("Upgrade", "websocket")],
        ]
        for fields in shapes {
            let whole = HTTPHeaders(fields)
            let added = fieldByField(fields)
            #expect(whole.withEncoded { _ in true } == nil || !fields.contains { ["connection", "content-length", "transfer-encoding"].contains($0.0.lowercased()) })
            for status in [200, 404, 101] {
                for keepAlive in [true, false] {
                    let a = head(whole, status: status, keepAlive: keepAlive), b = head(added, status: status, keepAlive: keepAlive)
                    #expect(a != nil && a == b, "\(fields) \(status)")
                }
            }
            #expect(whole == added && whole.fields.count == fields.count && whole.count == fields.count)
            #expect(whole.fields.map(\.name) == fields.map(\.0) && whole.fields.map(\.value) == fields.map(\.1))
        }
        // Which ones keep their bytes: valid fields the server does not write itself.
        #expect(HTTPHeaders([("Content-Type", "text/plain"), ("Date", "x")]).withEncoded { $0.hasDate } == true)
        #expect(HTTPHeaders([("Content-Type", "text/plain")]).withEncoded { $0.hasDate } == false)
        #expect(HTTPHeaders([("X-A", "1"), ("connection", "close")]).withEncoded { _ in true } == nil)
        #expect(HTTPHeaders([("Bad Name", "v")]).withEncoded { _ in true } == nil)
        #expect(HTTPHeaders().withEncoded { _ in true } == nil)
        // Their own `Date` replaces the server's; `Connection: close` among them closes.
        let dated = head(["Date": "Mon, 07 Nov 1994 08:49:37 GMT"])!
        #expect(dated.contains("Date: Mon, 07 Nov 1994") && !dated.contains("1994 08:49:37 GMT\r\nDate"))
        #expect(!dated.contains("Sun, 06 Nov"))
        #expect(head(["Connection": "close", "X-A": "1"])!.contains("\r\nConnection: close\r\n"))
        // A change leaves a plain list, its lookups and head as expected.
        var changed: HTTPHeaders = ["Content-Type": "text/plain", "X-A": "1"]
        changed.add("X-B", "2")
        changed.set("X-A", "3")
        #expect(changed.withEncoded { _ in true } == nil)
        #expect(changed["x-a"] == "3" && changed["X-B"] == "2" && changed.hasToken("Content-Type", "text/plain"))
        #expect(head(changed) == head(fieldByField([("Content-Type", "text/plain"), ("X-B", "2"), ("X-A", "3")])))
        changed.remove("X-B")
        #expect(changed.fields.map(\.name) == ["Content-Type", "X-A"])
    }

    /// A head's bytes exactly, for the usual shapes (its end is written in fused pieces
    /// when it has our `Date`, a length and our `Connection`) and the others.
    @Test func responseHeadsAreWrittenExactly() {
        let date = Array("Sun, 06 Nov 1994 08:49:37 GMT".utf8)
        func head(_ status: Int, _ h: HTTPHeaders, _ framing: HTTPResponseHead.Framing, keepAlive: Bool = true, date: [UInt8] = date) -> String {
            String(decoding: HTTPResponseHead.encode(status: status, headers: h, framing: framing, keepAlive: keepAlive, date: date) ?? [], as: UTF8.self)
        }
        let d = "Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n"
        #expect(head(200, ["Content-Type": "text/plain"], .length(13)) == "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\(d)Content-Length: 13\r\nConnection: keep-alive\r\n\r\n")
        #expect(head(404, [:], .length(0), keepAlive: false) == "HTTP/1.1 404 Not Found\r\n\(d)Content-Length: 0\r\nConnection: close\r\n\r\n")
        #expect(head(200, [:], .length(123_456)) == "HTTP/1.1 200 OK\r\n\(d)Content-Length: 123456\r\nConnection: keep-alive\r\n\r\n")
        #expect(head(200, [:], .length(7), date: []) == "HTTP/1.1 200 OK\r\nContent-Length: 7\r\nConnection: keep-alive\r\n\r\n")
        #expect(head(200, ["Date": "x"], .length(7)) == "HTTP/1.1 200 OK\r\nDate: x\r\nContent-Length: 7\r\nConnection: keep-alive\r\n\r\n")
        #expect(head(200, [:], .chunked) == "HTTP/1.1 200 OK\r\n\(d)Transfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n")
        #expect(head(204, [:], .none, keepAlive: false) == "HTTP/1.1 204 No Content\r\n\(d)Connection: close\r\n\r\n")
        #expect(head(426, ["Connection": "Upgrade", "Upgrade": "websocket"], .length(2), keepAlive: false) == "HTTP/1.1 426 Upgrade Required\r\nUpgrade: websocket\r\n\(d)Content-Length: 2\r\nConnection: Upgrade, close\r\n\r\n")
        #expect(head(101, ["Upgrade": "websocket", "Connection": "Upgrade"], .none, date: []) == "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
        for n in [0, 9, 10, 99, 100, 999, 1000, 65_536] {
            #expect(head(200, [:], .length(n), date: []).contains("\r\nContent-Length: \(n)\r\n"))
        }
    }

    /// A byte answer's head written through the server's kept head start is the head
    /// written without it, whatever the order of answers: the same or other statuses,
    /// the same fields made once or made again, fields with their own `Date`, changed
    /// ones, a new `Date`, no length, a 101, and a start too long to keep.
    @Test func headsWrittenThroughTheKeptStartAreTheHeadsWrittenWithoutIt() {
        var cache = HTTPResponseHead.PrefixCache()
        defer { cache.free() }
        let dates = [Array("Sun, 06 Nov 1994 08:49:37 GMT".utf8), Array("Sun, 06 Nov 1994 08:49:38 GMT".utf8)]
        let plain: HTTPHeaders = ["Content-Type": "text/plain"]
        var changed = plain
        changed.add("X-A", "1")
        let huge = HTTPHeaders([("X-Huge", String(repeating: "h", count: 2000))])
        let shapes: [HTTPHeaders] = [
            plain, plain, ["Content-Type": "text/plain"], ["Content-Type": "text/html", "X-B": "2"], plain,
            ["Date": "mine"], changed, [:], ["Connection": "close"], huge, huge, plain,
        ]
        var checked = 0
        for (generation, date) in dates.enumerated() {
            for headers in shapes {
                for status in [200, 200, 404, 200, 204, 101, 500] {
                    for length: Int? in [13, 13, 0, 12_345, nil] {
                        for keepAlive in [true, false] {
                            var h = headers
                            var keep = keepAlive
                            var out = HTTPResponseBuffer()
                            defer { out.free() }
                            let cached = date.withUnsafeBytes { date in
                                HTTPResponseHead.encode(
                                    status: status, headers: &h, length: length, keepAlive: &keep, date: date, dateGeneration: generation,
                                    cache: &cache, into: &out)
                            }
                            let plainHead = HTTPResponseHead.encode(
                                status: status, headers: headers, framing: length.map { .length($0) } ?? .none, keepAlive: keepAlive, date: date)
                            #expect(cached && out.bytes == plainHead, "\(headers) \(status) \(String(describing: length)) \(keepAlive)")
                            checked += 1
                        }
                    }
                }
            }
        }
        #expect(checked == 2 * 12 * 7 * 5 * 2)
        // The kept start is the plain one's: its fields and the `Date` it was made with.
        var h = plain
        var keep = true
        var out = HTTPResponseBuffer()
        defer { out.free() }
        _ = dates[1].withUnsafeBytes {
            HTTPResponseHead.encode(status: 200, headers: &h, length: 1, keepAlive: &keep, date: $0, dateGeneration: 7, cache: &cache, into: &out)
        }
        #expect(String(decoding: UnsafeBufferPointer(start: cache.bytes, count: cache.count), as: UTF8.self)
            == "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nDate: Sun, 06 Nov 1994 08:49:38 GMT\r\nContent-Length: ")
    }

    /// Headers remember whether every field was checked as it was added (an application's
    /// constant headers are then not checked again per response); when that is not known
    /// (a field read from the wire, an invalid field added and removed), the fields are
    /// checked where they are written.
    @Test func headersRememberWhetherTheirFieldsWereChecked() {
        var h: HTTPHeaders = ["Content-Type": "text/plain"]
        #expect(h.fieldsChecked && h.allFieldsValid)
        h.add("X-Bad", "a\r\nSet-Cookie: evil=1")
        #expect(!h.fieldsChecked && !h.allFieldsValid)
        #expect(HTTPResponseHead.encode(status: 200, headers: h, framing: .length(0), keepAlive: true, date: []) == nil)
        h.remove("X-Bad")
        #expect(!h.fieldsChecked, "no longer known once an invalid field was added")
        #expect(h.allFieldsValid, "so it is checked again, and holds")
        #expect(HTTPResponseHead.encode(status: 200, headers: h, framing: .length(0), keepAlive: true, date: []) != nil)
        #expect(!HTTPHeaders([("Bad Name", "v")]).fieldsChecked)
        #expect(HTTPHeaders([("Good-Name", "v")]).fieldsChecked)
        var parsed = HTTPHeaders()
        parsed.addUnchecked("Host", "example")
        #expect(!parsed.fieldsChecked && parsed.allFieldsValid)
        var wire = HTTPHeaders()
        wire.addUnchecked("X-Bad", "a\nb")
        #expect(!wire.allFieldsValid)
        #expect(HTTPResponseHead.encode(status: 200, headers: wire, framing: .length(0), keepAlive: true, date: []) == nil)
    }

    @Test func fieldsThatWouldSplitAMessageAreInvalid() {
        #expect(HTTPHeaders.isValidField(name: "X-Ok", value: "fine value"))
        #expect(!HTTPHeaders.isValidField(name: "X-Bad", value: "a\r\nSet-Cookie: evil=1"))
        #expect(!HTTPHeaders.isValidField(name: "X-Bad", value: "a\nb"))
        #expect(!HTTPHeaders.isValidField(name: "X-Bad", value: "a\u{0}b"))
        #expect(!HTTPHeaders.isValidField(name: "Bad Name", value: "v"))
        #expect(!HTTPHeaders.isValidField(name: "", value: "v"))
    }
}

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

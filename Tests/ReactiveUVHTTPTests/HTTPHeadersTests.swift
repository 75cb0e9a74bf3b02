import ReactiveUVHTTP
import Testing

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

    @Test func fieldsThatWouldSplitAMessageAreInvalid() {
        #expect(HTTPHeaders.isValidField(name: "X-Ok", value: "fine value"))
        #expect(!HTTPHeaders.isValidField(name: "X-Bad", value: "a\r\nSet-Cookie: evil=1"))
        #expect(!HTTPHeaders.isValidField(name: "X-Bad", value: "a\nb"))
        #expect(!HTTPHeaders.isValidField(name: "X-Bad", value: "a\u{0}b"))
        #expect(!HTTPHeaders.isValidField(name: "Bad Name", value: "v"))
        #expect(!HTTPHeaders.isValidField(name: "", value: "v"))
    }
}

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

    @Test func fieldsThatWouldSplitAMessageAreInvalid() {
        #expect(HTTPHeaders.isValidField(name: "X-Ok", value: "fine value"))
        #expect(!HTTPHeaders.isValidField(name: "X-Bad", value: "a\r\nSet-Cookie: evil=1"))
        #expect(!HTTPHeaders.isValidField(name: "X-Bad", value: "a\nb"))
        #expect(!HTTPHeaders.isValidField(name: "X-Bad", value: "a\u{0}b"))
        #expect(!HTTPHeaders.isValidField(name: "Bad Name", value: "v"))
        #expect(!HTTPHeaders.isValidField(name: "", value: "v"))
    }
}

import Testing

@testable import logcast

/// How the web view turns the fan-out's bytes into JSON frames (WebViewTransport): a line's
/// file found even when its path holds `: `, replies told from lines, a file named like a
/// reply word still a file, JSON escaping, the file chooser, order kept.
@Suite struct WebViewFramesTests {
    let files = ["/var/log/a: b.log", "/var/log/app.log"]

    @Test func aKnownFileIsFoundEvenWithColonSpaceInItsPath() {
        #expect(WebViewTransport.split("/var/log/a: b.log: hello: world", knownFiles: files)! == ("/var/log/a: b.log", "hello: world"))
        #expect(WebViewTransport.split("/var/log/app.log: x", knownFiles: files)! == ("/var/log/app.log", "x"))
        // Another source (a hub's, a forwarder's, syslog's): split at the first ": ".
        #expect(WebViewTransport.split("syslog host1: up", knownFiles: files)! == ("syslog host1", "up"))
    }

    @Test func repliesAreNotLines() {
        for reply in ["OK GREP x", "ERR invalid regex: (", "DROPPED 12", "BYE", "HEARTBEAT 30", "SEQ 7", "STATS lines_read=1"] {
            #expect(WebViewTransport.split(reply, knownFiles: files) == nil, "\(reply)")
        }
        // A file called OK is a file: its lines read `OK: …`.
        #expect(WebViewTransport.split("OK: fine", knownFiles: ["OK"])! == ("OK", "fine"))
    }

    @Test func framesKeepOrderEscapeAndFollowTheChosenFile() {
        let bytes = Array("/var/log/app.log: say \"hi\"\\\u{1}\n/var/log/a: b.log: two\nOK FILE x\n/var/log/app.log: three\n".utf8)
        let all = WebViewTransport.frames(bytes, knownFiles: files, chosenFile: nil)
        #expect(all.messages == [
            #"{"t":"lines","lines":[["/var/log/app.log","say \"hi\"\\\u0001"],["/var/log/a: b.log","two"]]}"#,
            #"{"t":"reply","text":"OK FILE x"}"#,
            #"{"t":"lines","lines":[["/var/log/app.log","three"]]}"#,
        ])
        #expect(all.replies == [#"{"t":"reply","text":"OK FILE x"}"#])
        let chosen = WebViewTransport.frames(bytes, knownFiles: files, chosenFile: "/var/log/a: b.log")
        #expect(chosen.messages == [#"{"t":"lines","lines":[["/var/log/a: b.log","two"]]}"#, #"{"t":"reply","text":"OK FILE x"}"#])
        // SEQ stays with the lines it follows (held with them while paused).
        #expect(WebViewTransport.frames(Array("SEQ 3\n".utf8), knownFiles: [], chosenFile: nil).replies.isEmpty)
    }

    @Test func theCookieHoldsTheTokenInHex() {
        #expect(WebView.hex([0x00, 0x7f, 0xab, 0xff]) == "007fabff")
        #expect(WebView.hex(Array("s3cret".utf8)) == "733363726574")
    }
}

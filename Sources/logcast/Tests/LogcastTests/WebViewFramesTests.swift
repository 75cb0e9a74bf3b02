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

    /// The frames as the web view first built them, from Strings (a String per line, split
    /// and escaped by Character): the oracle the byte-level builder must equal.
    static func stringFrames(_ bytes: [UInt8], knownFiles: [String], chosenFile: String?) -> (messages: [String], replies: Set<String>) {
        var messages: [String] = []
        var replies: Set<String> = []
        var run: [String] = []
        func flushRun() {
            guard !run.isEmpty else { return }
            messages.append(#"{"t":"lines","lines":["# + run.joined(separator: ",") + "]}")
            run = []
        }
        LogcastServer.forEachLine(bytes) { line in
            if let (file, text) = WebViewTransport.split(line, knownFiles: knownFiles) {
                if let chosenFile, chosenFile != file { return }
                run.append("[\"\(MetricsEndpoint.jsonEscape(file))\",\"\(MetricsEndpoint.jsonEscape(text))\"]")
            } else {
                flushRun()
                let message = #"{"t":"reply","text":""# + MetricsEndpoint.jsonEscape(line) + "\"}"
                messages.append(message)
                if !line.hasPrefix("SEQ ") { replies.insert(message) }
            }
        }
        flushRun()
        return (messages, replies)
    }

    /// The byte-level frames equal the String oracle's on the cases that differ between
    /// bytes and Characters: UTF-8 beyond ASCII, invalid bytes (U+FFFD), controls, a file
    /// named with a scalar canonically equal to ASCII (KELVIN SIGN), empty lines, a last
    /// line without its line feed, replies and `SEQ`, every chosen file.
    @Test func byteFramesEqualTheStringFrames() {
        let fileSets: [[String]] = [
            files, [], ["K.log"], ["\u{212A}.log"], ["/l/é.log", "/l/a.log"], [""], ["OK"],
        ]
        let pieces: [[UInt8]] = [
            Array("/var/log/app.log: plain text".utf8), Array("/var/log/a: b.log: two: parts".utf8),
            Array("/l/é.log: café".utf8), Array("/l/a.log: naïve \"q\" \\ \u{7f}".utf8), Array("K.log: kelvin".utf8),
            Array("\u{212A}.log: sign".utf8), Array("OK GREP x".utf8), Array("OK: fine".utf8), Array("SEQ 12".utf8),
            Array("ERR bad: (".utf8), Array("DROPPED 3".utf8), Array("syslog host1: up".utf8), Array("no separator".utf8),
            [], [0x01, 0x1f, 0x09, 0x0d], [0x2f, 0x6c, 0x2f, 0x61, 0x2e, 0x6c, 0x6f, 0x67, 0x3a, 0x20, 0xff, 0xc3], [0xe2, 0x82],
            Array(": starts with a separator".utf8), Array("/var/log/app.log:no space".utf8), Array("/var/log/app.log: ".utf8),
        ]
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(bound))
        }
        var cases = 0
        for known in fileSets {
            let sorted = known.sorted { $0.utf8.count > $1.utf8.count }
            for _ in 0..<60 {
                var bytes: [UInt8] = []
                for i in 0..<(1 + next(8)) {
                    if i > 0 { bytes.append(10) }
                    bytes += pieces[next(pieces.count)]
                }
                if next(2) == 0 { bytes.append(10) }
                for chosen in [nil] + known.map(Optional.some) + ["K.log", "\u{212A}.log"] {
                    let fast = WebViewTransport.frames(bytes, knownFiles: sorted, chosenFile: chosen)
                    let oracle = Self.stringFrames(bytes, knownFiles: sorted, chosenFile: chosen)
                    #expect(fast.messages == oracle.messages, "\(bytes) \(sorted) \(chosen ?? "-")")
                    #expect(fast.replies == oracle.replies, "\(bytes) \(sorted) \(chosen ?? "-")")
                    cases += 1
                }
            }
        }
        #expect(cases > 1000)
    }
}

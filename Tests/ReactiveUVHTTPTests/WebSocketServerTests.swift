import Glibc
import XCTest

@testable import ReactiveUV
@testable import ReactiveUVHTTP

/// Our server (`HTTP.listen` + `serverHandshake` + `upgrade(headers:)` +
/// `WebSocketConnection`) against Python's `websockets` client over `ws://` and raw sockets
/// sending hostile frames (`wss://` is in ReactiveUVHTTPSTests).
final class WebSocketServerTests: XCTestCase {
    /// Runs a Python program to its end (60 s at most) while the loop serves.
    func finish(_ run: WSChildRun, on loop: EventLoop, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertTrue(loop.run(until: { run.finished }, timeout: 60), "the Python peer ended", file: file, line: line)
        XCTAssertNil(run.failure, file: file, line: line)
        XCTAssertEqual(run.exit?.status, 0, "python stderr: \(String(decoding: run.stderr, as: UTF8.self))", file: file, line: line)
    }

    func startServer(on loop: EventLoop, options: WebSocketOptions = WebSocketOptions(), handler: @escaping (WebSocketConnection) -> Signal<Void> = wsEchoHandler) -> WebSocketTestServer {
        let server = WebSocketTestServer(on: loop, options: options, handler: handler)
        XCTAssertTrue(loop.run(until: { server.port != 0 || server.listenError != nil }, timeout: 30))
        XCTAssertNil(server.listenError)
        return server
    }

    func testPythonClientGetsEveryKindOfMessageEchoedWithAndWithoutCompression() throws {
        for compression in ["deflate", "none"] {
            let loop = try EventLoop()
            // Pings every 50 ms: Python answers them, so the dead-peer timeout never fires.
            let server = startServer(on: loop, options: WebSocketOptions(pingInterval: 0.05, pingTimeout: 30))
            let run = wsRunPython(pythonWebSocketClient, [String(server.port), "echo", compression], on: loop)
            finish(run, on: loop)
            XCTAssertEqual(run.line("EXT"), compression == "deflate" ? "permessage-deflate" : "none")
            XCTAssertEqual(run.line("TEXT"), "hello ✓")
            XCTAssertEqual(run.line("BINARY"), "bytes 1024 True")
            XCTAssertEqual(run.line("FRAGMENTED"), "frag-mented ✓")
            XCTAssertEqual(run.line("FRAGMENTED-BINARY"), "[1, 2, 3]")
            XCTAssertEqual(run.line("BIG"), "True")
            XCTAssertEqual(run.line("MID"), "True")
            XCTAssertEqual(run.line("PONG"), "True")
            XCTAssertEqual(run.line("CLOSE"), "4001 bye", "our server echoes the close code")
            XCTAssertTrue(loop.run(until: { server.closes.count == 1 }, timeout: 30))
            XCTAssertEqual(server.closes, [WebSocketClose(code: 4001, reason: "bye", initiatedByPeer: true)])
            XCTAssertEqual(server.connections.first?.compression != nil, compression == "deflate")
            XCTAssertTrue(server.messageErrors.isEmpty, "\(server.messageErrors)")
            server.stop()
            run.stop()
            wsAssertLoopCleanAndClose(loop)
        }
    }

    func testServerFragmentsWhatItSendsAtTheConfiguredSize() throws {
        let loop = try EventLoop()
        let server = startServer(on: loop, options: WebSocketOptions(fragmentSize: 100)) { ws in
            ws.send(ws.messages.map { _ in WebSocketMessage.binary([UInt8](repeating: 7, count: 250)) })
        }
        let run = wsRunPython(pythonWebSocketClient, [String(server.port), "fragments", "none"], on: loop)
        finish(run, on: loop)
        XCTAssertEqual(run.line("FRAGMENTS"), "3 250 True", "100 + 100 + 50 bytes")
        XCTAssertEqual(run.line("CLOSE"), "1000 ")
        XCTAssertTrue(loop.run(until: { server.closes.count == 1 }, timeout: 30))
        XCTAssertEqual(server.closes.first?.code, 1000)
        server.stop()
        run.stop()
        wsAssertLoopCleanAndClose(loop)
    }

    func testServerClosesWithItsOwnCodeAndPythonSeesIt() throws {
        let loop = try EventLoop()
        let server = startServer(on: loop)
        let run = wsRunPython(pythonWebSocketClient, [String(server.port), "server-closes", "deflate"], on: loop)
        finish(run, on: loop)
        XCTAssertEqual(run.line("CLOSED"), "4002 as asked")
        XCTAssertTrue(loop.run(until: { server.closes.count == 1 }, timeout: 30))
        XCTAssertEqual(server.closes, [WebSocketClose(code: 4002, reason: "as asked", initiatedByPeer: false)], "Python echoes the code")
        server.stop()
        run.stop()
        wsAssertLoopCleanAndClose(loop)
    }

    /// Sends `frames` after a raw handshake; returns the client's report and the server's close.
    func hostile(_ frames: [UInt8], extensions: String = "", options: WebSocketOptions = WebSocketOptions(maxMessageSize: 1024)) throws -> (WSChildRun, WebSocketClose?, [any Error]) {
        let loop = try EventLoop()
        let server = startServer(on: loop, options: options)
        let run = wsRunPython(pythonRawClient, [String(server.port), "frames", wsHex(frames)] + (extensions.isEmpty ? [] : [extensions]), on: loop)
        finish(run, on: loop)
        XCTAssertTrue(loop.run(until: { server.closes.count == 1 }, timeout: 30))
        let result = (run, server.closes.first, server.messageErrors)
        server.stop()
        run.stop()
        wsAssertLoopCleanAndClose(loop)
        return result
    }

    func testHostileFramesGetTheirExactCloseCodes() throws {
        let frame = WebSocketFrameTests.clientFrame
        let cases: [(String, [UInt8], UInt16)] = [
            ("unmasked client frame", WebSocketFrameCodec.frame(opcode: .text, payload: Array("hi".utf8), masked: false), 1002),
            ("RSV1 without an extension", frame(0x1, [0x61], true, 0x40), 1002),
            ("RSV3", frame(0x2, [0x61], true, 0x10), 1002),
            ("unknown opcode 5", frame(0x5, [], true, 0), 1002),
            ("ping of 126 bytes", frame(0x9, [UInt8](repeating: 1, count: 126), true, 0), 1002),
            ("fragmented ping", frame(0x9, [1], false, 0), 1002),
            ("continuation without a start", frame(0x0, [0x61], true, 0), 1002),
            ("invalid UTF-8", frame(0x1, Array("ok".utf8) + [0xC3, 0x28], true, 0), 1007),
            ("invalid UTF-8 across fragments", frame(0x1, [0x61, 0xF0, 0x9F], false, 0) + frame(0x0, [0x41], true, 0), 1007),
            ("over the 1024-byte maximum", frame(0x2, [UInt8](repeating: 0, count: 2000), true, 0), 1009),
            ("over the maximum in fragments", frame(0x2, [UInt8](repeating: 0, count: 600), false, 0) + frame(0x0, [UInt8](repeating: 0, count: 600), true, 0), 1009),
        ]
        for (name, bytes, code) in cases {
            // A valid message first: it is echoed before the violation closes the connection.
            let (run, close, errors) = try hostile(frame(0x1, Array("first".utf8), true, 0) + bytes)
            XCTAssertEqual(run.lines.filter { $0.hasPrefix("FRAME") || $0.hasPrefix("CLOSE") || $0 == "EOF" }.map { String($0.prefix(10)) },
                           ["FRAME 1 5", "CLOSE \(code)", "EOF"], "\(name): \(run.lines)")
            XCTAssertEqual(close?.code, code, name)
            XCTAssertEqual(close?.initiatedByPeer, false, name)
            guard case .protocolViolation(let reported, _)? = errors.first as? WebSocketError else {
                XCTFail("\(name): messages failed with \(errors)")
                continue
            }
            XCTAssertEqual(reported, code, name)
        }
    }

    func testAZipBombIsRefusedWith1009NotMemory() throws {
        // 32 MiB of zeros deflate to about 32 KiB; the server accepts 1 MiB messages.
        let deflater = try XCTUnwrap(WebSocketDeflater(WebSocketDeflateParameters(level: 9)))
        let bomb = [UInt8](repeating: 0, count: 32 << 20).withUnsafeBytes { deflater.compress($0) }
        XCTAssertLessThan(bomb.count, 40_000)
        let (run, close, _) = try hostile(
            WebSocketFrameTests.clientFrame(0x2, bomb, true, 0x40), extensions: "permessage-deflate",
            options: WebSocketOptions(maxMessageSize: 1 << 20))
        XCTAssertEqual(run.line("HEADER sec-websocket-extensions"), "permessage-deflate")
        XCTAssertEqual(run.line("CLOSE").map { String($0.prefix(4)) }, "1009", "\(run.lines)")
        XCTAssertEqual(close?.code, 1009)
    }

    func testAnotherVersionIsRefusedWithTheVersionWeSpeak() throws {
        let loop = try EventLoop()
        let server = startServer(on: loop)
        let run = wsRunPython(pythonRawClient, [String(server.port), "version8"], on: loop)
        finish(run, on: loop)
        XCTAssertEqual(run.line("STATUS"), "HTTP/1.1 426 Upgrade Required")
        XCTAssertEqual(run.line("HEADER sec-websocket-version"), "13")
        XCTAssertTrue(server.connections.isEmpty)
        server.stop()
        run.stop()
        wsAssertLoopCleanAndClose(loop)
    }

    func testADeadPeerIsDetectedByThePingTimeout() throws {
        let loop = try EventLoop()
        let server = startServer(on: loop, options: WebSocketOptions(pingInterval: 0.2, pingTimeout: 1))
        // Handshakes, then neither reads nor answers: its pongs never come.
        let run = wsRunPython(pythonRawClient, [String(server.port), "silent"], on: loop)
        XCTAssertTrue(loop.run(until: { run.lines.contains("READY") || run.finished }, timeout: 60))
        XCTAssertTrue(loop.run(until: { server.closes.count == 1 }, timeout: 60), "the ping timeout fired")
        XCTAssertEqual(server.closes.first?.code, 1006)
        XCTAssertEqual(server.messageErrors.first as? WebSocketError, .peerTimedOut)
        XCTAssertFalse(run.finished, "the peer was still alive, only silent")
        server.stop()
        run.stop()
        wsAssertLoopCleanAndClose(loop)
    }

    func testTheEchoExampleEchoesAndExitsZeroOnSIGTERM() throws {
        // The example is built with the tests (`swift build --build-tests`), next to them.
        var path = [CChar](repeating: 0, count: 4096)
        let count = readlink("/proc/self/exe", &path, path.count - 1)
        XCTAssertGreaterThan(count, 0)
        var directory = String(decoding: path[..<max(0, count)].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        while !directory.isEmpty && directory.last != "/" { directory.removeLast() }
        let binary = directory + "ruv-ws-echo"
        XCTAssertEqual(access(binary, X_OK), 0, "\(binary) is built")
        let loop = try EventLoop()
        let run = wsRunPython(pythonEchoExampleCheck, [binary], on: loop)
        finish(run, on: loop)
        XCTAssertTrue(run.line("LISTENING")?.hasPrefix("listening on 127.0.0.1:") == true, run.output)
        XCTAssertEqual(run.lines.filter { $0.hasPrefix("ECHO") }, [
            "ECHO deflate 'héllo' b'\\x00\\x01\\x02' 'abc' permessage-deflate",
            "ECHO none 'héllo' b'\\x00\\x01\\x02' 'abc' none",
        ])
        XCTAssertEqual(run.line("EXIT"), "0", "exit status 0 on SIGTERM")
        run.stop()
        wsAssertLoopCleanAndClose(loop)
    }

    func testACloseThePeerNeverAnswersEndsAfterTheCloseTimeout() throws {
        let loop = try EventLoop()
        var closedAt: [WebSocketClose] = []
        let server = startServer(on: loop, options: WebSocketOptions(closeTimeout: 0.5)) { ws in
            ws.close(code: 1001, reason: "going away")
            return ws.messages.ignoreValues().map { _ in () }.catch { error in
                closedAt.append(WebSocketClose(code: 0, reason: "\(error)", initiatedByPeer: false))
                return .empty()
            }
        }
        // Handshakes, then never reads: our close frame is never answered.
        let run = wsRunPython(pythonRawClient, [String(server.port), "silent"], on: loop)
        XCTAssertTrue(loop.run(until: { server.closes.count == 1 }, timeout: 60), "the close timeout fired")
        XCTAssertEqual(server.closes.first?.code, 1006)
        XCTAssertEqual(server.closes.first?.initiatedByPeer, false)
        XCTAssertEqual(closedAt.map(\.reason), ["\(WebSocketError.abnormalClosure)"])
        XCTAssertTrue(run.lines.contains("READY"), run.output)
        XCTAssertFalse(run.finished, "the peer was still alive, only silent")
        server.stop()
        run.stop()
        wsAssertLoopCleanAndClose(loop)
    }

    func testHeadlessChromiumNegotiatesCompressionAndClosesCleanly() throws {
        let loop = try EventLoop()
        let server = WebSocketTestServer(on: loop, page: browserPage, handler: wsEchoHandler)
        XCTAssertTrue(loop.run(until: { server.port != 0 || server.listenError != nil }, timeout: 30))
        let run = wsRunPython(pythonBrowser, [String(server.port)], on: loop)
        XCTAssertTrue(loop.run(until: { run.finished }, timeout: 120), "the browser run ended")
        XCTAssertEqual(run.exit?.status, 0, String(decoding: run.stderr, as: UTF8.self))
        XCTAssertEqual(run.lines.filter { $0.hasPrefix("LOG") }, [
            "LOG open permessage-deflate",
            "LOG text 1008 héllo ✓",
            "LOG binary 1,2,3",
            "LOG close 4005 browser done true",
        ])
        XCTAssertTrue(loop.run(until: { server.closes.count == 1 }, timeout: 30))
        XCTAssertEqual(server.closes, [WebSocketClose(code: 4005, reason: "browser done", initiatedByPeer: true)])
        XCTAssertNotNil(server.connections.first?.compression, "Chromium's offer was accepted")
        server.stop()
        run.stop()
        wsAssertLoopCleanAndClose(loop)
    }

    func testAnEchoToASlowReaderPausesInsteadOfOverflowingTheWriteQueue() throws {
        // 25 MiB echoed to a client that reads nothing for 2 s: without the pause, the
        // write queue would pass four times its 1 MiB mark and the connection would close.
        let loop = try EventLoop()
        let server = startServer(on: loop)
        let run = wsRunPython(pythonFloodClient, [String(server.port)], on: loop)
        finish(run, on: loop)
        XCTAssertEqual(run.line("ECHOED"), "400 True")
        XCTAssertEqual(run.line("CLOSE"), "1000 ")
        XCTAssertTrue(loop.run(until: { server.closes.count == 1 }, timeout: 30))
        XCTAssertEqual(server.closes.first?.code, 1000)
        XCTAssertTrue(server.messageErrors.isEmpty, "\(server.messageErrors)")
        server.stop()
        run.stop()
        wsAssertLoopCleanAndClose(loop)
    }

    func testATextEchoToASlowReaderKeepsEveryMessageInOrder() throws {
        // 400 distinct single-frame text messages (the reader's whole-text path, the
        // sender's on-loop path) echoed to a client that reads nothing for 2 s: the write
        // queue fills and reading pauses, and every message still comes back whole, in
        // order (the client compares the lists).
        let loop = try EventLoop()
        let server = startServer(on: loop)
        let run = wsRunPython(pythonFloodClient, [String(server.port), "text"], on: loop)
        finish(run, on: loop)
        XCTAssertEqual(run.line("ECHOED"), "400 True")
        XCTAssertEqual(run.line("CLOSE"), "1000 ")
        XCTAssertTrue(loop.run(until: { server.closes.count == 1 }, timeout: 30))
        XCTAssertTrue(server.messageErrors.isEmpty, "\(server.messageErrors)")
        server.stop()
        run.stop()
        wsAssertLoopCleanAndClose(loop)
    }

    func testAPingBetweenFragmentsIsAnsweredFirstAndTheMessageArrivesWhole() throws {
        let frame = WebSocketFrameTests.clientFrame
        let bytes = frame(0x1, Array("ab".utf8), false, 0) + frame(0x9, Array("x".utf8), true, 0)
            + frame(0x0, Array("cd".utf8), true, 0) + frame(0x8, [0x03, 0xE8] + Array("fine".utf8), true, 0)
        let (run, close, errors) = try hostile(bytes)
        XCTAssertEqual(run.lines.filter { $0.hasPrefix("FRAME") || $0.hasPrefix("CLOSE") || $0 == "EOF" },
                       ["FRAME 10 1", "FRAME 1 4", "CLOSE 1000 fine", "EOF"], "the pong, the echo, our echoed close")
        XCTAssertEqual(close, WebSocketClose(code: 1000, reason: "fine", initiatedByPeer: true))
        XCTAssertTrue(errors.isEmpty, "\(errors)")
    }
    func testAMessageAfterOurCloseFailsTheSendAndWhatCameBeforeItGoesOutFirst() throws {
        // The direct send path (a plain stream): "a" is echoed, then the handler closes
        // before "b" reaches the send, so the close frame follows "a" on the wire and "b"
        // fails the send with `.closed` instead of being written after the close.
        let frame = WebSocketFrameTests.clientFrame
        let bytes = frame(0x1, Array("a".utf8), true, 0) + frame(0x1, Array("b".utf8), true, 0)
            + frame(0x8, [0x03, 0xE8], true, 0)
        let loop = try EventLoop()
        let server = startServer(on: loop) { ws in
            ws.send(ws.messages.doNext { message in
                if message == .text("b") { ws.close(code: 4003, reason: "done") }
            })
        }
        let run = wsRunPython(pythonRawClient, [String(server.port), "frames", wsHex(bytes)], on: loop)
        finish(run, on: loop)
        XCTAssertTrue(loop.run(until: { server.closes.count == 1 }, timeout: 30))
        XCTAssertEqual(run.lines.filter { $0.hasPrefix("FRAME") || $0.hasPrefix("CLOSE") },
                       ["FRAME 1 1", "CLOSE 4003 done"], "the echo of a, then our close; never b")
        XCTAssertEqual(server.messageErrors.count, 1)
        guard case .closed? = server.messageErrors.first as? WebSocketError else {
            return XCTFail("\(server.messageErrors)")
        }
        server.stop()
        run.stop()
        wsAssertLoopCleanAndClose(loop)
    }
}


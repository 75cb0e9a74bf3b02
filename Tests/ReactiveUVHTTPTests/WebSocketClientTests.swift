import Glibc
import XCTest

@testable import ReactiveUV
@testable import ReactiveUVHTTP

/// Our client (`WebSocket.connect`) against Python's `websockets` server and a raw server
/// sending hostile frames.
final class WebSocketClientTests: XCTestCase {
    /// Starts a Python server and waits for the port it prints.
    func startPython(_ script: String, _ arguments: [String], on loop: EventLoop) throws -> (WSChildRun, Int) {
        let run = wsRunPython(script, arguments, on: loop)
        XCTAssertTrue(loop.run(until: { run.line("PORT") != nil || run.finished }, timeout: 60), "the Python server started")
        let port = try XCTUnwrap(run.line("PORT").flatMap { Int($0) }, "stderr: \(String(decoding: run.stderr, as: UTF8.self)) exit: \(String(describing: run.exit)) failure: \(String(describing: run.failure)) out: \(run.output)")
        return (run, port)
    }

    func testClientTalksToPythonsServerFragmentedAndCompressedAndClosesWithItsCode() throws {
        for compression in ["deflate", "none"] {
            let loop = try EventLoop()
            let (server, port) = try startPython(pythonWebSocketServer, [compression], on: loop)
            let binary = (0..<5000).map { UInt8(truncatingIfNeeded: $0 * 13) }
            let big = String(repeating: "ü", count: 40000)
            // Fragments of 1000 bytes, pings every 50 ms (Python answers them).
            let options = WebSocketOptions(fragmentSize: 1000, pingInterval: 0.05, pingTimeout: 30)
            var received: [WebSocketMessage] = []
            var connection: WebSocketConnection?
            var closes: [WebSocketClose] = []
            var failure: (any Error)?
            var ended = false
            let subscription = WebSocket.connect(host: "127.0.0.1", port: port, path: "/chat?room=1", options: options, on: loop)
                .flattenMap { ws -> Signal<Void> in
                    connection = ws
                    _ = ws.closed.subscribeNext { closes.append($0) }
                    let sends = ws.send(Signal.fromArray([.text("hello ✓"), .binary(binary), .text(big)]))
                    let reads = ws.messages.map { message -> Void in
                        received.append(message)
                        if received.count == 3 { ws.close(code: 4003, reason: "done") }
                    }
                    return Signal.merge([sends, reads])
                }
                .subscribe(error: { failure = $0 }, completed: { ended = true })
            XCTAssertTrue(loop.run(until: { ended || failure != nil }, timeout: 60), "the conversation ended")
            XCTAssertNil(failure, "\(String(describing: failure))")
            XCTAssertEqual(received, [.text("hello ✓"), .binary(binary), .text(big)])
            XCTAssertEqual(closes, [WebSocketClose(code: 4003, reason: "done", initiatedByPeer: false)], "Python echoed our code")
            XCTAssertEqual(connection?.compression != nil, compression == "deflate")
            if compression == "deflate" {
                // Python's server bounds our window when offered client_max_window_bits.
                XCTAssertLessThanOrEqual(connection?.compression?.localWindowBits ?? 99, 15)
            }
            XCTAssertTrue(loop.run(until: { server.line("SERVER-SAW") != nil }, timeout: 30), String(decoding: server.stderr, as: UTF8.self))
            XCTAssertEqual(server.line("SERVER-SAW"), "4003 done")
            subscription.dispose()
            server.stop()
            wsAssertLoopCleanAndClose(loop)
        }
    }

    /// Runs our client against the raw server sending `frames`; returns the server's report,
    /// the messages received, and how the connection ended.
    func hostileServer(_ frames: [UInt8]) throws -> (WSChildRun, [WebSocketMessage], [WebSocketClose], (any Error)?) {
        let loop = try EventLoop()
        let (server, port) = try startPython(pythonRawServer, [wsHex(frames)], on: loop)
        var received: [WebSocketMessage] = []
        var closes: [WebSocketClose] = []
        var failure: (any Error)?
        var ended = false
        let subscription = WebSocket.connect(host: "127.0.0.1", port: port, path: "/", options: WebSocketOptions(maxMessageSize: 1024), on: loop)
            .flattenMap { ws -> Signal<Void> in
                _ = ws.closed.subscribeNext { closes.append($0) }
                return ws.messages.map { received.append($0) }
            }
            .subscribe(error: { failure = $0 }, completed: { ended = true })
        XCTAssertTrue(loop.run(until: { (ended || failure != nil) && server.finished }, timeout: 60))
        XCTAssertEqual(server.exit?.status, 0, String(decoding: server.stderr, as: UTF8.self))
        subscription.dispose()
        server.stop()
        wsAssertLoopCleanAndClose(loop)
        return (server, received, closes, failure)
    }

    func testClientAnswersPingsAndFailsMaskedServerFramesWith1002() throws {
        let text = WebSocketFrameCodec.frame(opcode: .text, payload: Array("hi".utf8), masked: false)
        let ping = WebSocketFrameCodec.frame(opcode: .ping, payload: Array("p!".utf8), masked: false)
        let masked = WebSocketFrameCodec.frame(opcode: .text, payload: Array("bad".utf8), masked: true)
        let (server, received, closes, failure) = try hostileServer(text + ping + masked)
        XCTAssertEqual(received, [.text("hi")])
        XCTAssertEqual(server.lines, ["PORT \(server.line("PORT") ?? "")", "FRAME 10 p! masked", "CLOSE 1002", "EOF"], "a masked pong, then our close")
        XCTAssertEqual(closes.map(\.code), [1002])
        XCTAssertEqual(failure as? WebSocketError, .protocolViolation(code: 1002, reason: "masked server frame"))
    }

    func testClientFailsInvalidUTF8And1009FromAServer() throws {
        let invalid = WebSocketFrameCodec.frame(opcode: .text, fin: false, payload: [0x61, 0xE2, 0x82], masked: false)
            + WebSocketFrameCodec.frame(opcode: .continuation, payload: [0x41], masked: false)
        var (server, received, closes, failure) = try hostileServer(invalid)
        XCTAssertEqual(server.line("CLOSE"), "1007")
        XCTAssertEqual(closes.map(\.code), [1007])
        XCTAssertTrue(received.isEmpty)
        if case .protocolViolation(1007, _)? = failure as? WebSocketError {} else { XCTFail("\(String(describing: failure))") }

        (server, received, closes, failure) = try hostileServer(WebSocketFrameCodec.frame(opcode: .binary, payload: [UInt8](repeating: 1, count: 2048), masked: false))
        XCTAssertEqual(server.line("CLOSE"), "1009")
        XCTAssertEqual(closes.map(\.code), [1009])
    }

    func testAServerThatAnswersWithoutTheRightAcceptFailsTheHandshake() throws {
        let loop = try EventLoop()
        var failure: (any Error)?
        var port = 0
        // Our HTTP server upgrades with the wrong Sec-WebSocket-Accept.
        let listening = HTTP.listen(port: 0, on: loop, onListening: { port = $0.port })
            .flattenMap { request in
                request.upgrade(headers: ["Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Accept": "bm90IHRoZSByaWdodCBvbmU="])
                    .catchTo(.empty())
            }
            .subscribe()
        XCTAssertTrue(loop.run(until: { port != 0 }, timeout: 30))
        let client = WebSocket.connect(host: "127.0.0.1", port: port, on: loop).subscribe(error: { failure = $0 })
        XCTAssertTrue(loop.run(until: { failure != nil }, timeout: 30))
        guard case .handshakeFailed(let why)? = failure as? WebSocketError else { return XCTFail("\(String(describing: failure))") }
        XCTAssertTrue(why.contains("Sec-WebSocket-Accept"), why)
        client.dispose()
        listening.dispose()
        wsAssertLoopCleanAndClose(loop)
    }

    func testOneMessagesReaderAtATimeAndALateOneGetsTheEnd() throws {
        let loop = try EventLoop()
        let (server, port) = try startPython(pythonWebSocketServer, ["none"], on: loop)
        var events: [String] = []
        var connection: WebSocketConnection?
        let subscription = WebSocket.connect(host: "127.0.0.1", port: port, on: loop)
            .flattenMap { ws -> Signal<Void> in
                connection = ws
                let first = ws.messages.map { events.append("first \($0)") }
                let second = ws.messages.map { events.append("second \($0)") }
                    .catch { error in
                        events.append("second failed: \((error as? UVError)?.name ?? "\(error)")")
                        return .empty()
                    }
                return Signal.merge([first, second, ws.send(text: "one")])
            }
            .subscribe(error: { events.append("error \($0)") }, completed: { events.append("completed") })
        XCTAssertTrue(loop.run(until: { events.contains("first text(\"one\")") }, timeout: 60), "\(events)")
        connection?.close(code: 1000, reason: "bye")
        XCTAssertTrue(loop.run(until: { events.last == "completed" }, timeout: 60), "\(events)")
        XCTAssertEqual(events, ["second failed: EBUSY", "first text(\"one\")", "completed"])
        // After the end, a new subscription gets the end at once.
        var late: [String] = []
        _ = connection?.messages.subscribe(next: { late.append("\($0)") }, error: { late.append("error \($0)") }, completed: { late.append("completed") })
        XCTAssertEqual(late, ["completed"])
        subscription.dispose()
        server.stop()
        wsAssertLoopCleanAndClose(loop)
    }
}

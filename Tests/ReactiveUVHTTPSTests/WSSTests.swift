import Glibc
import XCTest

@testable import ReactiveUV
@testable import ReactiveUVHTTP
import ReactiveUVHTTPS

/// `wss:` both ways: our server behind ReactiveUVHTTPS's `HTTP.listen(certificate:key:)`
/// against Python's `websockets`, and ReactiveUVHTTPS's `WebSocket.connectTLS` against our
/// server (moved from ReactiveUVHTTPTests' WebSocket tests with the product).
final class WSSTests: XCTestCase {
    /// The test server's listen over TLS with `certificate` and `key`.
    static func https(_ certificate: String, _ key: String) -> (EventLoop, @escaping (SocketAddress) -> Void) -> Signal<HTTPRequest> {
        { loop, onListening in HTTP.listen(port: 0, certificate: certificate, key: key, on: loop, onListening: onListening) }
    }

    /// Runs a Python program to its end (60 s at most) while the loop serves.
    func finish(_ run: WSChildRun, on loop: EventLoop, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertTrue(loop.run(until: { run.finished }, timeout: 60), "the Python peer ended", file: file, line: line)
        XCTAssertNil(run.failure, file: file, line: line)
        XCTAssertEqual(run.exit?.status, 0, "python stderr: \(String(decoding: run.stderr, as: UTF8.self))", file: file, line: line)
    }

    /// Issue 29: an upgrade through `HTTP.listen(certificate:key:)` lost the connection after
    /// the 101 (the request came with the handshake's last bytes, was read during the reads
    /// subscription's `subscribe`, and the WebSocket's own reads then failed with EBUSY).
    func testPythonClientOverWSSThroughHTTPListenGetsEveryNumberedMessageEchoed() throws {
        let certificates = try XCTUnwrap(HTTPTestCertificates(), "openssl made the test CA")
        defer { certificates.remove() }
        let loop = try EventLoop()
        let server = WebSocketTestServer(on: loop, listen: Self.https(certificates.server, certificates.serverKey), handler: wsEchoHandler)
        XCTAssertTrue(loop.run(until: { server.port != 0 || server.listenError != nil }, timeout: 30))
        XCTAssertNil(server.listenError)
        let count = 200
        let run = wsRunPython(pythonWSSCounter, [String(server.port), certificates.ca, String(count)], on: loop)
        finish(run, on: loop)
        XCTAssertNil(run.line("FIRST-WRONG"))
        XCTAssertEqual(run.line("ECHOED"), String(count), run.output)
        XCTAssertEqual(run.line("CLOSE"), "1000")
        XCTAssertTrue(loop.run(until: { server.closes.count == 1 }, timeout: 30))
        XCTAssertEqual(server.closes, [WebSocketClose(code: 1000, reason: "done", initiatedByPeer: true)])
        XCTAssertTrue(server.messageErrors.isEmpty, "\(server.messageErrors)")
        server.stop()
        run.stop()
        wsAssertLoopCleanAndClose(loop)
    }

    func testOverTLSOurClientAndServerTalkWithCompression() throws {
        let directory = wsTemporaryDirectory()
        defer { wsRunShell("rm -rf '\(directory)'") }
        XCTAssertEqual(wsRunShell("""
            cd '\(directory)' && openssl req -x509 -newkey rsa:2048 -nodes -keyout key.pem -out cert.pem -days 2 \
              -subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1 2>/dev/null
            """), 0)
        let loop = try EventLoop()
        let server = WebSocketTestServer(on: loop, listen: Self.https(directory + "/cert.pem", directory + "/key.pem"), handler: wsEchoHandler)
        XCTAssertTrue(loop.run(until: { server.port != 0 || server.listenError != nil }, timeout: 30))
        var received: [WebSocketMessage] = []
        var closes: [WebSocketClose] = []
        var failure: (any Error)?
        var ended = false
        let payload = [UInt8](repeating: 42, count: 100_000)
        let subscription = WebSocket.connectTLS(
            host: "127.0.0.1", port: server.port, path: "/ws", serverName: "localhost",
            trust: .certificateAuthorities(path: directory + "/cert.pem"), on: loop)
            .flattenMap { ws -> Signal<Void> in
                XCTAssertNotNil(ws.compression)
                _ = ws.closed.subscribeNext { closes.append($0) }
                return Signal.merge([
                    ws.send(text: "secret").concat(ws.send(binary: payload)),
                    ws.messages.map { message in
                        received.append(message)
                        if received.count == 2 { ws.close() }
                    },
                ])
            }
            .subscribe(error: { failure = $0 }, completed: { ended = true })
        XCTAssertTrue(loop.run(until: { (ended || failure != nil) && server.closes.count == 1 }, timeout: 60))
        XCTAssertNil(failure, "\(String(describing: failure)); server: \(server.messageErrors)")
        XCTAssertEqual(received, [.text("secret"), .binary(payload)])
        XCTAssertEqual(closes, [WebSocketClose(code: 1000, reason: "", initiatedByPeer: false)])
        XCTAssertEqual(server.closes, [WebSocketClose(code: 1000, reason: "", initiatedByPeer: true)])
        subscription.dispose()
        server.stop()
        wsAssertLoopCleanAndClose(loop)
    }
}
/// A `websockets` client over `wss://`: `PORT CA-FILE COUNT`. Trusts only the test CA,
/// sends COUNT numbered text messages one after another, reads each echo, then closes;
/// prints `ECHOED n` (the echoes that came back equal to what was sent, in order),
/// `FIRST-WRONG …` for the first one that did not, and `CLOSE code`.
let pythonWSSCounter = #"""
import sys, ssl
from websockets.sync.client import connect
port, ca, count = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
context = ssl.create_default_context(cafile=ca)
echoed = 0
with connect(f"wss://localhost:{port}/ws", ssl=context, open_timeout=30, close_timeout=30) as ws:
    for i in range(count):
        ws.send(f"message {i}")
        got = ws.recv(timeout=30)
        if got == f"message {i}":
            echoed += 1
        else:
            print("FIRST-WRONG", i, repr(got)[:80])
            break
    print("ECHOED", echoed)
    ws.close(1000, "done")
    print("CLOSE", ws.protocol.close_rcvd.code)
"""#

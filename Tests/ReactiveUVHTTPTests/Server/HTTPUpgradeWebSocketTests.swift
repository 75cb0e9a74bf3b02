import Foundation
import XCTest

@testable import ReactiveUV
@testable import ReactiveUVHTTP

/// The upgrade seam with the WebSocket it was made for: our server's `upgrade(headers:)`
/// carrying ReactiveUVHTTP's WebSocket handshake and connection, against Python's
/// `websockets` client (compression negotiated), and a refused handshake.
final class HTTPUpgradeWebSocketTests: XCTestCase {
    func testAWebSocketEchoBehindHTTPListenWithPythonsWebsocketsClient() throws {
        let options = WebSocketOptions()
        let server = try HTTPTestServer { request in
            guard request.path == "/ws" else { return HTTPTestApp.handle(request) }
            switch WebSocket.serverHandshake(method: request.method, headers: request.headers, options: options) {
            case .refuse(let status, let headers, let body):
                request.respond(status: status, headers: headers, body: Array(body.utf8))
            case .accept(let headers, let compression, let subprotocol):
                _ = request.upgrade(headers: headers).subscribeNext { upgrade in
                    let ws = WebSocketConnection(upgrade: upgrade, role: .server, options: options, compression: compression, subprotocol: subprotocol)
                    _ = ws.send(ws.messages).subscribe()
                }
            }
        }
        let script = """
            import sys, urllib.request
            from websockets.sync.client import connect
            port = sys.argv[1]
            # Plain HTTP first on the same server, then the upgrade.
            print(urllib.request.urlopen("http://127.0.0.1:%s/" % port, timeout=20).read().decode())
            with connect("ws://127.0.0.1:%s/ws" % port, open_timeout=20) as ws:
                print(ws.response.headers.get("Sec-WebSocket-Extensions"))
                ws.send("hello over the seam")
                print(ws.recv(timeout=20))
                ws.send(bytes(range(10)) * 1000)
                got = ws.recv(timeout=20)
                print(type(got).__name__, len(got), got == bytes(range(10)) * 1000)
            """
        let r = try runProgram(["python3", "-c", script, String(server.port)])
        XCTAssertEqual(r.status, 0, r.err)
        let lines = r.out.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, 4, r.out)
        XCTAssertEqual(lines.first, "Hello, World!")
        XCTAssertTrue(lines.count > 1 && lines[1].hasPrefix("permessage-deflate"), r.out)
        XCTAssertEqual(Array(lines.dropFirst(2)), ["hello over the seam", "bytes 10000 True"])
        // A version the WebSocket side does not speak: refused through respond, then closed.
        let client = try RawClient(port: server.port)
        client.send("GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 8\r\n\r\n")
        let refused = client.readToEnd()
        XCTAssertTrue(refused.ended)
        XCTAssertTrue(refused.text.hasPrefix("HTTP/1.1 426 "), refused.text)
        XCTAssertTrue(refused.text.contains("Sec-WebSocket-Version: 13\r\n"), refused.text)
        // A request that does not ask for websocket: 426 names the protocol in `Upgrade` and
        // lists it in one `Connection` field with our `close` (it was two fields).
        let plain = try RawClient(port: server.port)
        plain.send("GET /ws HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let required = plain.readToEnd()
        XCTAssertTrue(required.ended)
        let head = required.text.components(separatedBy: "\r\n\r\n")[0]
        XCTAssertTrue(head.hasPrefix("HTTP/1.1 426 "), required.text)
        XCTAssertTrue(head.contains("\r\nUpgrade: websocket"), required.text)
        XCTAssertEqual(head.lowercased().occurrences(of: "\r\nconnection:"), 1, required.text)
        XCTAssertTrue(head.contains("\r\nConnection: Upgrade, close"), required.text)
        server.stop()
    }
}

import Glibc
import XCTest

@testable import ReactiveUV
@testable import ReactiveUVHTTP

// The WebSocket article's examples (ReactiveUVHTTP.docc/WebSocketGuide.md), verbatim, run
// against each other: the server snippet over a stand-in for the HTTP server's request
// (the seam: `method`, `headers`, `upgrade(headers:)`), the client snippet against it.

/// What the HTTP server's request offers the WebSocket article: the seam, over the test
/// head reader until the server is merged.
struct WSDocRequest {
    let method: String
    let headers: HTTPHeaders
    let transport: any HTTPTransport
    let leftover: [UInt8]

    /// Writes `101 Switching Protocols` with `headers`, then hands over the connection.
    func upgrade(headers: HTTPHeaders) -> Signal<HTTPUpgrade> {
        var text = "HTTP/1.1 101 Switching Protocols\r\n"
        for (name, value) in headers.fields { text += "\(name): \(value)\r\n" }
        let upgrade = HTTPUpgrade(transport: transport, leftover: leftover)
        return transport.write(Array((text + "\r\n").utf8)).then { Signal.return(upgrade) }
    }

    /// Answers with a status, headers and body, then closes.
    func respond(status: Int, headers: HTTPHeaders, body: String) -> Signal<Void> {
        var text = "HTTP/1.1 \(status) Refused\r\n"
        for (name, value) in headers.fields { text += "\(name): \(value)\r\n" }
        text += "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body
        let transport = self.transport
        return transport.write(Array(text.utf8)).then { transport.close(); return Signal<Void>.empty() }
    }
}

/// The article's server snippet, verbatim inside.
func wsDocAccept(_ request: WSDocRequest, options: WebSocketOptions) -> Signal<Void> {
    // `request` is the HTTP server's request: `method`, `headers`, `upgrade(headers:)`, and a
    // way to answer it (`respond` here).
    switch WebSocket.serverHandshake(method: request.method, headers: request.headers, options: options) {
    case .accept(let headers, let compression, let subprotocol):
        return request.upgrade(headers: headers).flattenMap { upgrade in
            let ws = WebSocketConnection(
                upgrade: upgrade, role: .server, options: options, compression: compression, subprotocol: subprotocol)
            return ws.send(ws.messages)  // an echo
        }
    case .refuse(let status, let headers, let body):
        return request.respond(status: status, headers: headers, body: body)
    }
}

final class WebSocketDocExampleTests: XCTestCase {
    func testTheArticlesServerAndClientExamplesTalkToEachOther() throws {
        let loop = try EventLoop()
        var port = 0
        let options = WebSocketOptions()
        let server = TCP.listen(host: "127.0.0.1", port: 0, on: loop, onListening: { port = $0.port })
            .flattenMap { tcp in
                wsReadRequestHead(tcp)
                    .flattenMap { head, leftover in
                        wsDocAccept(WSDocRequest(method: head.method, headers: head.headers, transport: tcp, leftover: leftover), options: options)
                    }
                    .catchTo(.empty())
            }
            .subscribe()
        XCTAssertTrue(loop.run(until: { port != 0 }, timeout: 30))

        // The article's client snippet, verbatim.
        let reply = WebSocket.connect(host: "127.0.0.1", port: port, path: "/ws", on: loop)
            .flattenMap { ws in
                ws.send(text: "hello")
                    .then { ws.messages.take(1) }
                    .doCompleted { ws.close() }
            }

        var events: [String] = []
        _ = reply.subscribe(next: { events.append("\($0)") }, error: { events.append("error \($0)") }, completed: { events.append("completed") })
        XCTAssertTrue(loop.run(until: { events.last == "completed" || events.last?.hasPrefix("error") == true }, timeout: 60))
        XCTAssertEqual(events, ["text(\"hello\")", "completed"], "one reply, then the close handshake ends the connection")

        // A request for version 8 goes through the snippet's refusal branch.
        let run = wsRunPython(pythonRawClient, [String(port), "version8"], on: loop)
        XCTAssertTrue(loop.run(until: { run.finished }, timeout: 60))
        XCTAssertEqual(run.line("STATUS"), "HTTP/1.1 426 Refused")
        XCTAssertEqual(run.line("HEADER sec-websocket-version"), "13")
        run.stop()
        server.dispose()
        wsAssertLoopCleanAndClose(loop)
    }
}

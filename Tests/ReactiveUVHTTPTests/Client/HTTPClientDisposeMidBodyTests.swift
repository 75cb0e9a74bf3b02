import Glibc
import XCTest

@testable import ReactiveUV
@testable import ReactiveUVHTTP

/// A response body (or an event stream) disposed after its head, while the server goes on
/// sending: the client closes the connection, the server sees it closed, and nothing of the
/// exchange is left (issue 29: the response and its connection held each other, so both,
/// the transport and the exchange outlived the close; LeakSanitizer reported them).
final class HTTPClientDisposeMidBodyTests: XCTestCase {
    /// A server whose answers never end: `CLOSES`. Prints `PORT p`; answers each request
    /// with a chunked `text/event-stream` and sends an event (`data: tick n`) to every
    /// open connection every 20 ms; prints `CLOSED k` when the k-th connection is closed by
    /// the client, and exits 0 after `CLOSES` of them.
    static let pythonServer = #"""
    import select, socket, sys
    wanted = int(sys.argv[1])
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    print("PORT", s.getsockname()[1], flush=True)
    heads, streaming, closes, tick = {}, set(), 0, 0
    def closed(c):
        global closes
        heads.pop(c, None); streaming.discard(c); c.close()
        closes += 1
        print("CLOSED", closes, flush=True)
    while closes < wanted:
        readable, _, _ = select.select([s] + list(heads), [], [], 0.02)
        for c in readable:
            if c is s:
                conn, _ = s.accept()
                heads[conn] = b""
                continue
            try:
                data = c.recv(4096)
            except ConnectionError:
                data = b""
            if not data:
                closed(c)
                continue
            heads[c] += data
            if c not in streaming and b"\r\n\r\n" in heads[c]:
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
                streaming.add(c)
        tick += 1
        event = b"data: tick %d\n\n" % tick
        for c in list(streaming):
            try:
                c.sendall(b"%x\r\n%s\r\n" % (len(event), event))
            except ConnectionError:
                closed(c)
    """#

    func testABodyAndAnEventStreamDisposedAfterTheHeadCloseTheirConnectionsAndLeaveNothing() throws {
        let loop = try EventLoop()
        let server = wsRunPython(Self.pythonServer, ["2"], on: loop)
        XCTAssertTrue(loop.run(until: { server.line("PORT") != nil || server.finished }, timeout: 60), server.output)
        let port = try XCTUnwrap(server.line("PORT"))
        let url = "http://127.0.0.1:\(port)/events"
        let client = HTTPClient(on: loop)

        // 1. A body read for two chunks, then disposed by `take`.
        weak var bodyResponse: HTTPResponse?
        var chunks = 0
        var bodyEnded = false
        let body = client.request("GET", url)
            .flattenMap { response -> Signal<[UInt8]> in
                bodyResponse = response
                return response.body
            }
            .take(2)
            .subscribe(next: { _ in chunks += 1 }, completed: { bodyEnded = true })
        XCTAssertTrue(loop.run(until: { bodyEnded }, timeout: 60), "two chunks arrived")
        XCTAssertEqual(chunks, 2)
        XCTAssertTrue(loop.run(until: { server.line("CLOSED") == "1" || server.finished }, timeout: 60), "the server saw the first connection closed: \(server.output)")
        body.dispose()

        // 2. An event stream taken for two events (the article's example).
        var events: [String] = []
        var eventsEnded = false
        let stream = client.events(url).take(2)
            .subscribe(next: { events.append($0.data) }, completed: { eventsEnded = true })
        XCTAssertTrue(loop.run(until: { eventsEnded }, timeout: 60), "two events arrived: \(events)")
        XCTAssertEqual(events.count, 2)
        XCTAssertTrue(events.allSatisfy { $0.hasPrefix("tick ") }, "\(events)")
        XCTAssertTrue(loop.run(until: { server.finished }, timeout: 60), "the server saw the second connection closed: \(server.output)")
        XCTAssertEqual(server.exit?.status, 0, String(decoding: server.stderr, as: UTF8.self))
        XCTAssertEqual(server.lines.filter { $0.hasPrefix("CLOSED") }, ["CLOSED 1", "CLOSED 2"], "one close per disposed stream")
        stream.dispose()

        // The pool holds nothing, and the abandoned response (with its connection and
        // exchange) is freed, not kept alive by a cycle.
        XCTAssertTrue(loop.run(until: { client.poolCounts == (0, 0, 0) && bodyResponse == nil }, timeout: 30),
                      "pool \(client.poolCounts), response \(bodyResponse.map { "\($0)" } ?? "freed")")
        XCTAssertEqual(client.poolCounts.open, 0)
        XCTAssertEqual(client.poolCounts.idle, 0)
        XCTAssertNil(bodyResponse, "the response disposed mid-body is freed")
        client.close()
        server.stop()
        wsAssertLoopCleanAndClose(loop)
    }
}

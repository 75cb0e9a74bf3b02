import Glibc
import XCTest

@testable import ReactiveUV
@testable import ReactiveUVHTTP

/// The client's response body under backpressure, against a Python server (nobody here
/// wrote it) that reports when its sends stall.
final class HTTPClientBackpressureTests: XCTestCase {
    /// A one-connection HTTP/1.1 server: `BYTES`. Prints `PORT p`, answers the first request
    /// with `BYTES` bytes (`i % 251`, `Content-Length`), writing 64 KiB at a time; when the
    /// socket has not been writable for 2 s it prints `STALLED n` once (n bytes sent so far),
    /// then goes on; `SENT n` at the end.
    static let pythonServer = #"""
    import select, socket, sys
    total = int(sys.argv[1])
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    print("PORT", s.getsockname()[1], flush=True)
    c, _ = s.accept()
    head = b""
    while b"\r\n\r\n" not in head:
        part = c.recv(4096)
        if not part: sys.exit("closed before the request ended")
        head += part
    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: %d\r\n\r\n" % total)
    body = bytes(range(251)) * (total // 251 + 1)
    sent, stalled = 0, False
    c.setblocking(False)
    while sent < total:
        _, writable, _ = select.select([], [c], [], 2 if not stalled else 60)
        if not writable:
            if stalled: sys.exit("no progress for 60 s after the stall")
            print("STALLED", sent, flush=True)
            stalled = True
            continue
        try:
            sent += c.send(body[sent:min(total, sent + 65536)])
        except BlockingIOError:
            pass
    print("SENT", sent, flush=True)
    c.setblocking(True)
    c.recv(1)
    """#

    func testAnUnsubscribedBodyPausesReadingUntilItIsSubscribedThenArrivesWhole() throws {
        let total = 32 << 20
        let loop = try EventLoop()
        let server = wsRunPython(Self.pythonServer, [String(total)], on: loop)
        XCTAssertTrue(loop.run(until: { server.line("PORT") != nil || server.finished }, timeout: 60), server.output)
        let port = try XCTUnwrap(server.line("PORT"))
        var options = HTTPClientOptions()
        options.bodyBufferBytes = 256 * 1024
        let client = HTTPClient(options: options, on: loop)
        var response: HTTPResponse?
        var failure: (any Error)?
        let asking = client.request("GET", "http://127.0.0.1:\(port)/big").subscribe(next: { response = $0 }, error: { failure = $0 })
        XCTAssertTrue(loop.run(until: { response != nil || failure != nil }, timeout: 60), "the head arrived")
        let got = try XCTUnwrap(response, "\(String(describing: failure))")
        XCTAssertEqual(got.status, 200)

        // Nobody takes the body: the client stops reading past the buffer, and the server's
        // sends stall (its positive marker), the kernel's buffers full.
        XCTAssertTrue(loop.run(until: { server.line("STALLED") != nil || server.finished }, timeout: 120), server.output)
        let stalledAt = try XCTUnwrap(server.line("STALLED").flatMap { Int($0) }, server.output)
        XCTAssertLessThan(stalledAt, total, "the server could not send everything")
        XCTAssertGreaterThan(got.heldBytes, options.bodyBufferBytes, "reading paused only past the buffer")
        XCTAssertLessThanOrEqual(got.heldBytes, options.bodyBufferBytes + 64 * 1024, "at most one read past the buffer is held")
        print("HTTPClientBackpressureTests: server stalled after \(stalledAt) bytes; the client holds \(got.heldBytes)")

        // Subscribing resumes reading: every byte arrives, in order.
        var received = 0
        var mismatch: Int?
        var completed = false
        let reading = got.body.subscribe(
            next: { chunk in
                for (i, byte) in chunk.enumerated() where mismatch == nil && Int(byte) != (received + i) % 251 { mismatch = received + i }
                received += chunk.count
            },
            error: { failure = $0 },
            completed: { completed = true })
        // Bounded on progress, not on the whole: under ThreadSanitizer on a loaded machine the
        // 32 MiB (and this test's byte-by-byte check) took longer than 120 s.
        var lastCount = -1
        var stalledSince = Date()
        while !completed && failure == nil && Date().timeIntervalSince(stalledSince) < 60 {
            _ = loop.run(until: { completed || failure != nil }, timeout: 2)
            if received != lastCount {
                lastCount = received
                stalledSince = Date()
            }
        }
        XCTAssertTrue(completed || failure != nil, "the body ended (no byte for 60 s after \(received))")
        XCTAssertNil(failure)
        XCTAssertEqual(received, total)
        XCTAssertNil(mismatch, "byte \(mismatch ?? -1) is not the one sent there")
        XCTAssertTrue(loop.run(until: { server.line("SENT") != nil }, timeout: 60), server.output)
        XCTAssertEqual(server.line("SENT"), String(total))

        reading.dispose()
        asking.dispose()
        client.close()
        XCTAssertTrue(loop.run(until: { server.finished }, timeout: 60), "the server saw the client close")
        server.stop()
        wsAssertLoopCleanAndClose(loop)
    }

    func testAResponseDroppedUnreadWhilePausedClosesItsConnection() throws {
        let loop = try EventLoop()
        let server = wsRunPython(Self.pythonServer, [String(32 << 20)], on: loop)
        XCTAssertTrue(loop.run(until: { server.line("PORT") != nil || server.finished }, timeout: 60), server.output)
        let port = try XCTUnwrap(server.line("PORT"))
        let client = HTTPClient(on: loop)
        var response: HTTPResponse?
        let asking = client.request("GET", "http://127.0.0.1:\(port)/big").subscribe(next: { response = $0 })
        XCTAssertTrue(loop.run(until: { response != nil }, timeout: 60), "the head arrived")
        XCTAssertTrue(loop.run(until: { server.line("STALLED") != nil || server.finished }, timeout: 120), server.output)
        // The application lets go of the response without reading it: the connection (held
        // by nothing else while paused) must close, not stay paused forever.
        response = nil
        asking.dispose()
        XCTAssertTrue(loop.run(until: { server.finished }, timeout: 60), "the server saw the connection close: \(server.output)")
        XCTAssertNil(server.line("SENT"))
        client.close()
        server.stop()
        wsAssertLoopCleanAndClose(loop)
    }
}

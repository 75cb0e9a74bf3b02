import CSystemShims
import Foundation
import Glibc
import XCTest

@testable import ReactiveUV
@testable import ReactiveUVHTTP

/// Backpressure, graceful shutdown, the memory of idle connections, and the Unix-socket
/// transport (TLS is in ReactiveUVHTTPSTests).
final class HTTPServerLifecycleTests: XCTestCase {
    func testALargeUploadToALateSubscriberIsHeldWithinTheBufferBound() throws {
        var options = HTTPServerOptions()
        options.maxBodyBytes = 64 << 20
        options.bodyBufferBytes = 64 * 1024
        let held = Guarded(0)
        let server = try HTTPTestServer(options: options) { request in
            let state = request.connection.server
            // Nobody takes the body for half a second: reading must pause meanwhile.
            _ = request.loop.scheduler.afterDelay(0.5) {
                var count = 0
                request.body.subscribe(
                    next: { count += $0.count },
                    completed: {
                        held.update { $0 = state.maxBodyBytesHeld }
                        request.respond(text: "\(count)")
                    })
            }
        }
        let size = 16 << 20
        let script = """
            import socket, sys
            s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=60)
            n = int(sys.argv[2])
            s.sendall(b"POST /upload HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\nContent-Length: %d\\r\\n\\r\\n" % n)
            block = b"u" * 65536
            sent = 0
            while sent < n:
                s.sendall(block)
                sent += len(block)
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk: break
                data += chunk
            print(data.split(b"\\r\\n\\r\\n", 1)[1].decode())
            """
        let r = try runProgram(["python3", "-c", script, String(server.port), String(size)])
        XCTAssertEqual(r.status, 0, r.err)
        XCTAssertEqual(r.out.trimmingCharacters(in: .whitespacesAndNewlines), String(size))
        // The bound: the buffer plus at most one read (64 KiB) that crossed it.
        XCTAssertGreaterThan(held.value, 0)
        XCTAssertLessThanOrEqual(held.value, 64 * 1024 + 65536, "body bytes held while nobody subscribed")
        print("HTTP backpressure: at most \(held.value) body bytes held for a late subscriber of a \(size)-byte upload")
        server.stop()
    }

    func testAnAnswerToAClientThatResetMeanwhileIsDroppedAndTheServerServesOn() throws {
        // The application keeps the request and answers after its client reset the
        // connection (the connection is closed and gone by then): the answer goes nowhere,
        // and the server neither crashes nor stops serving.
        let held = Guarded<[HTTPRequest]>([])
        let answered = Guarded<[Bool]>([])
        let server = try HTTPTestServer { request in
            guard request.path == "/late" else { return HTTPTestApp.handle(request) }
            held.update { $0.append(request) }
        }
        for _ in 0..<3 {
            let client = try RawClient(port: server.port)
            client.send("GET /late HTTP/1.1\r\nHost: x\r\n\r\n")
            let count = held.value.count
            XCTAssertTrue(waitFor { held.value.count == count + 1 })
            client.reset()
        }
        // Every connection closed on the server's side (only the listener is left) before
        // the answers are given.
        XCTAssertTrue(waitFor { server.sync { httpTCPHandleCount(server.loop) } == 1 }, "the reset connections closed")
        let requests = held.update { all -> [HTTPRequest] in
            defer { all = [] }
            return all
        }
        server.sync {
            for request in requests { answered.update { $0.append(request.respond(text: "too late")) } }
        }
        XCTAssertEqual(answered.value.count, 3)
        let next = try RawClient(port: server.port)
        next.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertTrue(next.read(until: "Hello, World!").hasSuffix("Hello, World!"), "the server serves on")
        server.stop()
    }

    func testAConnectionClosedFromInsideItsRequestsDeliveryStaysSoundThroughIt() throws {
        // The server sends each request to its subscriber and answers it without retaining
        // the subscriber, the loop or the request's connection state around those calls
        // (`HTTPServerConnection.head`, `HTTPRequest.onLoopThread`), on the ground that the
        // parse under way holds the connection and it holds the rest. Here the handler
        // closes the connection from inside the delivery, which empties its queue, drops
        // its current request and takes it out of the server's table, and then answers and
        // reads the request: every one of those calls must still find live objects (a
        // freed one would crash here or under the sanitizers), and the requests pipelined
        // behind it in the same read are never delivered.
        let delivered = Guarded<[String]>([])
        let answers = Guarded<[[Bool]]>([])
        let server = try HTTPTestServer { request in
            guard request.path == "/close-inside" else { return HTTPTestApp.handle(request) }
            delivered.update { $0.append(String(request.path)) }
            request.connection.close()
            // Whether the answer counts (the close may end the reading, and the request with
            // it, at once) is not the point; that the call is sound and writes nothing is.
            _ = request.respond(text: "after close")
            answers.update { $0.append([request.method == "GET", request.loop === request.connection.loop]) }
        }
        let client = try RawClient(port: server.port)
        client.send(String(repeating: "GET /close-inside HTTP/1.1\r\nHost: x\r\n\r\n", count: 3))
        let reply = client.readToEnd()
        XCTAssertTrue(reply.ended, "the connection closed")
        XCTAssertFalse(reply.text.contains("after close"), "nothing written after the close: \(reply.text)")
        // The client may see the close before the handler has gone on past it.
        XCTAssertTrue(waitFor { answers.value.count == 1 })
        XCTAssertEqual(answers.value, [[true, true]])
        XCTAssertEqual(delivered.value.count, 1, "requests behind the closing one are not delivered")
        let next = try RawClient(port: server.port)
        next.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertTrue(next.read(until: "Hello, World!").hasSuffix("Hello, World!"), "the server serves on")
        server.stop()
    }

    func testARequestWithoutABodyHasItEndedFromItsDeliveryOnAndTheNextIsReadAfterIt() throws {
        // A request that ends with its head (no Content-Length but 0, not chunked) has its
        // body ended before the application sees it, and is never the connection's
        // request in progress: its body, subscribed during the delivery or later,
        // completes empty at once (no `100 Continue` is sent for it), and the requests
        // pipelined after it, with bodies or without, are read as before.
        let server = try HTTPTestServer { request in
            guard request.path == "/count" else { return HTTPTestApp.handle(request) }
            let answer: ([UInt8]) -> Void = { body in
                let text = String(decoding: body, as: UTF8.self)
                request.respond(text: "\(request.method) \(body.count) \(text);")
            }
            if request.query == "late" {
                _ = request.loop.scheduler.afterDelay(0.05) { request.collectedBody.subscribeNext(answer) }
            } else {
                request.collectedBody.subscribeNext(answer)
            }
        }
        let client = try RawClient(port: server.port)
        let requests: [String] = [
            "GET /count HTTP/1.1\r\nHost: x\r\n\r\n",
            "POST /count HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
            "POST /count HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc",
            "GET /count HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n\r\n",
            "GET /count?late HTTP/1.1\r\nHost: x\r\n\r\n",
            "POST /count HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n",
            "GET /count HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        ]
        client.send(requests.joined())
        let reply = client.readToEnd()
        XCTAssertTrue(reply.ended)
        XCTAssertTrue(reply.text.contains("GET 0 ;"), reply.text)
        XCTAssertFalse(reply.text.contains("100 Continue"), reply.text)
        // Each body starts the part after its head (and ends at its `;`).
        let order = reply.text.components(separatedBy: "\r\n\r\n").compactMap { part -> String? in
            guard !part.hasPrefix("HTTP/"), let end = part.firstIndex(of: ";") else { return nil }
            return String(part[..<end])
        }
        XCTAssertEqual(order, ["GET 0 ", "POST 0 ", "POST 3 abc", "GET 0 ", "GET 0 ", "POST 2 hi", "GET 0 "], reply.text)
        server.stop()
    }

    func testGracefulShutdownFinishesTheRequestInFlightAndClosesIdleConnections() throws {
        let shutdown = Subject<Void>()
        var options = HTTPServerOptions()
        options.shutdown = shutdown
        options.shutdownTimeout = 20
        let inFlight = Guarded(false)
        let server = try HTTPTestServer(options: options) { request in
            guard request.path == "/slow" else { return HTTPTestApp.handle(request) }
            inFlight.update { $0 = true }
            _ = request.loop.scheduler.afterDelay(0.5) { request.respond(text: "finished") }
        }
        let idle = try RawClient(port: server.port)
        idle.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertTrue(idle.read(until: "Hello, World!").hasSuffix("Hello, World!"))
        let busy = try RawClient(port: server.port)
        busy.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertTrue(waitFor { inFlight.value })
        shutdown.sendNext(())
        let idleEnd = idle.readToEnd()
        XCTAssertTrue(idleEnd.ended)
        XCTAssertEqual(idleEnd.text, "", "an idle connection is closed without an answer")
        let answer = busy.readToEnd()
        XCTAssertTrue(answer.ended)
        XCTAssertTrue(answer.text.contains("Connection: close\r\n"), answer.text)
        XCTAssertTrue(answer.text.hasSuffix("finished"), answer.text)
        XCTAssertTrue(waitFor { server.completed.value }, "the request signal completes once drained")
        XCTAssertThrowsError(try RawClient(port: server.port), "no longer listening")
        server.stop()
    }

    func testGracefulShutdownRefusesNewConnectsAtOnceWhileTheRequestInFlightCompletes() throws {
        let shutdown = Subject<Void>()
        var options = HTTPServerOptions()
        options.shutdown = shutdown
        options.shutdownTimeout = 60
        let held = Guarded<HTTPRequest?>(nil)
        let server = try HTTPTestServer(options: options) { request in
            guard request.path == "/held" else { return HTTPTestApp.handle(request) }
            // Answered by the test, once it has seen new connects refused.
            held.update { $0 = request }
        }
        let busy = try RawClient(port: server.port, receiveTimeout: 60)
        busy.send("GET /held HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertTrue(waitFor { held.value != nil }, "the request is in flight")
        shutdown.sendNext(())
        // The listening socket closes at once: a connect is refused by the kernel (before,
        // the draining server went on accepting and closing).
        var lastConnect = "not tried"
        XCTAssertTrue(waitFor(60) {
            do {
                _ = try RawClient(port: server.port)
                lastConnect = "accepted"
                return false
            } catch {
                lastConnect = "\(error)"
                return abs(Int((error as? UVError)?.code ?? 0)) == Int(ECONNREFUSED)
            }
        }, "new connects are refused once shutdown starts (last: \(lastConnect))")
        XCTAssertFalse(server.completed.value, "the request in flight keeps the server draining")
        let request = try XCTUnwrap(held.value)
        XCTAssertTrue(request.respond(text: "finished late"))
        let answer = busy.readToEnd()
        XCTAssertTrue(answer.ended)
        XCTAssertTrue(answer.text.hasPrefix("HTTP/1.1 200 OK\r\n"), answer.text)
        XCTAssertTrue(answer.text.contains("Connection: close\r\n"), answer.text)
        XCTAssertTrue(answer.text.hasSuffix("finished late"), answer.text)
        XCTAssertTrue(waitFor { server.completed.value }, "the request signal completes once drained")
        server.stop()
    }

    func testTenThousandIdleKeepAliveConnectionsCostAtMostFourKiBEach() throws {
        // Under a sanitizer (`make sanitize`) every allocation carries shadow memory and
        // redzones (145 KiB per connection measured under TSan): the figure would measure the
        // sanitizer. The lane still runs every other test of the server.
        if dlsym(nil, "__tsan_init") != nil || dlsym(nil, "__asan_init") != nil {
            throw XCTSkip("memory per connection is not measured under a sanitizer")
        }
        // Both ends live in this process: two descriptors per connection. Raise the soft
        // limit to the hard one (a fresh machine's soft limit is often 1024); with a hard
        // limit too low for 10,000, measure as many as it allows.
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        limit.rlim_cur = limit.rlim_max
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        let count = min(10_000, (Int(clamping: limit.rlim_cur) - 300) / 2)
        XCTAssertGreaterThanOrEqual(count, 1000, "descriptor limit \(limit.rlim_cur) too low to measure")
        var options = HTTPServerOptions()
        options.idleTimeout = 600
        let server = try HTTPTestServer(options: options, handler: HTTPTestApp.handle)
        func rss() -> Int {
            let statm = (try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8)) ?? "0 0"
            return (Int(statm.split(separator: " ")[1]) ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE)))
        }
        func open(_ n: Int) throws -> [RawClient] {
            try (0..<n).map { _ in
                let c = try RawClient(port: server.port)
                c.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                XCTAssertTrue(c.read(until: "Hello, World!").hasSuffix("Hello, World!"))
                return c
            }
        }
        // Warm up allocator and caches, so the measure is of connections, not of first use.
        var warm = try open(200)
        warm.removeAll()
        XCTAssertTrue(waitFor { server.sync { server.loopConnections() } == 0 })
        let before = rss()
        let clients = try open(count)
        XCTAssertTrue(waitFor(120) { server.sync { server.loopConnections() } == count })
        let after = rss()
        let perConnection = Double(max(0, after - before)) / Double(count)
        print("HTTP idle keep-alive connections: \(String(format: "%.2f", perConnection / 1024)) KiB of RSS each (\(count) connections, \(after - before) bytes in all; client sockets are kernel memory, not RSS)")
        XCTAssertLessThanOrEqual(perConnection, 4 * 1024, "RSS per idle keep-alive connection")
        withExtendedLifetime(clients) {}
        server.stop()
    }

    func testServingOverAUnixSocket() throws {
        let path = "/tmp/ruv-http-\(getpid())-\(csys_monotonic_ns()).sock"
        defer { unlink(path) }
        let server = try HTTPTestServer(listen: { options, loop, onListening in
            HTTP.listen(unixSocket: path, options: options, on: loop, onListening: { _ in onListening(SocketAddress(numericHost: "127.0.0.1", port: 1)!) })
        }, handler: HTTPTestApp.handle)
        let r = try runProgram(["curl", "-s", "--unix-socket", path, "http://localhost/", "http://localhost/stream?n=2"])
        XCTAssertEqual(r.status, 0, r.err)
        XCTAssertEqual(r.out, "Hello, World!chunk 0\nchunk 1\n")
        server.stop()
    }

    func testRoutesMatchMethodAndPathAndCaptureParameters() throws {
        let user = HTTPRoute("GET", "/users/:id/posts/:post")
        let server = try HTTPTestServer { request in
            if let p = user.match(request) {
                request.respond(text: "user \(p["id"]!) post \(p["post"]!) q=\(request.queryParameter("q") ?? "-")")
            } else {
                request.respond(status: 404, text: "no route")
            }
        }
        let base = "http://127.0.0.1:\(server.port)"
        let r = try runProgram(["curl", "-s", base + "/users/a%20b/posts/7?q=x+y", base + "/users/1", "-X", "GET"])
        XCTAssertEqual(r.out, "user a b post 7 q=x yno route")
        server.stop()
    }
}

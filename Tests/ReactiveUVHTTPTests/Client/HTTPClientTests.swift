import CSystemShims
import Foundation
import Glibc
import XCTest

@testable import ReactiveUV
@testable import ReactiveUVHTTP

/// The client against Python's http.server (a server nobody here wrote) and against ours.
final class HTTPClientTests: XCTestCase {
    /// Python's http.server on port 0, speaking HTTP/1.1 keep-alive, on a process of its own.
    final class PythonServer {
        let process = Process()
        let port: Int

        init() throws {
            let script = """
                import http.server, sys
                class H(http.server.BaseHTTPRequestHandler):
                    protocol_version = "HTTP/1.1"
                    def log_message(self, *a): pass
                    def send(self, status, body, extra=()):
                        self.send_response(status)
                        for k, v in extra: self.send_header(k, v)
                        self.send_header("Content-Length", str(len(body)))
                        self.end_headers()
                        if self.command != "HEAD": self.wfile.write(body)
                    def do_GET(self):
                        if self.path == "/peer":
                            self.send(200, str(self.client_address[1]).encode())
                        elif self.path == "/redirect":
                            self.send(302, b"moved", [("Location", "/peer")])
                        elif self.path == "/chunked":
                            self.send_response(200)
                            self.send_header("Transfer-Encoding", "chunked")
                            self.end_headers()
                            for part in [b"py", b"thon", b" chunks"]:
                                self.wfile.write(b"%x\\r\\n%s\\r\\n" % (len(part), part))
                            self.wfile.write(b"0\\r\\nX-Trailer: t\\r\\n\\r\\n")
                        else:
                            self.send(404, b"no")
                    do_HEAD = do_GET
                    def do_POST(self):
                        body = self.rfile.read(int(self.headers["Content-Length"]))
                        self.send(201, body[::-1], [("Content-Type", self.headers.get("Content-Type", ""))])
                s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
                print(s.server_address[1], flush=True)
                s.serve_forever()
                """
            let out = Pipe()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["python3", "-c", script]
            process.standardOutput = out
            try process.run()
            var line = Data()
            while !line.contains(10) {
                let byte = out.fileHandleForReading.readData(ofLength: 1)
                if byte.isEmpty { break }
                line.append(byte)
            }
            guard let port = Int(String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) else {
                process.terminate()
                throw UVError(code: EIO, operation: "python http.server did not start")
            }
            self.port = port
        }

        func stop() {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// The text of one response, waited for on this (non-loop) thread.
    private func fetch(_ client: HTTPClient, _ url: String, method: String = "GET", headers: HTTPHeaders = [:], body: [UInt8] = []) throws -> (HTTPResponse, String) {
        let result = try client.request(method, url, headers: headers, body: body)
            .flattenMap { response in response.text.map { (response, $0) } }
            .timeout(30, on: client.loop.scheduler)
            .first()
        return try XCTUnwrap(result)
    }

    func testAgainstPythonsServerKeepAliveRedirectsChunksHeadAndPost() throws {
        let python = try PythonServer()
        defer { python.stop() }
        let loopThread = try HTTPTestServer(handler: HTTPTestApp.handle)
        var options = HTTPClientOptions()
        options.followRedirects = true
        let client = HTTPClient(options: options, on: loopThread.loop)
        let base = "http://127.0.0.1:\(python.port)"
        let peers = try (0..<3).map { _ in try fetch(client, base + "/peer").1 }
        XCTAssertEqual(Set(peers).count, 1, "one pooled keep-alive connection serves all three: \(peers)")
        let (redirected, peer) = try fetch(client, base + "/redirect")
        XCTAssertEqual(redirected.status, 200)
        XCTAssertEqual(peer, peers[0], "the redirect and its target on the same connection")
        let (chunked, text) = try fetch(client, base + "/chunked")
        XCTAssertEqual(chunked.status, 200)
        XCTAssertEqual(text, "python chunks")
        let (head, headBody) = try fetch(client, base + "/peer", method: "HEAD")
        XCTAssertEqual(head.status, 200)
        XCTAssertEqual(headBody, "")
        let (posted, reversed) = try fetch(client, base + "/echo", method: "POST", headers: ["Content-Type": "text/x-test"], body: Array("stressed".utf8))
        XCTAssertEqual(posted.status, 201)
        XCTAssertEqual(posted.headers["content-type"], "text/x-test")
        XCTAssertEqual(reversed, "desserts")
        XCTAssertEqual(try fetch(client, base + "/peer").1, peers[0], "still the same connection after HEAD and POST")
        client.close()
        loopThread.stop()
    }

    /// ReactiveUVHTTP has no TLS (ReactiveUVHTTPS does): an https:// URL fails with an
    /// error naming the product, makes no connection, and leaves the pool as it was.
    func testHTTPSWithoutASecureConnectorFailsNamingReactiveUVHTTPS() throws {
        let server = try HTTPTestServer(handler: HTTPTestApp.handle)
        let client = HTTPClient(on: server.loop)
        XCTAssertNil(client.options.secureConnector)
        for _ in 0..<2 {
            XCTAssertThrowsError(try client.request("GET", "https://127.0.0.1:\(server.port)/").timeout(30, on: server.loop.scheduler).first()) { error in
                XCTAssertEqual(error as? HTTPClientError, .secureConnectorMissing("https://127.0.0.1:\(server.port)"))
                XCTAssertTrue("\(error)".contains("import ReactiveUVHTTPS"), "\(error)")
            }
        }
        XCTAssertTrue(server.sync { client.poolCounts == (0, 0, 0) }, "no connection counted as open")
        // The same client still speaks plain HTTP to the same server.
        XCTAssertEqual(try fetch(client, "http://127.0.0.1:\(server.port)/").1, "Hello, World!")
        client.close()
        server.stop()
    }

    func testHTTPRequestUsesTheLoopsSharedClient() throws {
        let server = try HTTPTestServer(handler: HTTPTestApp.handle)
        let url = "http://127.0.0.1:\(server.port)/echo"
        let text = try HTTP.request("POST", url, headers: ["Content-Type": "text/plain"], body: Array("shared".utf8), on: server.loop)
            .flattenMap { $0.text }
            .timeout(30, on: server.loop.scheduler)
            .first()
        XCTAssertEqual(text, "shared")
        XCTAssertTrue(HTTP.sharedClient(server.loop) === HTTP.sharedClient(server.loop))
        var strong: HTTPClient? = HTTP.sharedClient(server.loop)
        weak let shared = strong
        strong = nil
        XCTAssertNotNil(shared, "the map keeps it while the loop is open")
        // Stopping the server ends the pooled connection from its side; the check at the
        // end of stop() waits for the client's handle to close too.
        server.stop()
        // The loop is closed: its shared client went with it (it was kept for the process's
        // life, and LeakSanitizer saw it through the weak-reference side table).
        XCTAssertNil(shared, "the closed loop's shared client is freed")
        XCTAssertFalse(HTTP.sharedClients.withLock { $0.keys.contains(ObjectIdentifier(server.loop)) })
        // A closed loop gets a client that is not kept.
        _ = HTTP.sharedClient(server.loop)
        XCTAssertFalse(HTTP.sharedClients.withLock { $0.keys.contains(ObjectIdentifier(server.loop)) })
    }

    func testBadURLsAndHeadersFailClearly() throws {
        let client = HTTPClient()
        XCTAssertThrowsError(try client.request("GET", "ftp://x/").first()) { XCTAssertEqual($0 as? HTTPClientError, .invalidURL("ftp://x/")) }
        XCTAssertThrowsError(try client.request("GET", "http://:80/").first())
        XCTAssertThrowsError(try client.request("GET", "http://127.0.0.1:1/", headers: ["X": "a\r\nb"]).first()) {
            XCTAssertEqual($0 as? HTTPClientError, .invalidHeader(name: "X"))
        }
    }

    func testAgainstOurServerPoolBoundTimeoutAndEventStream() throws {
        let peers = Guarded<Set<String>>([])
        let server = try HTTPTestServer { request in
            peers.update { _ = $0.insert(request.peer) }
            switch request.path {
            case "/hang":
                break  // never answered
            case "/events":
                request.respond(events: Signal.fromArray([1, 2, 3]), retry: 100, heartbeat: 0) { ServerSentEvent(data: "n=\($0)", id: "\($0)") }
            default:
                _ = request.loop.scheduler.afterDelay(0.02) { request.respond(text: "ok") }
            }
        }
        var options = HTTPClientOptions()
        options.maxConnectionsPerHost = 2
        options.responseTimeout = 0.5
        let client = HTTPClient(options: options, on: server.loop)
        let base = "http://127.0.0.1:\(server.port)"
        let all = try Signal.merge((0..<20).map { _ in client.request("GET", base + "/").flattenMap { $0.text } })
            .collect()
            .timeout(60, on: server.loop.scheduler)
            .first()
        XCTAssertEqual(all, Array(repeating: "ok", count: 20))
        XCTAssertLessThanOrEqual(peers.value.count, 2, "at most two connections to one host: \(peers.value)")
        XCTAssertThrowsError(try client.request("GET", base + "/hang").first()) { XCTAssertEqual($0 as? HTTPClientError, .timedOut) }
        let events = try client.events(base + "/events").collect().timeout(30, on: server.loop.scheduler).first()
        XCTAssertEqual(events, [ServerSentEvent(data: "n=1", id: "1"), ServerSentEvent(data: "n=2", id: "2"), ServerSentEvent(data: "n=3", id: "3")])
        client.close()
        server.stop()
    }

    func testAConnectionTheServerClosedWhileIdleIsNotReusedAndARefusedConnectFails() throws {
        var serverOptions = HTTPServerOptions()
        serverOptions.idleTimeout = 0.3
        let server = try HTTPTestServer(options: serverOptions, handler: HTTPTestApp.handle)
        let client = HTTPClient(on: server.loop)
        let base = "http://127.0.0.1:\(server.port)"
        XCTAssertEqual(try fetch(client, base + "/").1, "Hello, World!")
        // The server closes the pooled connection when it has been idle 0.3 s.
        XCTAssertTrue(waitFor { server.sync { server.loopConnections() } == 0 })
        XCTAssertEqual(try fetch(client, base + "/").1, "Hello, World!", "a fresh connection, not the closed one")
        XCTAssertEqual(server.requests.value, ["GET /", "GET /"])
        // A port nobody listens on: refused (a UVError), not a hang.
        XCTAssertThrowsError(try client.request("GET", "http://127.0.0.1:1/").timeout(30, on: server.loop.scheduler).first()) {
            XCTAssertTrue($0 is UVError, "\($0)")
        }
        client.close()
        server.stop()
    }
}

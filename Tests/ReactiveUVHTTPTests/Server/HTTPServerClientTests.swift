import Foundation
import XCTest

@testable import ReactiveUVHTTP

/// The server against clients nobody here wrote: curl and Python's http.client.
final class HTTPServerClientTests: XCTestCase {
    private func url(_ server: HTTPTestServer, _ path: String) -> String { "http://127.0.0.1:\(server.port)\(path)" }

    func testCurlKeepsOneConnectionAcrossSeveralURLs() throws {
        let server = try HTTPTestServer(handler: HTTPTestApp.handle)
        let r = try runProgram(["curl", "-sv", url(server, "/"), url(server, "/stream?n=3"), url(server, "/missing")])
        XCTAssertEqual(r.status, 0, r.err)
        XCTAssertEqual(r.out, "Hello, World!chunk 0\nchunk 1\nchunk 2\nnot found")
        XCTAssertEqual(r.err.occurrences(of: "Re-using existing connection"), 2, r.err)
        XCTAssertTrue(r.err.contains("< Transfer-Encoding: chunked"), r.err)
        XCTAssertTrue(r.err.contains("HTTP/1.1 404 Not Found"), r.err)
        XCTAssertEqual(server.requests.value, ["GET /", "GET /stream?n=3", "GET /missing"])
        server.stop()
    }

    func testCurlChunkedUploadIsEchoed() throws {
        let server = try HTTPTestServer(handler: HTTPTestApp.handle)
        let payload = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        let r = try runProgram(["curl", "-sv", "-H", "Transfer-Encoding: chunked", "-H", "Content-Type: application/octet-stream",
                         "--data-binary", "@-", url(server, "/echo")], stdin: payload)
        XCTAssertEqual(r.status, 0, r.err)
        XCTAssertTrue(r.err.contains("> Transfer-Encoding: chunked"), r.err)
        XCTAssertTrue(r.err.contains("< Content-Type: application/octet-stream"), r.err)
        XCTAssertEqual(Data(r.out.utf8).count > 0, true)
        let echoed = try runProgram(["sh", "-c", "head -c 300000 /dev/zero | curl -s -H 'Transfer-Encoding: chunked' --data-binary @- \(url(server, "/echo")) | wc -c"])
        XCTAssertEqual(echoed.out.trimmingCharacters(in: .whitespacesAndNewlines), "300000")
        server.stop()
    }

    func testCurlGets100ContinueBeforeSendingItsBody() throws {
        let server = try HTTPTestServer(handler: HTTPTestApp.handle)
        // A long --expect100-timeout: the body goes only because our 100 came.
        let r = try runProgram(["curl", "-sv", "--expect100-timeout", "60", "-H", "Expect: 100-continue",
                         "--data-binary", "expected body", url(server, "/echo")])
        XCTAssertEqual(r.status, 0, r.err)
        XCTAssertTrue(r.err.contains("HTTP/1.1 100 Continue"), r.err)
        XCTAssertEqual(r.out, "expected body")
        server.stop()
    }

    func testCurlHeadGetsTheHeadWithoutTheBody() throws {
        let server = try HTTPTestServer(handler: HTTPTestApp.handle)
        let r = try runProgram(["curl", "-sI", url(server, "/")])
        XCTAssertEqual(r.status, 0, r.err)
        XCTAssertTrue(r.out.hasPrefix("HTTP/1.1 200 OK\r\n"), r.out)
        XCTAssertTrue(r.out.contains("Content-Length: 13\r\n"), r.out)
        XCTAssertTrue(r.out.hasSuffix("\r\n\r\n"), r.out)
        // HEAD then GET on one connection: nothing of a body follows the HEAD answer.
        let client = try RawClient(port: server.port)
        client.send("HEAD / HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let both = client.readToEnd()
        XCTAssertTrue(both.ended)
        XCTAssertEqual(both.text.occurrences(of: "HTTP/1.1 200 OK"), 2, both.text)
        XCTAssertEqual(both.text.occurrences(of: "Hello, World!"), 1, both.text)
        XCTAssertTrue(both.text.hasSuffix("\r\n\r\nHello, World!"), both.text)
        server.stop()
    }

    func testHeadOnAStreamedResponseCarriesTheFramingTheGetWouldWithoutTheBody() throws {
        let server = try HTTPTestServer(handler: HTTPTestApp.handle)
        // curl reads a HEAD answer's head only: with Transfer-Encoding it must not wait for chunks.
        let r = try runProgram(["curl", "-sI", "--max-time", "30", url(server, "/stream?n=3")])
        XCTAssertEqual(r.status, 0, r.err)
        XCTAssertTrue(r.out.hasPrefix("HTTP/1.1 200 OK\r\n"), r.out)
        XCTAssertTrue(r.out.contains("Transfer-Encoding: chunked\r\n"), r.out)
        XCTAssertFalse(r.out.contains("Content-Length"), r.out)
        XCTAssertFalse(r.out.contains("chunk 0"), r.out)
        // HEAD then GET on one connection: the HEAD answer ends at its blank line (no chunk,
        // no last-chunk), and the GET's chunked body follows whole.
        let client = try RawClient(port: server.port)
        client.send("HEAD /stream?n=3 HTTP/1.1\r\nHost: x\r\n\r\nGET /stream?n=2 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let both = client.readToEnd()
        XCTAssertTrue(both.ended)
        XCTAssertEqual(both.text.occurrences(of: "HTTP/1.1 200 OK"), 2, both.text)
        XCTAssertEqual(both.text.occurrences(of: "Transfer-Encoding: chunked\r\n"), 2, both.text)
        XCTAssertEqual(both.text.occurrences(of: "chunk 0"), 1, both.text)
        XCTAssertFalse(both.text.contains("chunk 2"), both.text)
        XCTAssertEqual(both.text.occurrences(of: "0\r\n\r\n"), 1, "one last-chunk, the GET's: \(both.text)")
        XCTAssertTrue(both.text.hasSuffix("\r\n\r\n8\r\nchunk 0\n\r\n8\r\nchunk 1\n\r\n0\r\n\r\n"), both.text)
        server.stop()
    }

    func testHTTP10ClientsGetCloseDelimitedStreamsNeverChunked() throws {
        let server = try HTTPTestServer(handler: HTTPTestApp.handle)
        let r = try runProgram(["curl", "-s", "-i", "--http1.0", url(server, "/stream?n=3")])
        XCTAssertEqual(r.status, 0, r.err)
        XCTAssertFalse(r.out.contains("Transfer-Encoding"), r.out)
        XCTAssertTrue(r.out.contains("Connection: close\r\n"), r.out)
        XCTAssertTrue(r.out.hasSuffix("\r\n\r\nchunk 0\nchunk 1\nchunk 2\n"), r.out)
        server.stop()
    }

    func testPythonHTTPClientKeepAliveAndRawPipelining() throws {
        let server = try HTTPTestServer(handler: HTTPTestApp.handle)
        let script = """
            import http.client, socket, sys
            port = int(sys.argv[1])
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
            out = []
            for path in ["/", "/stream?n=2"]:
                c.request("GET", path)
                r = c.getresponse()
                out.append("%d %s %r" % (r.status, r.getheader("Connection"), r.read()))
            c.request("POST", "/echo", body=b"py-body", headers={"Content-Type": "x/y"})
            r = c.getresponse()
            out.append("%d %s %r" % (r.status, r.getheader("Content-Type"), r.read()))
            sock = c.sock.getsockname()
            c.close()
            s = socket.create_connection(("127.0.0.1", port), timeout=20)
            s.sendall(b"GET /stream?n=1 HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n"
                      b"POST /echo HTTP/1.1\\r\\nHost: x\\r\\nContent-Length: 3\\r\\n\\r\\nabc"
                      b"GET / HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n")
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk: break
                data += chunk
            out.append(repr(data.count(b"HTTP/1.1 200 OK")))
            out.append(repr(data.index(b"chunk 0") < data.index(b"abc") < data.index(b"Hello, World!")))
            print("\\n".join(out))
            """
        let r = try runProgram(["python3", "-c", script, String(server.port)])
        XCTAssertEqual(r.status, 0, r.err)
        XCTAssertEqual(r.out.split(separator: "\n").map(String.init), [
            "200 keep-alive b'Hello, World!'",
            "200 keep-alive b'chunk 0\\nchunk 1\\n'",
            "200 x/y b'py-body'",
            "3",
            "True",
        ])
        server.stop()
    }

    /// A byte response whose application headers list `close` in `Connection` (here among
    /// another option, in a second `Connection` field) ends the connection after it: it is
    /// written with `Connection: close`, and a request pipelined after it is not answered.
    /// The flush finds the token while it writes the head (`HTTPResponseHead.encode`).
    func testAnApplicationsConnectionCloseEndsTheConnectionAfterItsAnswer() throws {
        let server = try HTTPTestServer { request in
            if request.path == "/bye" {
                request.respond(headers: ["Connection": "x-option", "Connection": " Close "], body: Array("bye".utf8))
            } else {
                request.respond(body: Array("hi".utf8))
            }
        }
        let script = """
            import socket, sys
            s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=20)
            s.sendall(b"GET / HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n"
                      b"GET /bye HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n"
                      b"GET / HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n")
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk: break
                data += chunk
            sys.stdout.write(data.decode())
            """
        let r = try runProgram(["python3", "-c", script, String(server.port)])
        XCTAssertEqual(r.status, 0, r.err)
        let heads = r.out.components(separatedBy: "HTTP/1.1 200 OK").count - 1
        XCTAssertEqual(heads, 2, r.out)
        XCTAssertTrue(r.out.contains("Connection: keep-alive\r\n\r\nhi"), r.out)
        XCTAssertTrue(r.out.contains("Connection: x-option, close\r\n\r\nbye"), r.out)
        XCTAssertTrue(r.out.hasSuffix("bye"), r.out)
        server.stop()
    }
}

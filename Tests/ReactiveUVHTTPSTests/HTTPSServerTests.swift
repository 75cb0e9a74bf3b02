import CSystemShims
import Foundation
import Glibc
import XCTest

@testable import ReactiveUV
@testable import ReactiveUVHTTP
import ReactiveUVHTTPS

/// ReactiveUVHTTPS's `HTTP.listen(certificate:key:)` against curl and Python's http.client
/// (moved from ReactiveUVHTTPTests' lifecycle tests with the product).
final class HTTPSServerTests: XCTestCase {
    func testServingOverTLS() throws {
        let directory = "/tmp/ruv-http-tls-\(getpid())-\(csys_monotonic_ns())"
        defer { _ = try? runProgram(["rm", "-rf", directory]) }
        let made = try runProgram(["sh", "-c", """
            set -e; mkdir -p \(directory); cd \(directory)
            openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout key.pem -out cert.pem \
              -subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1 -days 2 2>/dev/null
            """])
        XCTAssertEqual(made.status, 0, made.err)
        let server = try HTTPTestServer(listen: { options, loop, onListening in
            HTTP.listen(port: 0, certificate: directory + "/cert.pem", key: directory + "/key.pem", options: options, on: loop, onListening: onListening)
        }, handler: HTTPTestApp.handle)
        let url = "https://127.0.0.1:\(server.port)"
        let r = try runProgram(["curl", "-sv", "--cacert", directory + "/cert.pem", url + "/", url + "/stream?n=1"])
        XCTAssertEqual(r.status, 0, r.err)
        XCTAssertEqual(r.out, "Hello, World!chunk 0\n")
        // Keep-alive over TLS, checked with Python's http.client: both requests on one
        // connection, and nothing after a response but the next one (a stray byte would be
        // read as the next status line; a close, as RemoteDisconnected). Not curl's
        // "Re-using existing connection": curl 7.88 takes a connection with any input
        // waiting as dead and opens another, which under ThreadSanitizer it did in one run
        // of three here, so the line proved nothing either way.
        let keptAlive = try runProgram(["python3", "-c", """
            import http.client, ssl, sys
            context = ssl.create_default_context(cafile=sys.argv[1])
            c = http.client.HTTPSConnection("127.0.0.1", int(sys.argv[2]), context=context, timeout=30)
            bodies, sockets = [], set()
            for path in ["/", "/stream?n=1"]:
                c.request("GET", path)
                sockets.add(id(c.sock))
                r = c.getresponse()
                bodies.append(r.read().decode())
                if r.will_close: print("WILL_CLOSE", path)
            print(len(sockets), repr("".join(bodies)))
            """, directory + "/cert.pem", String(server.port)])
        XCTAssertEqual(keptAlive.status, 0, keptAlive.err)
        XCTAssertEqual(keptAlive.out, "1 'Hello, World!chunk 0\\n'\n", keptAlive.err)
        server.stop()
    }

    func testHEADOverTLSHasTheGETsContentLengthAndNoBody() throws {
        let certificates = try XCTUnwrap(HTTPTestCertificates(), "openssl made the test CA")
        defer { certificates.remove() }
        let server = try HTTPTestServer(listen: { options, loop, onListening in
            HTTP.listen(port: 0, certificate: certificates.server, key: certificates.serverKey, options: options, on: loop, onListening: onListening)
        }, handler: HTTPTestApp.handle)
        let url = "https://localhost:\(server.port)/"
        // HEAD, then GET on the same connection (`--next` keeps curl's connection pool): a
        // body after the HEAD's head would be read as the GET's answer.
        let r = try runProgram(["curl", "-sv", "--cacert", certificates.ca, "-I", url, "--next", "--cacert", certificates.ca, url])
        XCTAssertEqual(r.status, 0, r.err)
        let lines = r.out.components(separatedBy: "\r\n")
        XCTAssertEqual(lines.first, "HTTP/1.1 200 OK", r.out)
        XCTAssertTrue(lines.contains("Content-Length: 13"), r.out)
        XCTAssertTrue(r.out.hasSuffix("\r\n\r\nHello, World!"), "the HEAD's head, then the GET's body only: \(r.out)")
        XCTAssertEqual(r.err.occurrences(of: "Re-using existing connection"), 1, r.err)
        server.stop()
    }
}

import Foundation
import Glibc
import XCTest

@testable import ReactiveUV
@testable import ReactiveUVHTTP
import ReactiveUVHTTPS

/// The HTTPS example of the DocC article `HTTPGuide.md` ("HTTPS and wss") and of the
/// `ReactiveUVHTTPS` catalog, as written there (port 0 in place of 8443, the test CA's files
/// in place of `server.pem`, `server.key` and `ca.pem`, the text recorded instead of
/// printed), run against real sockets: it compiles, and it does what the article says.
final class HTTPSArticleExamplesTests: XCTestCase {
    func testTheHTTPSServerAndClientExample() throws {
        let certificates = try XCTUnwrap(HTTPTestCertificates(), "openssl made the test CA")
        defer { certificates.remove() }
        // The example runs as written, on the `loop` it names: a loop thread of the test's.
        let host = try HTTPTestServer { _ in }
        let loop = host.loop!
        let port = Guarded(0)
        let printed = Guarded<[String]>([])
        let disposables = Guarded<[Disposable]>([])
        host.sync {
            let secure = HTTP.listen(port: 0, certificate: certificates.server, key: certificates.serverKey, on: loop,
                                     onListening: { address in port.update { $0 = address.port } })
                .subscribeNext { request in request.respond(text: "Hello, World!") }
            disposables.update { $0.append(secure) }
        }
        XCTAssertTrue(waitFor { port.value != 0 }, "the HTTPS server listens")
        host.sync {
            let client = HTTPClient(options: .https(trust: .certificateAuthorities(path: certificates.ca)), on: loop)
            let fetched = client.request("GET", "https://localhost:\(port.value)/")
                .flattenMap { response in response.text }
                .subscribeNext { text in printed.update { $0.append(text) } }
            disposables.update { $0.append(fetched) }
            disposables.update { $0.append(Disposable { client.close() }) }
        }
        XCTAssertTrue(waitFor { printed.value.count == 1 }, "\(printed.value)")
        XCTAssertEqual(printed.value, ["Hello, World!"])
        // And a client nobody here wrote agrees.
        let curl = try runProgram(["curl", "-s", "--cacert", certificates.ca, "https://localhost:\(port.value)/"])
        XCTAssertEqual(curl.status, 0, curl.err)
        XCTAssertEqual(curl.out, "Hello, World!")
        host.sync { for d in disposables.value { d.dispose() } }
        host.stop()
    }
}

import CSystemShims
import Foundation
import Glibc
import XCTest

@testable import ReactiveUV
@testable import ReactiveUVHTTP
import ReactiveUVHTTPS
import ReactiveUVTLS

/// The client's `https://` through ReactiveUVHTTPS's `TLSHTTPConnector` against our HTTPS
/// server, with certificates from a test CA made by the openssl command.
final class HTTPSClientTests: XCTestCase {
    /// The text of one response, waited for on this (non-loop) thread.
    private func fetch(_ client: HTTPClient, _ url: String) throws -> (HTTPResponse, String) {
        let result = try client.request("GET", url)
            .flattenMap { response in response.text.map { (response, $0) } }
            .timeout(30, on: client.loop.scheduler)
            .first()
        return try XCTUnwrap(result)
    }

    private func httpsServer(_ certificates: HTTPTestCertificates) throws -> HTTPTestServer {
        try HTTPTestServer(listen: { options, loop, onListening in
            HTTP.listen(port: 0, certificate: certificates.server, key: certificates.serverKey, options: options, on: loop, onListening: onListening)
        }, handler: HTTPTestApp.handle)
    }

    func testHTTPSVerifiesTheServerThroughReactiveUVTLS() throws {
        let certificates = try XCTUnwrap(HTTPTestCertificates(), "openssl made the test CA")
        defer { certificates.remove() }
        let server = try httpsServer(certificates)
        let url = "https://localhost:\(server.port)/"
        let client = HTTPClient(options: .https(trust: .certificateAuthorities(path: certificates.ca)), on: server.loop)
        let (response, text) = try fetch(client, url)
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(text, "Hello, World!")
        XCTAssertEqual(try fetch(client, "https://127.0.0.1:\(server.port)/stream?n=2").1, "chunk 0\nchunk 1\n",
                       "the certificate names 127.0.0.1 too")
        // The system's authorities do not know the test CA: refused, as a TLS error.
        let stranger = HTTPClient(options: .https(), on: server.loop)
        XCTAssertThrowsError(try stranger.request("GET", url).timeout(30, on: server.loop.scheduler).first(),
                             "a certificate the system does not trust is refused") { error in
            XCTAssertTrue(error is TLSError, "\(error)")
        }
        client.close()
        stranger.close()
        server.stop()
    }

    func testHTTPRequestWithTrustSpeaksHTTPSAndThePlainOneNamesReactiveUVHTTPS() throws {
        let certificates = try XCTUnwrap(HTTPTestCertificates(), "openssl made the test CA")
        defer { certificates.remove() }
        let server = try httpsServer(certificates)
        let url = "https://localhost:\(server.port)/echo"
        let trust = TLSTrust.certificateAuthorities(path: certificates.ca)
        let echoed = try HTTP.request("POST", url, body: Array("over TLS".utf8), trust: trust, on: server.loop)
            .flattenMap { $0.text }
            .timeout(30, on: server.loop.scheduler)
            .first()
        XCTAssertEqual(echoed, "over TLS")
        // ReactiveUVHTTP's own shared client has no TLS: the same URL fails at once, naming
        // the product that has it, and no connection is made.
        XCTAssertThrowsError(try HTTP.request("GET", url, on: server.loop).timeout(30, on: server.loop.scheduler).first()) { error in
            XCTAssertEqual(error as? HTTPClientError, .secureConnectorMissing("https://localhost:\(server.port)"))
            XCTAssertTrue("\(error)".contains("ReactiveUVHTTPS"), "\(error)")
        }
        server.stop()
    }
}

import Foundation
import XCTest

import ReactiveUV
import ReactiveUVTLS

// ReactiveUVTLS.md's example, run on loopback with a certificate the test makes with the
// openssl command (a self-signed one, which is then its own certificate authority).

/// ReactiveUVTLS.md: a TLS echo server (the article listens on 4433; the test on port 0).
func tlsEchoServer(port: Int, certificate: String, key: String,
                   onListening: @escaping (SocketAddress) -> Void, print: @escaping (String) -> Void) -> Disposable {
    let server = TLS.listen(port: port, certificate: certificate, key: key, onListening: onListening,
                            onHandshakeError: { print("refused: \($0)") })
        .flattenMap { c in c.send(c.reads).then { c.shutdown() }.catchTo(.empty()) }
        .subscribe()
    return server
}

/// ReactiveUVTLS.md: a client that verifies the server against a CA file of your own.
func tlsHello(port: Int, ca: String, print: @escaping (String) -> Void) -> Disposable {
    let client = TLS.connect(host: "127.0.0.1", port: port, serverName: "localhost",
                             trust: .certificateAuthorities(path: ca))
        .flattenMap { c in c.write("hello\n").then { c.lines.take(1) } }
        .subscribe(next: { print($0) }, error: { print("failed: \($0)") })
    return client
}

final class TLSExampleTests: XCTestCase {
    /// Makes `server.pem` (for localhost and 127.0.0.1) and `server.key` in `directory`
    /// with the command the article gives.
    private func makeCertificate(in directory: String) throws {
        let openssl = Process()
        openssl.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        openssl.arguments = ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
                             "-keyout", directory + "/server.key", "-out", directory + "/server.pem", "-days", "2",
                             "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"]
        openssl.standardError = FileHandle.nullDevice
        try openssl.run()
        openssl.waitUntilExit()
        XCTAssertEqual(openssl.terminationStatus, 0, "openssl req")
    }

    func testTheTLSEchoServerAnswersAVerifiedClient() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try makeCertificate(in: directory.path)
        let before = MainLoopHoldings.now
        let printed = Printed()
        var port = 0
        let server = tlsEchoServer(port: 0, certificate: directory.file("server.pem"), key: directory.file("server.key"),
                                   onListening: { port = $0.port }, print: printed.print)
        XCTAssertTrue(runMainLoop { port != 0 })
        let client = tlsHello(port: port, ca: directory.file("server.pem"), print: printed.print)
        XCTAssertTrue(runMainLoop { !printed.lines.isEmpty })
        XCTAssertEqual(printed.lines, ["hello"])

        // A client trusting another authority is refused, and says why.
        let other = try TemporaryDirectory()
        defer { other.remove() }
        try makeCertificate(in: other.path)
        let refused = tlsHello(port: port, ca: other.file("server.pem"), print: printed.print)
        XCTAssertTrue(runMainLoop { printed.lines.count >= 2 })
        XCTAssertTrue(printed.lines.dropFirst().contains { $0.hasPrefix("failed: TLS certificate rejected") }, "\(printed.lines)")
        client.dispose()
        refused.dispose()
        server.dispose()
        assertMainLoopHandlesClosed(since: before)
    }
}

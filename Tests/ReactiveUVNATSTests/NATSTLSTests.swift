import Foundation
import ReactiveUV
import ReactiveUVNATS
import ReactiveUVNATSTestKit
import XCTest

/// `tls://` URLs: a server with a certificate made by `openssl` at test time.
final class NATSTLSTests: NATSTestCase {
    /// Makes a CA and a server certificate for 127.0.0.1 in `dir`; returns false without openssl.
    func makeCertificates(in dir: String) throws -> Bool {
        let openssl = ["/usr/bin/openssl", "/usr/local/bin/openssl"].first { (path: String) in access(path, X_OK) == 0 }
        guard let openssl else { return false }
        func run(_ args: [String]) throws {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: openssl)
            p.arguments = args
            p.currentDirectoryURL = URL(fileURLWithPath: dir)
            p.standardOutput = FileHandle.nullDevice
            p.standardError = FileHandle.nullDevice
            try p.run()
            p.waitUntilExit()
            XCTAssertEqual(p.terminationStatus, 0, "openssl \(args.joined(separator: " "))")
        }
        try run(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=ReactiveUV test CA"])
        try run(["req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1",
                 "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"])
        try run(["x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "server.pem",
                 "-days", "2", "-copy_extensions", "copy"])
        return true
    }

    func testTLSURLConnectsWithTheRightCAAndFailsClearlyWithout() throws {
        var template = Array("/tmp/ruv-nats-tls-XXXXXX".utf8CString)
        let dir = String(cString: template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!)! })
        defer { try? FileManager.default.removeItem(atPath: dir) }
        guard try makeCertificates(in: dir) else { throw XCTSkip("openssl is not installed") }
        let servers = try NATSTestServers(count: 1, extraConfig: "tls { cert_file: \"\(dir)/server.pem\", key_file: \"\(dir)/server.key\" }")
        self.servers = servers
        try servers.startAll()
        let url = "tls://127.0.0.1:\(servers.servers[0].port)"

        var options = NATSOptions()
        options.tls = NATSTLSOptions(caFile: dir + "/ca.pem")
        let connection = try connect([url], options: options)
        XCTAssertTrue(connection.isConnected)
        let received = Box<[String]>([])
        subscriptions.append(connection.subscribe("secure").subscribeNext { received.value.append(String(decoding: $0.payload, as: UTF8.self)) })
        subscriptions.append(connection.publish("secure", payload: Array("over TLS".utf8)).subscribe())
        XCTAssertTrue(waitFor { received.value == ["over TLS"] })

        // Without the CA the server's certificate cannot be verified: a clear error.
        let error = try XCTUnwrap(awaitError(NATS.connect([url], on: loop)) as? NATSError)
        XCTAssertEqual(error.operation, "connect")
        XCTAssertTrue([.tlsError, .noServer].contains(error.status), error.description)
        // A CA file that does not exist is named.
        var missing = NATSOptions()
        missing.tls = NATSTLSOptions(caFile: dir + "/nope.pem")
        let noFile = try XCTUnwrap(awaitError(NATS.connect([url], options: missing, on: loop)) as? NATSError)
        XCTAssertTrue(noFile.description.contains("nope.pem"), noFile.description)
    }
}

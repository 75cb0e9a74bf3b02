import Foundation
import Glibc
import XCTest

/// logcast's syslog sources and TLS clients, end to end: the real binary, `logger(1)` as a
/// syslog sender over UDP and TCP in both formats, raw sockets for what is not syslog, and
/// `openssl s_client` as a TLS client with a CA made at test time.
final class LogcastSyslogTests: LogcastProcessTestCase {
    /// The port logcast printed for its syslog listener of `kind` ("udp" or "tcp").
    func syslogPort(_ p: LogcastProcess, _ kind: String) throws -> Int {
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            if let range = p.output.range(of: "syslog \(kind) on 127\\.0\\.0\\.1:\\d+", options: .regularExpression) {
                return Int(p.output[range].split(separator: ":").last!)!
            }
            usleep(10_000)
        }
        throw HarnessError.timedOut("no syslog \(kind) listener: \(p.output) \(p.errors)")
    }

    /// Runs a command to its end; returns its exit status and standard output.
    @discardableResult
    func run(_ executable: String, _ arguments: [String], input: String? = nil) throws -> (Int32, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        let stdin = Pipe()
        process.standardInput = stdin
        try process.run()
        if let input { stdin.fileHandleForWriting.write(Data(input.utf8)) }
        let data = out.fileHandleForReading.readDataToEndOfFile()
        try? stdin.fileHandleForWriting.close()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    func logger(_ arguments: [String]) throws {
        let (status, _) = try run("/usr/bin/logger", arguments)
        XCTAssertEqual(status, 0, "logger \(arguments)")
    }

    /// Sends one UDP datagram to 127.0.0.1:port from a fresh socket.
    func datagram(_ bytes: [UInt8], to port: Int) {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let sent = withUnsafePointer(to: &addr) { a in
            a.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                bytes.withUnsafeBytes { sendto(fd, $0.baseAddress, bytes.count, 0, sa, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
        XCTAssertEqual(sent, bytes.count)
    }

    /// The `STATS` reply's `name=value` fields.
    func stats(_ client: LineClient) -> [String: String] {
        let reply = client.command("STATS", reply: "STATS").last ?? ""
        var fields: [String: String] = [:]
        for part in reply.split(separator: " ").dropFirst() {
            let kv = part.split(separator: "=", maxSplits: 1)
            if kv.count == 2 { fields[String(kv[0])] = String(kv[1]) }
        }
        return fields
    }

    func testSyslogOverUDPFromLoggerInBothFormatsIsTaggedWithTheSenderAndJunkIsCounted() throws {
        let a = dir + "/a.log"
        appendLines(a, ["x"])
        let server = try start([a, "--listen", "127.0.0.1:0", "--heartbeat", "0", "--syslog-udp", "127.0.0.1:0"])
        let port = try syslogPort(server, "udp")
        let client = try LineClient(port: server.port)
        _ = client.command("GREP", reply: "OK GREP")  // every line; the syslog ones are picked below

        try logger(["-n", "127.0.0.1", "-P", String(port), "-d", "--rfc5424", "-t", "tester", "-p", "local3.warning", "hello 5424"])
        try logger(["-n", "127.0.0.1", "-P", String(port), "-d", "--rfc3164", "-t", "tester", "-i", "hello 3164"])
        datagram(Array("no priority here".utf8), to: port)           // malformed
        datagram([], to: port)                                        // a bad datagram
        datagram(Array("<999>1 - - - - - - out of range".utf8), to: port)  // malformed
        datagram(Array("<13>1 2026-11-23T10:00:00Z host app 77 ID47 [ex@32473 a=\"x\\\"]\"] after sd\n".utf8), to: port)

        let lines = client.readLines { $0.filter { $0.hasPrefix("syslog ") }.count >= 3 }.filter { $0.hasPrefix("syslog ") }
        XCTAssertEqual(lines.count, 3, "\(lines)\n\(server.errors)")
        guard lines.count == 3 else { return }
        XCTAssertTrue(lines[0].hasPrefix("syslog 127.0.0.1: local3.warning "), lines[0])
        XCTAssertTrue(lines[0].hasSuffix(" tester: hello 5424"), lines[0])
        XCTAssertTrue(lines[1].hasPrefix("syslog 127.0.0.1: user.notice "), lines[1])
        XCTAssertNotNil(lines[1].range(of: #" tester\[\d+\]: hello 3164$"#, options: .regularExpression), lines[1])
        XCTAssertEqual(lines[2], "syslog 127.0.0.1: user.notice host app[77]: after sd")

        let fields = stats(client)
        XCTAssertEqual(fields["syslog_messages"], "3")
        XCTAssertEqual(fields["syslog_malformed"], "2")
        XCTAssertEqual(fields["syslog_bad_datagrams"], "1")
    }

    func testSyslogOverTCPWithBothFramingsAndABrokenSenderThatIsCutOff() throws {
        let server = try start(["--listen", "127.0.0.1:0", "--heartbeat", "0", "--syslog-tcp", "127.0.0.1:0"])
        let port = try syslogPort(server, "tcp")
        let client = try LineClient(port: server.port)
        _ = client.command("GREP", reply: "OK GREP")  // every line; the syslog ones are picked below

        try logger(["-n", "127.0.0.1", "-P", String(port), "-T", "--rfc5424", "-t", "tcp-lf", "one per line"])
        try logger(["-n", "127.0.0.1", "-P", String(port), "-T", "--octet-count", "--rfc5424", "-t", "tcp-oc", "octet counted"])
        // A raw sender: two frames split across writes, a line that is not syslog, then an
        // octet count too large to be a frame (the sender is disconnected).
        let raw = try LineClient(port: port)
        let framed = "<14>1 - rawhost raw - - - first\n"
        raw.send(String(framed.prefix(10)))
        usleep(20_000)
        raw.send(String(framed.dropFirst(10)) + "not syslog at all\n")
        let counted = "<15>1 - rawhost raw - - - second"
        raw.send("\(counted.utf8.count) \(counted)")
        raw.send("99999999 <14>1 too long")
        _ = raw.readLines(timeout: 30) { _ in false }
        XCTAssertTrue(raw.closedByPeer, "a sender whose framing broke is disconnected")

        let lines = client.readLines { $0.filter { $0.hasPrefix("syslog ") }.count >= 4 }.filter { $0.hasPrefix("syslog ") }
        XCTAssertEqual(lines.count, 4, "\(lines)\n\(server.errors)")
        guard lines.count == 4 else { return }
        XCTAssertTrue(lines[0].hasSuffix(" tcp-lf: one per line"), lines[0])
        XCTAssertTrue(lines[1].hasSuffix(" tcp-oc: octet counted"), lines[1])
        XCTAssertEqual(lines[2], "syslog 127.0.0.1: user.info rawhost raw: first")
        XCTAssertEqual(lines[3], "syslog 127.0.0.1: user.debug rawhost raw: second")
        let fields = stats(client)
        XCTAssertEqual(fields["syslog_messages"], "4")
        XCTAssertEqual(fields["syslog_malformed"], "2", "the plain line and the oversized frame")
    }

    /// A CA and a certificate for localhost/127.0.0.1, made with the openssl command.
    func makeCertificates() throws -> (ca: String, cert: String, key: String) {
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try run("/usr/bin/openssl", ["req", "-x509"] + ec + ["-keyout", dir + "/ca.key", "-out", dir + "/ca.pem", "-subj", "/CN=logcast-test-ca", "-days", "2"])
        try run("/usr/bin/openssl", ["req"] + ec + ["-keyout", dir + "/server.key", "-out", dir + "/server.csr", "-subj", "/CN=localhost"])
        try "subjectAltName=DNS:localhost,IP:127.0.0.1\n".write(toFile: dir + "/ext", atomically: true, encoding: .utf8)
        let (status, _) = try run("/usr/bin/openssl", [
            "x509", "-req", "-in", dir + "/server.csr", "-CA", dir + "/ca.pem", "-CAkey", dir + "/ca.key", "-CAcreateserial",
            "-out", dir + "/server.pem", "-days", "2", "-extfile", dir + "/ext",
        ])
        guard status == 0 else { throw HarnessError.socket("openssl x509 failed") }
        return (dir + "/ca.pem", dir + "/server.pem", dir + "/server.key")
    }

    /// Talks to a TLS logcast with `openssl s_client`: sends `commands`, returns what came back.
    func tlsSession(port: Int, ca: String, _ commands: String) throws -> String {
        try run("/usr/bin/openssl", [
            "s_client", "-quiet", "-connect", "127.0.0.1:\(port)", "-servername", "localhost",
            "-CAfile", ca, "-verify_return_error", "-verify_hostname", "localhost",
        ], input: commands).1
    }

    func testClientsAreServedOverTLSAndAPlainTextClientIsRefusedAndCounted() throws {
        let (ca, cert, key) = try makeCertificates()
        let a = dir + "/a.log"
        appendLines(a, ["over tls"])
        let server = try start([a, "--listen", "127.0.0.1:0", "--heartbeat", "0", "--tls-cert", cert, "--tls-key", key])

        // A plain-text client gets no reply: its connection is closed.
        let plain = try LineClient(port: server.port)
        plain.send("STATS\n")
        let plainLines = plain.readLines(timeout: 30) { _ in false }
        XCTAssertTrue(plain.closedByPeer)
        XCTAssertEqual(plainLines, [])

        let reply = try tlsSession(port: server.port, ca: ca, "STATS\nQUIT\n")
        let lines = reply.split(separator: "\n").map(String.init)
        XCTAssertTrue(lines.contains { $0.hasPrefix("STATS lines_read=") && $0.contains(" tls_handshake_failures=1") }, reply)
        XCTAssertEqual(lines.last, "BYE", reply)
    }

    func testBadSyslogAndTLSOptionsAreRefusedAtStart() throws {
        for (arguments, message) in [
            (["--syslog-udp", "127.0.0.1:70000"], "--syslog-udp: port 70000 is out of range"),
            (["--tls-cert", dir + "/missing.pem"], "--tls-cert and --tls-key go together"),
        ] {
            let p = try LogcastProcess(["--listen", "127.0.0.1:0"] + arguments)
            processes.append(p)
            XCTAssertNotNil(p.waitForExit(timeout: 30))
            XCTAssertTrue(p.errors.contains(message), p.errors)
        }
        let p = try LogcastProcess(["--listen", "127.0.0.1:0", "--tls-cert", dir + "/missing.pem", "--tls-key", dir + "/missing.key"])
        processes.append(p)
        XCTAssertEqual(p.waitForExit(timeout: 30), 1)
        XCTAssertTrue(p.errors.contains("cannot serve TLS") && p.errors.contains("missing.pem"), p.errors)
    }
}

import Foundation
import Glibc
import XCTest

/// Who may connect and what they may read (issue 30): a token, TLS client certificates,
/// a Unix socket whose peers are known by uid, an access file, and the refusal to serve a
/// public address to anyone. Real clients: `openssl s_client`, `nc -U` run as `nobody`.
final class LogcastAuthTests: LogcastProcessTestCase {
    /// Runs a command (bounded by `timeout(1)`) with `input` on its standard input; its
    /// exit status and standard output.
    @discardableResult
    func run(_ executable: String, _ arguments: [String], input: String? = nil) throws -> (Int32, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/timeout")
        process.arguments = ["60", executable] + arguments
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

    func write(_ text: String, to path: String, mode: mode_t = 0o600) {
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(text.utf8)))
        chmod(path, mode)
    }

    // MARK: Token

    func testATokenIsAskedForFirstAndAWrongOneOrAnotherCommandIsRefused() throws {
        let log = dir + "/a.log"
        appendLines(log, ["x"])
        write("s3cret-token\n", to: dir + "/token")
        let p = try start([log, "--listen", "127.0.0.1:0", "--heartbeat", "0", "--auth-token-file", dir + "/token"])

        let early = try LineClient(port: p.port)
        XCTAssertEqual(early.command("STATS", reply: "ERR").last, "ERR authentication required: send AUTH <token> first")
        early.readLines(timeout: 30) { _ in false }
        XCTAssertTrue(early.closedByPeer, "a command before AUTH closes the connection")

        let wrong = try LineClient(port: p.port)
        XCTAssertEqual(wrong.command("AUTH s3cret-tokeN", reply: "ERR").last, "ERR authentication failed")
        wrong.readLines(timeout: 30) { _ in false }
        XCTAssertTrue(wrong.closedByPeer, "a wrong token closes the connection")

        let right = try LineClient(port: p.port)
        // Nothing is sent before AUTH: this line is written while it waits.
        appendLines(log, ["before auth"])
        XCTAssertEqual(right.command("AUTH s3cret-token", reply: "OK").last, "OK AUTH token")
        appendLines(log, ["after auth"])
        XCTAssertEqual(right.readLines { !$0.isEmpty }, ["\(log): after auth"])
        XCTAssertTrue(right.command("STATS", reply: "STATS").last?.contains(" refused=2 ") ?? false)

        XCTAssertEqual(occurrences(of: "refused: a command before AUTH", in: p.errors), 1, p.errors)
        XCTAssertEqual(occurrences(of: "refused: wrong token", in: p.errors), 1, p.errors)
        XCTAssertEqual(occurrences(of: "connected as token (AUTH)", in: p.errors), 1, p.errors)
        XCTAssertFalse(p.errors.contains("s3cret"), "the token is never logged")
    }

    func testATokenFileThatIsMissingOrEmptyIsAnErrorAtStart() throws {
        write("\n", to: dir + "/empty")
        for (file, message) in [(dir + "/missing", "No such file"), (dir + "/empty", "the first line must hold the secret")] {
            let (status, out, err) = try runToExit(["--listen", "127.0.0.1:0", "--auth-token-file", file])
            XCTAssertEqual(status, 1)
            XCTAssertTrue(err.hasPrefix("logcast: error: --auth-token-file \(file): ") && err.contains(message), err)
            XCTAssertFalse(out.contains("listening"))
        }
    }

    // MARK: Protected mode

    func testANonLoopbackAddressWithoutAuthenticationIsRefusedUnlessAllowed() throws {
        let log = dir + "/a.log"
        appendLines(log, ["x"])
        let (status, out, err) = try runToExit([log, "--listen", "0.0.0.0:0"])
        XCTAssertEqual(status, 1)
        XCTAssertTrue(err.hasPrefix("logcast: error: --listen 0.0.0.0 is not a loopback address and no client authentication"), err)
        XCTAssertTrue(err.contains("--allow-unauthenticated"), err)
        XCTAssertFalse(out.contains("listening"))
        _ = try start([log, "--listen", "0.0.0.0:0", "--allow-unauthenticated"])
        write("t\n", to: dir + "/token")
        _ = try start([log, "--listen", "0.0.0.0:0", "--auth-token-file", dir + "/token"])
    }

    // MARK: Access file

    func testAClientSeesOnlyTheFilesItMayReadInLinesGrepAndStats() throws {
        let a = dir + "/a.log", b = dir + "/b.log"
        appendLines(a, ["x"])
        appendLines(b, ["x"])
        write("tok\n", to: dir + "/token")
        write("# who: what\ntoken: \(dir)/a*.log\nanonymous: *\n", to: dir + "/access")
        let p = try start([a, b, "--listen", "127.0.0.1:0", "--heartbeat", "0", "--auth-token-file", dir + "/token",
                           "--access-file", dir + "/access"])
        let c = try LineClient(port: p.port)
        XCTAssertEqual(c.command("AUTH tok", reply: "OK").last, "OK AUTH token")
        XCTAssertEqual(c.command("GREP secret|public", reply: "OK").last, "OK GREP secret|public")
        appendLines(b, ["secret 1"])
        appendLines(a, ["public 1"])
        appendLines(b, ["secret 2"])
        appendLines(a, ["public 2"])
        XCTAssertEqual(c.readLines { $0.count >= 2 }, ["\(a): public 1", "\(a): public 2"], "b.log's lines never come")
        let stats = c.command("STATS", reply: "STATS").last ?? ""
        XCTAssertEqual(stats, "STATS lines_sent=2 lines_dropped=0 identity=token", "its own counters, not the daemon's")
        XCTAssertEqual(c.command("LINE \(a)\tforged", reply: "ERR").last, "ERR LINE needs access to every source")
        XCTAssertEqual(c.command("GREP ", reply: "OK").last, "OK GREP ")
        appendLines(b, ["secret 3"])
        appendLines(a, ["last"])
        XCTAssertEqual(c.readLines { !$0.isEmpty }, ["\(a): last"], "unfiltered, still only a.log")
    }

    func testAnAccessFileThatIsWrongIsAnErrorAtStart() throws {
        write("token /var/log/*\n", to: dir + "/access")
        let (status, _, err) = try runToExit(["--listen", "127.0.0.1:0", "--access-file", dir + "/access"])
        XCTAssertEqual(status, 1)
        XCTAssertEqual(err, "logcast: error: --access-file \(dir)/access:1: expected 'IDENTITY: GLOB, GLOB...'\n")
    }

    // MARK: TLS client certificates

    /// A CA, a server certificate for localhost, a client certificate for `alice` from the
    /// CA and one for `mallory` from a CA of her own.
    func makeCertificates() throws -> (ca: String, cert: String, key: String) {
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        for ca in ["ca", "rogue-ca"] {
            try run("/usr/bin/openssl", ["req", "-x509"] + ec + ["-keyout", "\(dir)/\(ca).key", "-out", "\(dir)/\(ca).pem", "-subj", "/CN=\(ca)", "-days", "2"])
        }
        write("subjectAltName=DNS:localhost,IP:127.0.0.1\n", to: dir + "/ext")
        for (name, subject, ca) in [("server", "localhost", "ca"), ("alice", "alice", "ca"), ("mallory", "mallory", "rogue-ca")] {
            try run("/usr/bin/openssl", ["req"] + ec + ["-keyout", "\(dir)/\(name).key", "-out", "\(dir)/\(name).csr", "-subj", "/CN=\(subject)"])
            let (status, _) = try run("/usr/bin/openssl", [
                "x509", "-req", "-in", "\(dir)/\(name).csr", "-CA", "\(dir)/\(ca).pem", "-CAkey", "\(dir)/\(ca).key", "-CAcreateserial",
                "-out", "\(dir)/\(name).pem", "-days", "2"] + (name == "server" ? ["-extfile", dir + "/ext"] : []))
            guard status == 0 else { throw HarnessError.socket("openssl x509 for \(name) failed") }
        }
        return (dir + "/ca.pem", dir + "/server.pem", dir + "/server.key")
    }

    /// `openssl s_client` with `client` (a name of makeCertificates) or no certificate.
    func tlsSession(port: Int, ca: String, client: String?, _ commands: String) throws -> String {
        let identity = client.map { ["-cert", "\(dir)/\($0).pem", "-key", "\(dir)/\($0).key"] } ?? []
        return try run("/usr/bin/openssl", [
            "s_client", "-quiet", "-connect", "127.0.0.1:\(port)", "-servername", "localhost",
            "-CAfile", ca, "-verify_return_error", "-verify_hostname", "localhost",
        ] + identity, input: commands).1
    }

    func testTLSClientsMustPresentACertificateFromTheCAAndItsSubjectIsTheirIdentity() throws {
        let (ca, cert, key) = try makeCertificates()
        let a = dir + "/a.log"
        appendLines(a, ["x"])
        write("cert:CN = alice: \(a)\n", to: dir + "/access")
        let p = try start([a, "--listen", "0.0.0.0:0", "--heartbeat", "0", "--tls-cert", cert, "--tls-key", key,
                           "--tls-client-ca", ca, "--access-file", dir + "/access"])

        let alice = try tlsSession(port: p.port, ca: ca, client: "alice", "STATS\nQUIT\n")
        XCTAssertEqual(alice.split(separator: "\n").map(String.init),
                       ["STATS lines_sent=0 lines_dropped=0 identity=cert:CN = alice", "BYE"], alice)
        XCTAssertEqual(try tlsSession(port: p.port, ca: ca, client: nil, "STATS\nQUIT\n"), "", "no certificate: refused")
        XCTAssertEqual(try tlsSession(port: p.port, ca: ca, client: "mallory", "STATS\nQUIT\n"), "", "another CA's: refused")

        // The CA issued it, but the access file does not name it: refused after the handshake.
        XCTAssertEqual(rename(dir + "/alice.pem", dir + "/alice.keep"), 0)
        try run("/usr/bin/openssl", ["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                                     "-keyout", dir + "/bob.key", "-out", dir + "/bob.csr", "-subj", "/CN=bob"])
        try run("/usr/bin/openssl", ["x509", "-req", "-in", dir + "/bob.csr", "-CA", ca, "-CAkey", dir + "/ca.key",
                                     "-CAcreateserial", "-out", dir + "/bob.pem", "-days", "2"])
        XCTAssertEqual(try tlsSession(port: p.port, ca: ca, client: "bob", "STATS\n"), "ERR not authorized\n")

        XCTAssertEqual(occurrences(of: "connected as cert:CN = alice (TLS client certificate)", in: p.errors), 1, p.errors)
        XCTAssertEqual(occurrences(of: "TLS client refused", in: p.errors), 2, p.errors)
        XCTAssertEqual(occurrences(of: "refused: cert:CN = bob (TLS client certificate) is not in the access file", in: p.errors), 1, p.errors)
    }

    // MARK: Unix socket

    func testUnixSocketPeersAreKnownByUidAndAnotherUserIsRefused() throws {
        guard getuid() == 0 else { throw XCTSkip("running a client as another user (setpriv) needs root") }
        let a = dir + "/a.log"
        appendLines(a, ["x"])
        chmod(dir, 0o755)  // so that nobody can reach the socket
        let socketPath = dir + "/logcast.sock"
        write("uid:0: *\n", to: dir + "/access", mode: 0o644)
        var p = try start([a, "--listen", "127.0.0.1:0", "--heartbeat", "0", "--listen-unix", socketPath,
                           "--unix-mode", "0666", "--access-file", dir + "/access"])
        // The Unix listener starts after the TCP one that `start` waits for.
        XCTAssertTrue(p.waitForOutput("listening on unix socket \(socketPath)"), p.output)
        var info = stat()
        XCTAssertEqual(stat(socketPath, &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o666)

        let (_, mine) = try run("/usr/bin/nc", ["-U", socketPath], input: "STATS\nQUIT\n")
        XCTAssertEqual(mine, "STATS lines_sent=0 lines_dropped=0 identity=uid:0\nBYE\n")
        // It sends nothing: it is refused as it connects, and a command it wrote raced the
        // refusal's close (nc then quit without printing the ERR: 2 runs in 8, with the
        // daemon before issue 35's client changes as after; 10 in 10 pass without it).
        let (_, theirs) = try run("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/nc", "-U", socketPath])
        XCTAssertEqual(theirs, "ERR not authorized\n")
        XCTAssertEqual(occurrences(of: "connected as uid:0 (Unix socket peer", in: p.errors), 1, p.errors)
        XCTAssertEqual(occurrences(of: "refused: uid:65534 (Unix socket peer", in: p.errors), 1, p.errors)
        p.signal(SIGTERM)
        XCTAssertEqual(p.waitForExit(timeout: 30), 0)

        // The default mode, 0600: another user cannot even connect.
        p = try start([a, "--listen", "127.0.0.1:0", "--heartbeat", "0", "--listen-unix", socketPath])
        XCTAssertTrue(p.waitForOutput("listening on unix socket \(socketPath)"), p.output)
        XCTAssertEqual(stat(socketPath, &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o600)
        let (status, none) = try run("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/nc", "-U", socketPath],
                                     input: "STATS\n")
        XCTAssertNotEqual(status, 0)
        XCTAssertEqual(none, "")
    }
}

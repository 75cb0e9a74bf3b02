import Foundation
import Glibc
import XCTest

/// The daemon as a user meets it: options, errors, HELP, files that cannot be tailed, and
/// counters that count lines.
final class LogcastDaemonTests: LogcastProcessTestCase {
    func testVersionPrintsTheVersion() throws {
        let (status, out, _) = try runToExit(["--version"])
        XCTAssertEqual(status, 0)
        XCTAssertTrue(out.hasPrefix("logcast "), out)
        XCTAssertEqual(out.split(separator: "\n").count, 1)
    }

    func testOptionErrorsNameTheOptionAndItsRange() throws {
        let cases: [([String], String)] = [
            (["--listen", "127.0.0.1:99999"], "--listen: port 99999 is out of range 0...65535"),
            (["--listen", "localhost"], "--listen must be HOST:PORT (port 0...65535)"),
            (["--heartbeat=-1"], "--heartbeat must be at least 0 (seconds), got -1"),
            // The same with the value as the next word (it starts with "-", and used to be
            // taken for an option: "Missing value for '--heartbeat'").
            (["--heartbeat", "-1"], "--heartbeat must be at least 0 (seconds), got -1"),
            (["--tick", "0"], "--tick must be more than 0 (seconds), got 0"),
            (["--queue-limit", "0"], "--queue-limit must be at least 1 (bytes), got 0"),
            (["--slow-client", "later"], "--slow-client must be 'drop' or 'disconnect', got 'later'"),
            (["--max-pattern", "0"], "--max-pattern must be in 1...1048576 (bytes), got 0"),
            (["--log-level", "loud"], "--log-level must be one of trace, debug, info, notice, warning, error, critical"),
        ]
        for (arguments, message) in cases {
            let (status, _, err) = try runToExit(arguments)
            XCTAssertEqual(status, 64, "\(arguments): a usage error")
            XCTAssertEqual(occurrences(of: message, in: err), 1, "\(arguments): \(err)")
        }
    }

    func testHelpListsTheOrdinaryOptionsBeforeTheNATSGroup() throws {
        let (status, out, _) = try runToExit(["--help"])
        XCTAssertEqual(status, 0)
        let ordinary = try XCTUnwrap(out.range(of: "FILES, CLIENTS AND FILTERS:"), out)
        let nats = try XCTUnwrap(out.range(of: "NATS JETSTREAM"), out)
        let listen = try XCTUnwrap(out.range(of: "--listen <host:port>"), out)
        let publish = try XCTUnwrap(out.range(of: "--publish <"), out)
        XCTAssertLessThan(ordinary.lowerBound, nats.lowerBound)
        XCTAssertLessThan(listen.lowerBound, publish.lowerBound)
        XCTAssertTrue(ordinary.lowerBound < listen.lowerBound && listen.lowerBound < nats.lowerBound)
        XCTAssertFalse(out.contains("subcommand"), out)
    }

    /// A directory named as a FILE is waited on, as `tail -F` does (issue 30, item 2): a
    /// warning, logcast listens, and once a file replaces the directory its lines arrive.
    func testAFileThatIsADirectoryAtStartIsWaitedOnUntilAFileIsThere() throws {
        let path = dir + "/app.log"
        XCTAssertEqual(mkdir(path, 0o755), 0)
        let p = try LogcastProcess([path, "--listen", "127.0.0.1:0"])
        defer { p.stop() }
        let port = try p.waitUntilListening()
        XCTAssertTrue(p.errors.contains("logcast: warning: \(path) is a directory, not a file; waiting for a readable file there"), p.errors)
        let client = try LineClient(port: port)
        XCTAssertEqual(rmdir(path), 0)
        // Written until the follower (its next look at the path) has found the file.
        var n = 0
        var got: String?
        let deadline = Date().addingTimeInterval(60)
        while got == nil && Date() < deadline {
            appendText(path, "line \(n)\n")
            n += 1
            got = client.readLines(timeout: 0.5) { !$0.isEmpty }.first
        }
        let first = try XCTUnwrap(got, "no line arrived once a file replaced the directory: \(p.errors)")
        XCTAssertTrue(first.hasPrefix("\(path): line "), first)
        XCTAssertTrue(p.process.isRunning)
    }

    func testAFailedStartSaysSoOnceAndRemovesTheDemoLog() throws {
        let first = try start(["--listen", "127.0.0.1:0", "--heartbeat", "0"])
        let (status, out, err) = try runToExit(["--listen", "127.0.0.1:\(first.port)"])
        XCTAssertEqual(status, 1)
        XCTAssertEqual(occurrences(of: "EADDRINUSE", in: err), 1, err)
        XCTAssertEqual(occurrences(of: "logcast: error: cannot listen on 127.0.0.1:\(first.port)", in: err), 1, err)
        let demo = try XCTUnwrap(out.range(of: #"demo log at (\S+)"#, options: .regularExpression).map { String(out[$0].dropFirst(12)) })
        XCTAssertFalse(FileManager.default.fileExists(atPath: demo), "the demo log \(demo) is removed")
    }

    /// A directory put at a followed path is waited on, as `tail -F` waits (issue 30: it used
    /// to end the follow, and logcast with it): logcast keeps serving, says so once, and
    /// follows the file put back there from its first line.
    func testADirectoryAtAFollowedPathIsWaitedOnUntilAFileIsBack() throws {
        let a = dir + "/a.log"
        appendLines(a, ["x"])
        let p = try start([a, "--listen", "127.0.0.1:0", "--heartbeat", "0"])
        let c = try LineClient(port: p.port)
        XCTAssertEqual(c.command("HELP", reply: "OK HELP").last, "OK HELP")
        XCTAssertEqual(unlink(a), 0)
        XCTAssertEqual(mkdir(a, 0o755), 0)
        let deadline = Date().addingTimeInterval(60)
        while !p.errors.contains("is a directory") && Date() < deadline { usleep(20_000) }
        XCTAssertEqual(occurrences(of: "is a directory; cannot follow it", in: p.errors), 1, p.errors)
        XCTAssertTrue(c.command("STATS", reply: "STATS").last?.hasPrefix("STATS ") ?? false, "still serving")
        XCTAssertEqual(rmdir(a), 0)
        appendLines(a, ["back 1", "back 2"])
        let lines = c.readLines { $0.count >= 2 }
        XCTAssertEqual(lines, ["\(a): back 1", "\(a): back 2"])
        XCTAssertFalse(p.errors.contains("no usable file remains"), p.errors)
    }

    func testHelpListsTheProtocol() throws {
        let a = dir + "/a.log"
        appendLines(a, ["x"])
        let p = try start([a, "--listen", "127.0.0.1:0", "--heartbeat", "0"])
        let c = try LineClient(port: p.port)
        let help = c.command("HELP", reply: "OK HELP")
        XCTAssertEqual(help.last, "OK HELP")
        for verb in ["GREP", "PAUSE", "RESUME", "STATS", "HELP", "QUIT", "LINE", "SYNC"] {
            XCTAssertTrue(help.contains { $0.hasPrefix("HELP \(verb) ") }, "\(verb) in \(help)")
        }
        XCTAssertEqual(c.command("HELP me", reply: "ERR").last, "ERR HELP takes no argument")
    }

    func testLogLevelDebugLogsConnections() throws {
        let a = dir + "/a.log"
        appendLines(a, ["x"])
        let p = try start([a, "--listen", "127.0.0.1:0", "--heartbeat", "0", "--log-level", "debug"])
        let c = try LineClient(port: p.port)
        _ = c.command("QUIT", reply: "BYE")
        let deadline = Date().addingTimeInterval(30)
        while !p.errors.contains("ended: BYE") && Date() < deadline { usleep(20_000) }
        XCTAssertTrue(p.errors.contains("connected"), p.errors)
        XCTAssertTrue(p.errors.contains("ended: BYE"), p.errors)
    }

    /// A client that stops reading misses lines; afterwards, what it received plus what
    /// `DROPPED n` says it lost is exactly what was written: both count lines.
    func testDroppedCountsLines() throws {
        let a = dir + "/a.log"
        appendLines(a, ["x"])
        let p = try start([a, "--listen", "127.0.0.1:0", "--heartbeat", "0", "--queue-limit", "65536", "--tick", "0.1"])
        let slow = try LineClient(port: p.port, receiveBuffer: 4096)
        XCTAssertEqual(slow.command("GREP ^line", reply: "OK GREP").last, "OK GREP ^line")
        // The file is followed once a line reaches the client.
        var k = 0
        var got: [String] = []
        while got.isEmpty && k < 300 {
            appendLines(a, ["line-sync-\(k)"])
            k += 1
            got = slow.readLines(timeout: 0.2) { !$0.isEmpty }
        }
        XCTAssertFalse(got.isEmpty)
        let total = 100_000
        let payload = String(repeating: "y", count: 100)
        for batch in 0..<20 { appendLines(a, (batch * 5000..<(batch + 1) * 5000).map { "line-\($0) \(payload)" }) }
        // Wait until the daemon has read them all, then read everything it kept for us.
        let counter = try LineClient(port: p.port)
        _ = counter.command("PAUSE", reply: "OK PAUSE")
        let deadline = Date().addingTimeInterval(120)
        var read = 0
        while read < total + k && Date() < deadline {
            let stats = counter.command("STATS", reply: "STATS").last ?? ""
            read = stats.split(separator: " ").first { $0.hasPrefix("lines_read=") }.map { Int($0.dropFirst(11)) ?? 0 } ?? 0
            if read < total + k { usleep(50_000) }
        }
        var received = 0
        var dropped = 0
        var seen = 0
        _ = slow.readLines(timeout: 120) { lines in
            // `done` may be asked again about lines it has seen: count each line once.
            for line in lines[seen...] {
                if line.hasPrefix("DROPPED ") { dropped = Int(line.dropFirst(8)) ?? -1 } else if line.contains(": line-") && !line.contains("sync") { received += 1 }
            }
            seen = lines.count
            return received + dropped >= total
        }
        XCTAssertGreaterThan(dropped, 0, "the client fell behind")
        XCTAssertEqual(received + dropped, total, "received \(received) + dropped \(dropped)")
        let stats = counter.command("STATS", reply: "STATS").last ?? ""
        XCTAssertTrue(stats.contains("lines_dropped=\(dropped) "), stats)
    }

    /// The follower's notices reach the log: a file appearing, being replaced by a rotation,
    /// truncated, and going missing.
    func testRotationTruncationAppearanceAndDisappearanceAreLogged() throws {
        let a = dir + "/a.log"
        let p = try start([a, "--listen", "127.0.0.1:0", "--heartbeat", "0"])
        let c = try LineClient(port: p.port)
        _ = c.command("GREP ^n", reply: "OK GREP")
        func waitFor(_ text: String) {
            let deadline = Date().addingTimeInterval(60)
            while !p.errors.contains(text) && Date() < deadline { usleep(20_000) }
            XCTAssertTrue(p.errors.contains(text), "\(text) in: \(p.errors)")
        }
        appendLines(a, ["n1"])
        XCTAssertEqual(c.readLines { $0.count >= 1 }, ["\(a): n1"])
        waitFor("'\(a)' has appeared")
        XCTAssertEqual(rename(a, a + ".1"), 0)
        appendLines(a, ["n2"])
        XCTAssertEqual(c.readLines { $0.count >= 1 }, ["\(a): n2"])
        // A rename then a new file: seen as "replaced", or (when the follower looks between
        // the two) as "missing" and then "appeared" again.
        let deadline = Date().addingTimeInterval(60)
        func rotationSeen() -> Bool {
            p.errors.contains("'\(a)' has been replaced") || occurrences(of: "'\(a)' has appeared", in: p.errors) >= 2
        }
        while !rotationSeen() && Date() < deadline { usleep(20_000) }
        XCTAssertTrue(rotationSeen(), p.errors)
        XCTAssertEqual(truncate(a, 0), 0)
        appendLines(a, ["n3"])
        XCTAssertEqual(c.readLines { $0.count >= 1 }, ["\(a): n3"])
        waitFor("\(a): file truncated")
        XCTAssertEqual(unlink(a), 0)
        waitFor("'\(a)' is missing")
    }

    /// With its descriptors used up, logcast says so once and goes on serving the clients it
    /// has (its limit is lowered with prlimit; the daemon never raises its own).
    func testRunningOutOfDescriptorsIsSaidAndTheClientsItHasAreServed() throws {
        let prlimit = "/usr/bin/prlimit"
        guard FileManager.default.isExecutableFile(atPath: prlimit) else { throw XCTSkip("no \(prlimit)") }
        let a = dir + "/a.log"
        appendLines(a, ["x"])
        let p = try LogcastProcess([a, "--listen", "127.0.0.1:0", "--heartbeat", "0", "--tick", "0.1"],
                                   wrapper: [prlimit, "--nofile=48:48"])
        processes.append(p)
        _ = try p.waitUntilListening()
        let first = try LineClient(port: p.port)
        XCTAssertEqual(first.command("GREP ^n", reply: "OK").last, "OK GREP ^n")
        // More clients than descriptors: the kernel completes their handshakes, logcast
        // cannot accept them all.
        var extra: [LineClient] = []
        for _ in 0..<60 { extra.append(try LineClient(port: p.port)) }
        let deadline = Date().addingTimeInterval(60)
        while !p.errors.contains("out of file descriptors") && Date() < deadline { usleep(20_000) }
        XCTAssertTrue(p.errors.contains("out of file descriptors"), p.errors)
        XCTAssertTrue(p.errors.contains("RLIMIT_NOFILE 48"), p.errors)
        XCTAssertEqual(p.errors.components(separatedBy: "out of file descriptors").count - 1, 1, "said once")
        appendLines(a, ["n1"])
        XCTAssertEqual(first.readLines { $0.count >= 1 }, ["\(a): n1"], "the clients it has are served")
        XCTAssertTrue(first.command("STATS", reply: "STATS").last?.hasPrefix("STATS") ?? false)
        extra.removeAll()
    }
}

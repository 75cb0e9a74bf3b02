import Foundation
import Glibc
import XCTest

/// End to end: the real `logcast` binary on loopback, real files, real clients.
final class LogcastTests: LogcastProcessTestCase {
    /// Starts logcast on a one-line `a.log` in the test's directory, listening on any port,
    /// with `options` (by default no heartbeats).
    func startOnOneFile(_ options: [String] = ["--heartbeat", "0"]) throws -> LogcastProcess {
        let a = dir + "/a.log"
        appendLines(a, ["x"])
        return try start([a, "--listen", "127.0.0.1:0"] + options)
    }

    /// Appends `sync` lines to each file until a client filtering on them sees one from
    /// each: from then on the tails are following, and every appended line is delivered.
    func synchronize(_ port: Int, files: [String]) throws {
        let c = try LineClient(port: port)
        _ = c.command("GREP ^sync-", reply: "OK GREP")
        for file in files {
            var k = 0
            var seen = false
            while !seen && k < 300 {
                appendLines(file, ["sync-\(k)"])
                k += 1
                seen = !c.readLines(timeout: 0.2) { $0.contains { $0.hasPrefix(file + ": sync-") } }.isEmpty
            }
            XCTAssertTrue(seen, "the tail of \(file) never started")
        }
        c.send("QUIT\n")
    }

    /// Groups `<file>: <text>` lines by file, keeping their order.
    func byFile(_ lines: [String]) -> [String: [String]] {
        var result: [String: [String]] = [:]
        for line in lines {
            guard let sep = line.range(of: ": ") else { continue }
            result[String(line[..<sep.lowerBound]), default: []].append(String(line[sep.upperBound...]))
        }
        return result
    }

    func testThreeClientsWithDifferentFiltersGetExactlyTheirLinesThroughARotation() throws {
        let a = dir + "/a.log", b = dir + "/b.log"
        appendLines(a, ["before"])
        appendLines(b, ["before"])
        let server = try start([a, b, "--listen", "127.0.0.1:0", "--queue-limit", "268435456", "--heartbeat", "0"])
        try synchronize(server.port, files: [a, b])

        let fizz = try LineClient(port: server.port)
        let onlyB = try LineClient(port: server.port)
        let all = try LineClient(port: server.port)
        _ = fizz.command("GREP fizz$", reply: "OK GREP")
        _ = onlyB.command("GREP ^b-", reply: "OK GREP")
        _ = all.command("GREP", reply: "OK GREP")

        var written: [(file: String, text: String)] = []
        for batch in 0..<50 {
            if batch == 25 { XCTAssertEqual(rename(a, a + ".1"), 0) }  // rotation midway
            var linesA: [String] = [], linesB: [String] = []
            for i in batch * 1000..<(batch + 1) * 1000 {
                let text = "\(i % 2 == 0 ? "a" : "b")-\(i) \(i % 3 == 0 ? "fizz" : "plain")"
                if i % 2 == 0 { linesA.append(text) } else { linesB.append(text) }
            }
            appendLines(a, linesA)
            appendLines(b, linesB)
            written += linesA.map { (a, $0) } + linesB.map { (b, $0) }
        }

        func expected(_ keep: (String) -> Bool) -> [String: [String]] {
            var result: [String: [String]] = [:]
            for (file, text) in written where keep(text) { result[file, default: []].append(text) }
            return result
        }
        for (client, keep, name) in [
            (fizz, { (t: String) in t.hasSuffix("fizz") }, "fizz"),
            (onlyB, { (t: String) in t.hasPrefix("b-") }, "b"),
            (all, { (_: String) in true }, "all"),
        ] {
            let want = expected(keep)
            let count = want.values.reduce(0) { $0 + $1.count }
            var got = client.readLines(timeout: 120) { $0.count >= count }
            got += client.readLines(timeout: 0.5) { _ in false }  // nothing more may follow
            XCTAssertEqual(got.count, count, "\(name): exactly the matching lines")
            // The follower reads the renamed file and the new one each with its own reader
            // (issue 11: the new file at once, the old one to its end), so around the
            // rotation their lines may interleave: each file's lines — those written before
            // the rename (i < 25,000), those after — are in order, and none is lost or
            // duplicated.
            let gotByFile = byFile(got)
            for (file, lines) in want {
                let received = gotByFile[file] ?? []
                let index = { (line: String) in Int(line.dropFirst(2).prefix { $0.isNumber })! }
                XCTAssertEqual(received.filter { index($0) < 25_000 }, lines.filter { index($0) < 25_000 },
                               "\(name), \(file) before the rotation: in order, none lost or duplicated")
                XCTAssertEqual(received.filter { index($0) >= 25_000 }, lines.filter { index($0) >= 25_000 },
                               "\(name), \(file) after the rotation: in order, none lost or duplicated")
            }
            XCTAssertEqual(Set(gotByFile.keys), Set(want.keys))
        }
    }

    func testLargeBlocksScannedByTwoThreadsGiveEachFilteredClientExactlyItsLinesInOrder() throws {
        let a = dir + "/a.log"
        appendLines(a, ["before"])
        let server = try start([a, "--listen", "127.0.0.1:0", "--queue-limit", "268435456", "--heartbeat", "0"])
        try synchronize(server.port, files: [a])
        // Patterns that take most lines, a seventh, none, and an alternation (split into
        // expressions that must report a line once).
        let filters = [("^line-[0-9]*[1-9] ", { (i: Int) in i % 10 != 0 }),
                       ("tag=(0|7)$", { (i: Int) in i % 7 == 0 }),
                       ("never-written", { (_: Int) in false }),
                       ("-1[0-9]* |-2[0-9]* ", { (i: Int) in "\(i)".hasPrefix("1") || "\(i)".hasPrefix("2") })]
        let clients = try filters.map { (pattern, _) -> LineClient in
            let c = try LineClient(port: server.port)
            _ = c.command("GREP \(pattern)", reply: "OK GREP")
            return c
        }
        // 60,000 lines in three writes: the follower reads them in chunks of thousands of
        // lines, so most blocks are past the split size (1,024 lines).
        let total = 60_000
        let text = (0..<total).map { "line-\($0) tag=\($0 % 7)" }
        for part in 0..<3 { appendLines(a, Array(text[part * 20_000..<(part + 1) * 20_000])) }
        for (client, filter) in zip(clients, filters) {
            let want = (0..<total).filter(filter.1).map { a + ": " + text[$0] }
            var got = want.isEmpty ? [] : client.readLines(timeout: 120) { $0.count >= want.count }
            got += client.readLines(timeout: 0.5) { _ in false }  // nothing more may follow
            XCTAssertEqual(got.count, want.count, "\(filter.0): exactly the matching lines")
            XCTAssertTrue(got == want, "\(filter.0): first difference at \(got.indices.first { $0 >= want.count || got[$0] != want[$0] } ?? -1)")
        }
        let stats = try LineClient(port: server.port).command("STATS", reply: "STATS").last ?? ""
        let split = Int(stats.components(separatedBy: " split_scans=").last?.prefix { $0.isNumber } ?? "") ?? 0
        XCTAssertGreaterThan(split, 0, "no block was large enough to be split: \(stats)")
    }

    func testAClientThatChangesItsFilterSeesTheNewFiltersLinesFromThenOn() throws {
        let a = dir + "/a.log"
        appendLines(a, ["before"])
        let server = try start([a, "--listen", "127.0.0.1:0", "--heartbeat", "0"])
        try synchronize(server.port, files: [a])
        let c = try LineClient(port: server.port)
        _ = c.command("GREP red", reply: "OK GREP")
        appendLines(a, ["red 1", "blue 1", "red 2"])
        XCTAssertEqual(c.readLines { $0.count >= 2 }, ["\(a): red 1", "\(a): red 2"])
        _ = c.command("GREP blue", reply: "OK GREP blue")
        appendLines(a, ["red 3", "blue 2", "blue 3"])
        XCTAssertEqual(c.readLines { $0.count >= 2 }, ["\(a): blue 2", "\(a): blue 3"])
        _ = c.command("PAUSE", reply: "OK PAUSE")
        let before = linesRead(c)
        appendLines(a, ["blue 4"])
        // Resume only once the daemon has read the line written during the pause.
        let deadline = Date().addingTimeInterval(30)
        while linesRead(c) <= before && Date() < deadline { usleep(20_000) }
        _ = c.command("RESUME", reply: "OK RESUME")
        appendLines(a, ["blue 5"])
        XCTAssertEqual(c.readLines { $0.count >= 1 }, ["\(a): blue 5"], "lines during PAUSE are skipped")
    }

    /// `lines_read` from a STATS reply (the client must not be expecting log lines).
    func linesRead(_ c: LineClient) -> Int {
        let stats = c.command("STATS", reply: "STATS").last ?? ""
        return stats.split(separator: " ").first { $0.hasPrefix("lines_read=") }.map { Int($0.dropFirst(11)) ?? 0 } ?? 0
    }

    func slowClientRun(policy: String) throws -> (stats: String, fastCount: Int) {
        let a = dir + "/a.log"
        appendLines(a, ["before"])
        let server = try start([a, "--listen", "127.0.0.1:0", "--heartbeat", "0", "--queue-limit", "1048576",
                                "--slow-client", policy, "--tick", "0.1"])
        try synchronize(server.port, files: [a])
        let slow = try LineClient(port: server.port, receiveBuffer: 4096)
        slow.send("GREP\n")  // then never reads
        let fast = try LineClient(port: server.port)
        _ = fast.command("GREP ^line", reply: "OK GREP")
        // Far more than the kernel's socket buffers and the 1 MiB queue can hold for the slow
        // client. The fast client reads each batch before the next is written, so its own
        // queue stays far below the limit however loaded the machine is.
        let payload = String(repeating: "x", count: 200)
        var got: [String] = []
        for batch in 0..<200 {
            appendLines(a, (batch * 500..<(batch + 1) * 500).map { "line-\($0) \(payload)" })
            let already = got.count
            got += fast.readLines(timeout: 60) { already + $0.count >= (batch + 1) * 500 }
        }
        usleep(300_000)  // a few ticks for the drop report / the cut-off
        let stats = fast.command("STATS", reply: "STATS").last ?? ""
        return (stats, got.count)
    }

    func testASlowClientIsDroppedWhileTheOthersGetEverything() throws {
        let (stats, fastCount) = try slowClientRun(policy: "drop")
        XCTAssertEqual(fastCount, 100_000)
        let dropped = stats.split(separator: " ").first { $0.hasPrefix("lines_dropped=") }.map { Int($0.dropFirst(14)) ?? 0 } ?? 0
        XCTAssertGreaterThan(dropped, 0, stats)
        XCTAssertTrue(stats.contains("clients=2"), stats)
    }

    func testASlowClientIsCutOffWhenTheFlagSaysSo() throws {
        let (stats, fastCount) = try slowClientRun(policy: "disconnect")
        XCTAssertEqual(fastCount, 100_000)
        XCTAssertTrue(stats.contains("clients=1"), "the slow client was disconnected: \(stats)")
    }

    func testForwardingToAnUpstreamThatRestartsLosesNothingHeldInTheBuffer() throws {
        // The upstream listens on a port we pick by letting it choose once.
        let upstream = try start(["--listen", "127.0.0.1:0", "--heartbeat", "0"])
        let port = upstream.port
        let file = dir + "/app.log"
        appendLines(file, ["before"])
        setenv("LOGCAST_DEBUG", "1", 1)
        let edge = try start([file, "--listen", "127.0.0.1:0", "--heartbeat", "0", "--forward", "127.0.0.1:\(port)"])
        unsetenv("LOGCAST_DEBUG")
        try synchronize(edge.port, files: [file])

        let watcher = try LineClient(port: port)
        _ = watcher.command("GREP ^fwd-", reply: "OK GREP")
        appendLines(file, (0..<100).map { "fwd-\($0)" })
        XCTAssertEqual(watcher.readLines { $0.count >= 100 }.count, 100, "forwarded while the upstream is up")

        // Stop the upstream; lines written meanwhile wait in the edge's buffer.
        upstream.signal(SIGTERM)
        XCTAssertEqual(upstream.waitForExit(timeout: 10), 0)
        appendLines(file, (100..<1100).map { "fwd-\($0)" })
        usleep(500_000)

        // It follows an empty file (not the demo log a FILE-less logcast makes up), so every
        // line it reads is one the edge forwarded.
        let upstreamLog = dir + "/upstream.log"
        XCTAssertTrue(FileManager.default.createFile(atPath: upstreamLog, contents: nil))
        let restarted = try LogcastProcess([upstreamLog, "--listen", "127.0.0.1:\(port)", "--heartbeat", "0"])
        processes.append(restarted)
        _ = try restarted.waitUntilListening()
        // Every held line reaches the restarted upstream, once: its counter proves it.
        let counter = try LineClient(port: port)
        _ = counter.command("PAUSE", reply: "OK PAUSE")  // replies only, no log lines
        var read = 0
        let deadline = Date().addingTimeInterval(60)
        while read < 1000 && Date() < deadline {
            let stats = counter.command("STATS", reply: "STATS").last ?? ""
            read = stats.split(separator: " ").first { $0.hasPrefix("lines_read=") }.map { Int($0.dropFirst(11)) ?? 0 } ?? 0
            if read < 1000 { usleep(100_000) }
        }
        XCTAssertEqual(read, 1000, "the 1,000 lines held while the upstream was away, no more, no less; edge: \(edge.errors)")
    }

    /// A forwarder's acknowledgement: `SYNC <token>` is answered in order, after the `LINE`s
    /// before it are in the stream (so a client filtering for them has them first).
    func testSyncIsAnsweredAfterTheLinesBeforeIt() throws {
        let server = try startOnOneFile()
        let forwarder = try LineClient(port: server.port)
        XCTAssertEqual(forwarder.command("PAUSE", reply: "OK PAUSE").last, "OK PAUSE")
        let reader = try LineClient(port: server.port)
        _ = reader.command("GREP ^injected-", reply: "OK GREP")
        forwarder.send((0..<50).map { "LINE edge.log\tinjected-\($0)\n" }.joined() + "SYNC 50\n")
        XCTAssertEqual(forwarder.readLines { $0.contains("OK SYNC 50") }.last, "OK SYNC 50", "nothing else comes back to a paused client")
        XCTAssertEqual(reader.readLines { $0.count >= 50 }, (0..<50).map { "edge.log: injected-\($0)" })
        XCTAssertEqual(forwarder.command("SYNC", reply: "ERR").last, "ERR SYNC needs an argument")
    }

    func testSIGTERMEndsTheProcessWithExitZero() throws {
        let server = try startOnOneFile([])
        let c = try LineClient(port: server.port)
        _ = c.command("STATS", reply: "STATS")
        server.signal(SIGTERM)
        // The daemon bounds its own drain to 0.8 s; the wait here is generous for a loaded machine.
        XCTAssertEqual(server.waitForExit(timeout: 10), 0)
        XCTAssertEqual(c.readLines(timeout: 5) { _ in false }, ["BYE shutting down"], "told why")
        XCTAssertTrue(c.closedByPeer, "the client is closed")
    }

    func testBadInputGetsErrAndTheConnectionStaysUp() throws {
        let server = try startOnOneFile()
        let c = try LineClient(port: server.port)
        XCTAssertEqual(c.command("FROB", reply: "ERR").last, "ERR unknown command 'FROB' (try HELP)")
        XCTAssertTrue(c.command("GREP [unclosed", reply: "ERR").last?.hasPrefix("ERR invalid regex") ?? false)
        c.sendBytes(Array(repeating: UInt8(ascii: "a"), count: 1 << 20) + [10])
        XCTAssertEqual(c.readLines { !$0.isEmpty }.last, "ERR command longer than 65536 bytes")
        c.sendBytes([0, 1, 2, 0xFF, 0xFE, 10])
        XCTAssertEqual(c.readLines { !$0.isEmpty }.last, "ERR binary data is not a command")
        XCTAssertTrue(c.command("STATS", reply: "STATS").last?.contains("clients=1") ?? false, "still connected")
        XCTAssertEqual(c.command("QUIT", reply: "BYE").last, "BYE")
    }

    /// A line over the 1 MiB limit in a served file is left out and logged as lost, and the
    /// lines after it are served. The file's follow used to end at it ("no longer followed"):
    /// nothing the file got afterwards reached a client.
    func testALineOverTheLimitIsLeftOutAndTheLinesAfterItAreServed() throws {
        let server = try startOnOneFile()
        let a = dir + "/a.log"
        try synchronize(server.port, files: [a])
        let c = try LineClient(port: server.port)
        _ = c.command("GREP ^after", reply: "OK GREP")
        appendLines(a, [String(repeating: "z", count: 3 << 19), "after 1", "after 2"])
        XCTAssertEqual(c.readLines { $0.count >= 2 }, ["\(a): after 1", "\(a): after 2"])
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline && !server.errors.contains("a line was longer than the limit") { usleep(20_000) }
        XCTAssertTrue(server.errors.contains("a line was longer than the limit"), server.errors)
    }

    func testAMissingFileIsWaitedForAndSaidSoOnStderr() throws {
        let missing = dir + "/later.log"
        let server = try start([missing, "--listen", "127.0.0.1:0", "--heartbeat", "0"])
        XCTAssertTrue(server.errors.contains("does not exist yet; waiting"), server.errors)
        let c = try LineClient(port: server.port)
        _ = c.command("GREP ^hello", reply: "OK GREP")
        appendLines(missing, ["hello 1", "hello 2"])
        XCTAssertEqual(c.readLines { $0.count >= 2 }, ["\(missing): hello 1", "\(missing): hello 2"])
    }
}

import Foundation
import Glibc
import ReactiveUV
import ReactiveUVNATS
import ReactiveUVNATSTestKit
import XCTest

/// The edge (`logcast FILE --publish nats://…`) against real nats-servers: every line,
/// numbered, is counted in the stream; crashes, rotations, leader failover and servers
/// that come late must leave each exactly once.
final class NatsExactlyOnceTests: NatsEdgeTestCase {
    /// Starts an edge on `file` (its state in the test's directory) and waits until it listens.
    func startEdge(_ files: [String], urls: [String], extra: [String] = []) throws -> LogcastProcess {
        let edge = try LogcastProcess(files + [
            "--publish", urls.joined(separator: ","), "--stream", "LOGS", "--subject", "logs.test",
            "--state-dir", directory + "/state", "--listen", "127.0.0.1:0", "--batch-bytes", "16384",
        ] + extra)
        processes.append(edge)
        _ = try edge.waitUntilListening()
        return edge
    }

    func kill9(_ edge: LogcastProcess) {
        edge.signal(SIGKILL)
        XCTAssertNotNil(edge.waitForExit(timeout: 30))
    }

    /// SIGKILLs `edge` at a moment when the stream holds more lines than the edge's saved
    /// positions cover, so the restarted edge must send some batches again and JetStream
    /// must take them as resends. The edge is stopped first (SIGSTOP: its state file cannot
    /// change while the stream only gains lines), the saved offset of `log` compared with
    /// the lines counted in the stream, and the edge continued and tried again while they
    /// are level. Without this, a kill landing right after a save (easy under a sanitizer's
    /// slowdown) left nothing to resend and the test could not see deduplication happen.
    func kill9WithResendsPending(_ edge: LogcastProcess, log: String) {
        let deadline = Date().addingTimeInterval(120)
        while Date() < deadline {
            edge.signal(SIGSTOP)
            let covered = linesCovered(log)
            if EventLoop.main.run(until: { (self.counter?.counts.count ?? 0) > covered }, timeout: 1) {
                kill9(edge)
                return
            }
            edge.signal(SIGCONT)
            _ = EventLoop.main.run(until: { false }, timeout: 0.1)
        }
        XCTFail("the stream never held more lines than the edge's saved positions cover")
        kill9(edge)
    }

    /// How many whole lines of `log` the saved positions cover (0 when none are saved).
    func linesCovered(_ log: String) -> Int {
        guard let store = try? TailCheckpointStore(directory: directory + "/state") else { return 0 }
        let offset = store.checkpoints.map(\.offset).max() ?? 0
        guard offset > 0, let handle = FileHandle(forReadingAtPath: log) else { return 0 }
        defer { try? handle.close() }
        let bytes = (try? handle.read(upToCount: Int(offset))) ?? Data()
        return bytes.reduce(0) { $1 == 10 ? $0 + 1 : $0 }
    }

    func testSigkillOfTheEdgeMidStreamRepeatsNothingAndLosesNothing() throws {
        let servers = try startServers(1)
        let log = directory + "/app.log"
        appendText(log, "")
        let total = 60_000
        var edge = try startEdge([log], urls: servers.urls)
        counter = try StreamLineCounter(urls: servers.urls, stream: "LOGS")
        let writer = NumberedLineWriter(path: log)
        writer.start(until: total)
        // Kill it twice while the writer runs at ~20k lines/s.
        for mark in [15_000, 35_000] {
            XCTAssertTrue(EventLoop.main.run(until: { writer.count >= mark && (self.counter?.counts.count ?? 0) > mark / 4 }, timeout: 60))
            kill9WithResendsPending(edge, log: log)
            edge = try startEdge([log], urls: servers.urls)
        }
        XCTAssertTrue(writer.wait())
        appendText(log, "END\n")
        assertExactlyOnce(total)
        // Each kill left lines in the stream beyond the saved positions: the restarted edge
        // sent them again, and they were recognised (the path that keeps them out ran).
        XCTAssertTrue(processes.contains { $0.errors.contains("was already in the stream") }, "no resend was deduplicated")
    }

    func testRotationWhileTheEdgeIsDownIsShippedExactlyOnce() throws {
        let servers = try startServers(1)
        let log = directory + "/app.log"
        appendText(log, "")
        let total = 40_000
        let edge = try startEdge([log], urls: servers.urls)
        counter = try StreamLineCounter(urls: servers.urls, stream: "LOGS")
        let writer = NumberedLineWriter(path: log)
        writer.start(until: 20_000)
        XCTAssertTrue(EventLoop.main.run(until: { (self.counter?.counts.count ?? 0) >= 5_000 }, timeout: 60))
        kill9(edge)
        // While it is down: the rest of the first half into app.log, rotated by rename,
        // then the second half into a new app.log.
        XCTAssertTrue(writer.wait())
        XCTAssertEqual(rename(log, log + ".1"), 0)
        writer.switchTo(log)
        writer.start(until: total)
        XCTAssertTrue(EventLoop.main.run(until: { writer.count >= 25_000 }, timeout: 60))
        _ = try startEdge([log], urls: servers.urls)
        XCTAssertTrue(writer.wait())
        appendText(log, "END\n")
        assertExactlyOnce(total)
    }

    func testSigkillOfTheStreamLeaderInAThreeNodeClusterRepeatsNothing() throws {
        let servers = try startServers(3)
        let log = directory + "/app.log"
        appendText(log, "")
        let total = 60_000
        _ = try startEdge([log], urls: servers.urls, extra: ["--stream-replicas", "3"])
        counter = try StreamLineCounter(urls: servers.urls, stream: "LOGS", timeout: 180)
        let writer = NumberedLineWriter(path: log)
        writer.start(until: total)
        XCTAssertTrue(EventLoop.main.run(until: { (self.counter?.counts.count ?? 0) >= 10_000 }, timeout: 120))
        // Find the leader and kill it.
        let js = try XCTUnwrap(counter?.connection).jetStream()
        let info = ReplayBox<JetStreamInfo>()
        let infoSub = js.streamInfo("LOGS").subscribe(next: { info.value = $0 }, error: { info.error = $0 })
        XCTAssertTrue(EventLoop.main.run(until: { info.value != nil || info.error != nil }, timeout: 30))
        infoSub.dispose()
        let leader = try XCTUnwrap(servers.server(named: try XCTUnwrap(info.value?.leader)))
        leader.stop(SIGKILL)
        let before = counter?.counts.count ?? 0
        // A new leader takes over: lines keep arriving; then the old one comes back.
        XCTAssertTrue(EventLoop.main.run(until: { (self.counter?.counts.count ?? 0) >= before + 5_000 }, timeout: 120),
                      "no progress after the leader's death")
        try leader.start()
        XCTAssertTrue(writer.wait())
        appendText(log, "END\n")
        assertExactlyOnce(total)
    }

    func testAFileTruncatedInPlaceIsShippedAgainFromItsStartExactlyOnce() throws {
        let servers = try startServers(1)
        let log = directory + "/app.log"
        appendText(log, "")
        let first = 3_000, second = 1_000, third = 500
        var edge = try startEdge([log], urls: servers.urls)
        counter = try StreamLineCounter(urls: servers.urls, stream: "LOGS")
        appendText(log, (0..<first).map(NumberedLineWriter.line).joined())
        XCTAssertTrue(EventLoop.main.run(until: { (self.counter?.counts.count ?? 0) >= first }, timeout: 60),
                      "the first \(first) lines are in the stream (\(self.counter?.counts.count ?? 0))")
        // copytruncate's cut: the same file (same inode) emptied, then written again. The
        // new lines take byte ranges the old ones had, and the file stays shorter than what
        // was shipped before (87 kB after 258 kB).
        let inode = inodeNumber(log)
        XCTAssertEqual(truncate(log, 0), 0)
        appendText(log, (first..<first + second).map(NumberedLineWriter.line).joined())
        XCTAssertEqual(inodeNumber(log), inode)
        XCTAssertTrue(EventLoop.main.run(until: { (self.counter?.counts.count ?? 0) >= first + second }, timeout: 60),
                      "the lines written after the truncation are shipped (\(self.counter?.counts.count ?? 0) of \(first + second)); edge: \(edge.errors.suffix(1500))")
        XCTAssertTrue(edge.errors.contains("file truncated"), "the edge saw the truncation: \(edge.errors.suffix(800))")
        // A crash after the truncation: the restarted edge resumes the new content (its
        // checkpoint is the new content's, its message ids the same as before the crash).
        kill9(edge)
        edge = try startEdge([log], urls: servers.urls)
        appendText(log, (first + second..<first + second + third).map(NumberedLineWriter.line).joined() + "END\n")
        assertExactlyOnce(first + second + third)
    }

    func testServersUnreachableAtTheStartLinesWaitOnDiskThenArriveOnce() throws {
        let servers = try NATSTestServers(count: 1)
        self.servers = servers
        let log = directory + "/app.log"
        appendText(log, "")
        let total = 200_000
        let edge = try startEdge([log], urls: servers.urls)
        // ~10 s of lines at 20k/s while no server exists (the writer's pace is the clock).
        let writer = NumberedLineWriter(path: log)
        writer.start(until: total)
        XCTAssertTrue(EventLoop.main.run(until: { writer.count >= 20_000 }, timeout: 60))
        let early = residentKilobytes(edge.process.processIdentifier)
        XCTAssertTrue(writer.wait(timeout: 120))
        let late = residentKilobytes(edge.process.processIdentifier)
        XCTAssertTrue(edge.errors.contains("retrying"), "the edge keeps trying: \(edge.errors.suffix(500))")
        // Nothing in memory grows: the 180,000 lines (16 MB) written meanwhile wait in the
        // file; the edge holds at most 2 MiB of them.
        XCTAssertGreaterThan(early, 0)
        XCTAssertLessThan(late, early + 6 * 1024, "resident memory grew from \(early) kB to \(late) kB while the servers were away")
        try servers.startAll()
        counter = try StreamLineCounter(urls: servers.urls, stream: "LOGS")
        appendText(log, "END\n")
        assertExactlyOnce(total)
    }

    func testAHubClientSendingSinceGetsStoredLinesInOrderThenLiveOnes() throws {
        let servers = try startServers(1)
        let log = directory + "/app.log"
        appendText(log, (0..<2_000).map(NumberedLineWriter.line).joined())
        // Edge and hub in one process.
        let both = try startEdge([log], urls: servers.urls, extra: ["--from", servers.urls[0]])
        counter = try StreamLineCounter(urls: servers.urls, stream: "LOGS")
        XCTAssertTrue(EventLoop.main.run(until: { (self.counter?.counts.count ?? 0) >= 2_000 }, timeout: 60))
        let client = try LineClient(port: both.port)
        client.send("SINCE 1\n")
        var lines = client.readLines(timeout: 60) { $0.filter { $0.contains(" L") }.count >= 2_000 }
        XCTAssertEqual(lines.first, "OK SINCE 1")
        let numbered = lines.compactMap { NatsExactlyOnceTests.number(in: $0) }
        XCTAssertEqual(numbered, Array(0..<2_000), "stored lines, in order")
        XCTAssertTrue(lines.dropFirst().allSatisfy { $0.hasPrefix(log + ": L") }, "\(lines.prefix(3))")
        // Then live: appended lines follow, in order.
        appendText(log, (2_000..<2_300).map(NumberedLineWriter.line).joined())
        lines = client.readLines(timeout: 60) { $0.filter { $0.contains(" L") }.count >= 300 }
        XCTAssertEqual(lines.compactMap { NatsExactlyOnceTests.number(in: $0) }, Array(2_000..<2_300))
        // A client's GREP applies to what SINCE replays and to the live lines after it
        // (its own consumer replaces its share of the fan-out).
        let filtered = try LineClient(port: both.port)
        _ = filtered.command("GREP ^L[0-9]*7 ", reply: "OK GREP")
        filtered.send("SINCE 1\n")
        let sevens = (0..<2_300).filter { $0 % 10 == 7 }
        let replayed = filtered.readLines(timeout: 60) {
            $0.compactMap { NatsExactlyOnceTests.number(in: $0) }.count >= sevens.count
        }
        XCTAssertEqual(replayed.compactMap { NatsExactlyOnceTests.number(in: $0) }, sevens,
                       "only the stored lines the filter takes, in order")
        // A bad argument is a clear error.
        client.send("SINCE yesterday\n")
        let error = client.readLines(timeout: 30) { $0.contains { $0.hasPrefix("ERR") } }
        XCTAssertTrue(error.contains { $0.hasPrefix("ERR SINCE needs") }, "\(error)")
    }

    /// A hub started on a stream that already holds lines, then its server restarted before
    /// anything new was stored: cnats makes the hub's live consumer again after the
    /// reconnect, and (cnats 3.4) from the stream's first message, since that consumer had
    /// received nothing. Its clients got the whole stream again; now only the new lines.
    func testAHubsLiveClientsGetNoStoredLineAgainWhenItsServerComesBack() throws {
        let (servers, log, counter, _, client) = try startHubOnAStreamOfAThousandLines()
        // The hub's live consumer exists (beside the counter's) before the server goes.
        func waitForTwoConsumers() -> Bool {
            let deadline = Date().addingTimeInterval(120)
            while Date() < deadline {
                if counter.consumers() == 2 { return true }
                _ = EventLoop.main.run(until: { false }, timeout: 0.2)
            }
            return false
        }
        XCTAssertTrue(waitForTwoConsumers(), "the hub's consumer was not made")
        servers.servers[0].stop(SIGKILL)
        try servers.servers[0].start()
        // Ephemeral consumers do not outlive their server: both are made again.
        XCTAssertTrue(waitForTwoConsumers(), "the consumers were not made again")
        appendText(log, (1_000..<1_100).map(NumberedLineWriter.line).joined())
        var numbered: [Int] = []
        _ = client.readLines(timeout: 120) { lines in
            numbered = lines.compactMap { NatsExactlyOnceTests.number(in: $0) }
            return numbered.contains(1_099)
        }
        XCTAssertEqual(numbered.first, 1_000, "a live client got stored lines again")
        XCTAssertEqual(numbered, Array(1_000..<1_100))
    }

    func testASinceClientSlowerThanTheStreamIsWaitedForAndLosesNoLine() throws {
        try replayToASlowClient(stallingTheServerAtTheRestart: false)
    }

    /// The replay's new consumer cannot be made at first (the server is stopped, so the
    /// hub's request times out, as it can on a loaded machine): the hub tries again from
    /// where the client stands, and the client still gets every line once, in order.
    func testAReplayWhoseRestartTimesOutIsRetriedAndLosesNoLine() throws {
        try replayToASlowClient(stallingTheServerAtTheRestart: true)
    }

    /// 50,000 stored lines replayed (`SINCE 1`) to a client that reads nothing until the
    /// hub has let its consumer go; then it reads all. With `stallingTheServerAtTheRestart`
    /// the server is stopped (SIGSTOP) from then until 8 s after the client starts reading,
    /// so the hub's first try at a new consumer times out (5 s).
    func replayToASlowClient(stallingTheServerAtTheRestart stall: Bool) throws {
        let servers = try startServers(1)
        let log = directory + "/app.log"
        let total = 50_000
        appendText(log, (0..<total).map(NumberedLineWriter.line).joined())
        // A 64 KiB queue limit: the replay (about 4.5 MB) outruns a client that does not read
        // seventy times over.
        let both = try startEdge([log], urls: servers.urls, extra: ["--from", servers.urls[0], "--queue-limit", "65536"])
        counter = try StreamLineCounter(urls: servers.urls, stream: "LOGS")
        // Bounded on progress: a ThreadSanitizer edge beside the AddressSanitizer lane took
        // more than 120 s to store the 50,000 lines in a rehearsal.
        let counter = try XCTUnwrap(self.counter)
        XCTAssertTrue(counter.waitForAll(total, end: false), "the stream holds \(counter.counts.count) of \(total); consumer errors: \(counter.consumerErrors); edge: \(both.errors.suffix(1500))")
        // The hub's shared feed (its live consumer, from "new") may still be carrying some
        // of these lines to live clients: the observer pauses its share (skipped lines are
        // not dropped ones), and the replaying client's lines are counted from its
        // `OK SINCE 1` on.
        let observer = try LineClient(port: both.port)
        _ = observer.command("PAUSE", reply: "OK PAUSE")
        let client = try LineClient(port: both.port, receiveBuffer: 4096)
        client.send("SINCE 1\n")
        // The client reads nothing until the hub has held its replay back longer than a gate
        // may stay closed (2 s) and let the consumer go: both ways of waiting then ran.
        var stats = ""
        let deadline = Date().addingTimeInterval(90)
        while Date() < deadline {
            stats = observer.command("STATS", reply: "STATS").last ?? ""
            if NatsExactlyOnceTests.field("replay_restarts", in: stats) >= 1 { break }
            usleep(100_000)
        }
        XCTAssertGreaterThanOrEqual(NatsExactlyOnceTests.field("replay_restarts", in: stats), 1, stats)
        let pid = try XCTUnwrap(servers.servers[0].pid)
        if stall {
            kill(pid, SIGSTOP)
            DispatchQueue.global().asyncAfter(deadline: .now() + 8) { kill(pid, SIGCONT) }
        }
        defer { if stall { kill(pid, SIGCONT) } }
        // Now it reads: every stored line once, in order, none dropped.
        var replayed = false
        var afterReply = 0
        var looked = 0  // (readLines may ask again about lines it asked about before)
        let lines = client.readLines(timeout: 120) { lines in
            while looked < lines.count {
                let line = lines[looked]
                looked += 1
                if replayed {
                    if NatsExactlyOnceTests.number(in: line) != nil { afterReply += 1 }
                } else if line == "OK SINCE 1" {
                    replayed = true
                }
            }
            return afterReply >= total
        }
        let reply = try XCTUnwrap(lines.firstIndex(of: "OK SINCE 1"), "\(lines.prefix(3))")
        let fromReplay = lines[(reply + 1)...]
        XCTAssertFalse(fromReplay.contains { $0.hasPrefix("DROPPED") }, "the replaying client lost lines")
        let numbered = fromReplay.compactMap { NatsExactlyOnceTests.number(in: $0) }
        XCTAssertEqual(numbered.count, total, "lines received; others: \(fromReplay.filter { NatsExactlyOnceTests.number(in: $0) == nil }.prefix(5))")
        let firstOutOfOrder = numbered.indices.first { numbered[$0] != $0 }
        XCTAssertNil(firstOutOfOrder, "line \(firstOutOfOrder ?? 0) is L\(firstOutOfOrder.map { numbered[$0] } ?? 0)")
        let after = observer.command("STATS", reply: "STATS").last ?? ""
        XCTAssertGreaterThanOrEqual(NatsExactlyOnceTests.field("replay_waits", in: after), 2, after)
        if stall {
            XCTAssertGreaterThanOrEqual(NatsExactlyOnceTests.field("replay_retries", in: after), 1, after)
        }
    }

    /// The number after `name=` in a `STATS` line (0 when absent).
    static func field(_ name: String, in stats: String) -> Int {
        guard let range = stats.range(of: " \(name)=") else { return 0 }
        return Int(stats[range.upperBound...].prefix { $0.isNumber }) ?? 0
    }

    func testBadNatsOptionsAreClearErrors() throws {
        let bad = try runToExit(["--publish", "http://127.0.0.1:4222", "--listen", "127.0.0.1:0", "/dev/null"])
        XCTAssertEqual(bad.status, 64)
        XCTAssertTrue(bad.err.contains("--publish: unsupported scheme http://"), bad.err)
        let port = try runToExit(["--from", "nats://127.0.0.1:70000", "--listen", "127.0.0.1:0"])
        XCTAssertTrue(port.err.contains("--from: bad port"), port.err)
        let stream = try runToExit(["--from", "nats://127.0.0.1:4222", "--stream", "a.b", "--listen", "127.0.0.1:0"])
        XCTAssertTrue(stream.err.contains("--stream must be a name"), stream.err)
    }

    func testAStreamThatCannotBeCreatedIsSaidAndRetriedWithoutACrash() throws {
        let servers = try startServers(1)
        let log = directory + "/app.log"
        appendText(log, "L0 x\n")
        // Three replicas on a single server: the server refuses; the edge says so and lives.
        let edge = try startEdge([log], urls: servers.urls, extra: ["--stream-replicas", "3"])
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline && !edge.errors.contains("cannot use stream LOGS") { usleep(50_000) }
        XCTAssertTrue(edge.errors.contains("cannot use stream LOGS"), edge.errors)
        XCTAssertTrue(edge.errors.contains("10074"), "the server's reason is named: \(edge.errors)")
        XCTAssertTrue(edge.process.isRunning)
    }

    static func number(in line: String) -> Int? {
        guard let range = line.range(of: ": L") else { return nil }
        let rest = line[range.upperBound...]
        return Int(rest.prefix { $0.isNumber })
    }
}

/// The inode number of `path` (0 when it cannot be read).
func inodeNumber(_ path: String) -> UInt64 {
    var info = stat()
    return stat(path, &info) == 0 ? UInt64(info.st_ino) : 0
}

/// The resident set of a process, in kB (VmRSS), or 0.
func residentKilobytes(_ pid: Int32) -> Int {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return 0 }
    for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
        return Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]) ?? 0
    }
    return 0
}

extension NatsExactlyOnceTests {
    /// One server, an edge that stored lines 0–999 of `app.log` (counted by the test's own
    /// consumer), and a hub (`--from`) with one live client connected: where the tests of
    /// the hub's live consumer start.
    func startHubOnAStreamOfAThousandLines() throws
        -> (servers: NATSTestServers, log: String, counter: StreamLineCounter, hub: LogcastProcess, client: LineClient) {
        let servers = try startServers(1)
        let log = directory + "/app.log"
        appendText(log, (0..<1_000).map(NumberedLineWriter.line).joined())
        _ = try startEdge([log], urls: servers.urls)
        let counter = try StreamLineCounter(urls: servers.urls, stream: "LOGS")
        self.counter = counter
        XCTAssertTrue(EventLoop.main.run(until: { counter.counts.count >= 1_000 }, timeout: 120))
        let hub = try LogcastProcess(["--from", servers.urls[0], "--stream", "LOGS", "--listen", "127.0.0.1:0"])
        processes.append(hub)
        let client = try LineClient(port: hub.waitUntilListening())
        return (servers, log, counter, hub, client)
    }
}

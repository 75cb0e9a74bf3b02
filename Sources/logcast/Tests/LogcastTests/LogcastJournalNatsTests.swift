import Foundation
import Glibc
import ReactiveUV
import ReactiveUVNATS
import ReactiveUVNATSTestKit
import XCTest

/// The journal on a NATS edge (`--journal-directory DIR --publish …`) against a real
/// nats-server: journal files written by systemd-journal-remote while the edge ships them,
/// the edge SIGKILLed while an entry is stored but its cursor not yet saved, and every
/// entry counted in the stream: each exactly once, in journal order.
final class LogcastJournalNatsTests: NatsEdgeTestCase {
    var writer: JournalRemote?

    var journal: String { directory + "/journal" }
    var state: String { directory + "/state" }

    override func setUpWithError() throws {
        try super.setUpWithError()
        _ = try JournalRemote.required()
        mkdir(journal, 0o755)
    }

    override func tearDown() {
        writer?.stop()
        writer = nil
        super.tearDown()
    }

    func startEdge(_ urls: [String], extra: [String] = [], window: Int? = nil) throws -> LogcastProcess {
        let edge = try LogcastProcess([
            "--journal-directory", journal, "--publish", urls.joined(separator: ","), "--stream", "LOGS",
            "--subject", "logs.test", "--state-dir", state, "--listen", "127.0.0.1:0", "--log-level", "debug",
        ] + extra, wrapper: window.map { ["/usr/bin/env", "LOGCAST_NATS_WINDOW=\($0)"] } ?? [])
        processes.append(edge)
        _ = try edge.waitUntilListening()
        XCTAssertTrue(waitForLog(edge, "journal: following"), edge.errors)
        return edge
    }

    /// The stream's journal lines so far, in stream order (the counter keeps every line
    /// that is not a numbered file line).
    var shipped: [String] { counter?.others ?? [] }

    /// The number in the last `a.service: seq N` the stream holds, or -1.
    var lastShipped: Int { shipped.last.flatMap { Int($0.split(separator: " ").last ?? "") } ?? -1 }

    /// The number of the entry whose cursor the edge saved (-1: none of ours): its `i=`
    /// is the entry's place in the one journal file, after the one entry written first.
    func lastSaved() -> Int {
        let text = readFileText(state + "/journal-cursor")
        guard let part = text.split(separator: ";").first(where: { $0.hasPrefix("i=") }),
              let sequence = Int(part.dropFirst(2), radix: 16) else { return -1 }
        return sequence - 2
    }

    /// SIGKILLs `edge` at a moment when the stream holds an entry the saved cursor does not
    /// cover, so the restarted edge must publish it again and the stream must take it as a
    /// duplicate. The edge is stopped (SIGSTOP) while the two are compared, and continued
    /// and tried again while they are level.
    func kill9WithResendPending(_ edge: LogcastProcess) {
        let deadline = Date().addingTimeInterval(120)
        while Date() < deadline {
            edge.signal(SIGSTOP)
            let saved = lastSaved()
            if EventLoop.main.run(until: { self.lastShipped > saved }, timeout: 1) {
                edge.signal(SIGKILL)
                XCTAssertNotNil(edge.waitForExit(timeout: 30))
                return
            }
            edge.signal(SIGCONT)
            _ = EventLoop.main.run(until: { false }, timeout: 0.05)
        }
        XCTFail("the stream never held an entry past the saved cursor")
        edge.signal(SIGKILL)
    }

    /// Runs the loop until the stream holds the journal line `last` (the last one written);
    /// false when none arrived for `stall` seconds (the bound is on progress: a sanitizer's
    /// slowdown is not a stall).
    func waitForShipped(_ last: String, stall: Double = 60) -> Bool {
        var seen = shipped.count
        var lastProgress = Date()
        while true {
            if EventLoop.main.run(until: { self.shipped.last == last }, timeout: 5) { return true }
            if shipped.count != seen {
                seen = shipped.count
                lastProgress = Date()
            } else if Date().timeIntervalSince(lastProgress) > stall {
                return false
            }
        }
    }

    func testSigkillOfTheEdgeShipsEveryEntryOnceInOrder() throws {
        try shipThroughKills(window: nil)
    }

    /// The same with 16 entries in flight (LOGCAST_NATS_WINDOW): a kill leaves several
    /// stored past the saved cursor; one server, so still in order.
    func testSigkillOfTheEdgeWithAWindowOf16ShipsEveryEntryOnceInOrder() throws {
        try shipThroughKills(window: 16)
    }

    func shipThroughKills(window: Int?) throws {
        let servers = try startServers(1)
        let w = try JournalRemote(directory: journal, name: "system")
        writer = w
        w.append([w.entry("before the edge")])
        var edge = try startEdge(servers.urls, window: window)
        counter = try StreamLineCounter(urls: servers.urls, stream: "LOGS")
        // Written in bursts; killed twice while a large burst is on its way (800 entries:
        // the kill finds entries in flight even when shipping is fast).
        let bursts = [0..<200, 200..<400, 400..<600, 600..<1400, 1400..<1600, 1600..<1800, 1800..<2600, 2600..<2800]
        let total = 2800
        for (i, burst) in bursts.enumerated() {
            w.append(burst.map { w.entry("seq \($0)") })
            if i == 3 || i == 6 {
                XCTAssertTrue(EventLoop.main.run(until: { self.lastShipped >= burst.lowerBound }, timeout: 120), "shipping: \(edge.errors.suffix(800))")
                kill9WithResendPending(edge)
                edge = try startEdge(servers.urls, window: window)
            }
        }
        let complete = waitForShipped("a.service: seq \(total - 1)")
        XCTAssertTrue(complete, "the stream holds \(shipped.count) of \(total): \(edge.errors.suffix(1500))")
        let expected = (0..<total).map { "a.service: seq \($0)" }
        XCTAssertEqual(shipped.count, total, "no entry twice")
        if shipped != expected {
            let got = Set(shipped)
            XCTFail("not once each in order: missing \(expected.filter { !got.contains($0) }.prefix(5)), first difference at \(zip(shipped, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? -1)")
        }
        XCTAssertFalse(shipped.contains("a.service: before the edge"), "the journal starts at its end")
        // Each kill left an entry stored beyond the saved cursor: published again and
        // recognised (the path that keeps it out ran).
        XCTAssertTrue(processes.contains { $0.errors.contains("was already in the stream") }, "no resend was deduplicated")
    }

    /// No server at the start (entries wait in the journal, reading paused once 4,096 wait),
    /// then the server killed and started again while entries are on their way: every
    /// entry in the stream once, in order.
    func testServersAwayAtTheStartAndKilledMidStreamEveryEntryArrivesOnce() throws {
        let servers = try NATSTestServers(count: 1)
        self.servers = servers
        let w = try JournalRemote(directory: journal, name: "system")
        writer = w
        let edge = try startEdge(servers.urls)
        let first = 5000
        w.append((0..<first).map { w.entry("seq \($0)") })
        XCTAssertTrue(waitForLog(edge, "nats:"), "the edge tries to connect: \(edge.errors.suffix(500))")
        try servers.startAll()
        counter = try StreamLineCounter(urls: servers.urls, stream: "LOGS")
        XCTAssertTrue(EventLoop.main.run(until: { self.lastShipped >= 1500 }, timeout: 120), "shipping: \(edge.errors.suffix(800))")
        servers.servers[0].stop(SIGKILL)
        let total = 5500
        w.append((first..<total).map { w.entry("seq \($0)") })
        try servers.servers[0].start()
        let complete = waitForShipped("a.service: seq \(total - 1)")
        XCTAssertTrue(complete, "the stream holds \(shipped.count) of \(total): \(edge.errors.suffix(1500))")
        let expected = (0..<total).map { "a.service: seq \($0)" }
        XCTAssertEqual(shipped.count, total, "no entry twice")
        XCTAssertTrue(shipped == expected, "once each, in order")
        XCTAssertTrue(edge.process.isRunning)
    }

    /// A hub (`--from`, here in the edge's own process) serves the stream's journal
    /// messages as `journal: UNIT: MESSAGE` lines: `SINCE 1` replays them in order.
    func testAHubServesTheShippedEntriesAsJournalLines() throws {
        let servers = try startServers(1)
        let w = try JournalRemote(directory: journal, name: "system")
        writer = w
        let both = try startEdge(servers.urls, extra: ["--from", servers.urls[0]])
        counter = try StreamLineCounter(urls: servers.urls, stream: "LOGS")
        w.append((0..<100).map { w.entry("seq \($0)") })
        XCTAssertTrue(waitForShipped("a.service: seq 99"), "\(shipped.count) shipped: \(both.errors.suffix(800))")
        let client = try LineClient(port: both.port)
        client.send("SINCE 1\n")
        let lines = client.readLines(timeout: 60) { $0.last == "journal: a.service: seq 99" }
        XCTAssertEqual(lines.first, "OK SINCE 1")
        XCTAssertEqual(lines.filter { $0.hasPrefix("journal: ") }, (0..<100).map { "journal: a.service: seq \($0)" })
    }

    func testTheEdgeServesItsJournalLinesLocallyToo() throws {
        let servers = try startServers(1)
        let w = try JournalRemote(directory: journal, name: "system")
        writer = w
        let edge = try startEdge(servers.urls)
        counter = try StreamLineCounter(urls: servers.urls, stream: "LOGS")
        let client = try LineClient(port: edge.port)
        XCTAssertFalse(client.command("STATS", reply: "STATS").isEmpty)
        w.append((0..<50).map { w.entry("seq \($0)") })
        let lines = client.readLines { $0.last == "journal: a.service: seq 49" }
        XCTAssertEqual(lines.filter { $0.hasPrefix("journal: ") }, (0..<50).map { "journal: a.service: seq \($0)" })
        XCTAssertTrue(waitForShipped("a.service: seq 49"), "\(shipped.count) shipped: \(edge.errors.suffix(800))")
        XCTAssertEqual(shipped, (0..<50).map { "a.service: seq \($0)" })
        XCTAssertEqual(counter?.lines, 50, "one line per entry")
        // The stream may deliver the last entry to the counter before its acknowledgement
        // reaches the edge: asked again until it has (bounded).
        var stats = ""
        let deadline = Date().addingTimeInterval(60)
        repeat {
            stats = client.command("STATS", reply: "STATS").last ?? ""
        } while !stats.contains(" journal_shipped=50 ") && Date() < deadline && usleep(50_000) == 0
        XCTAssertTrue(stats.contains(" journal_entries=50 ") && stats.contains(" journal_shipped=50 ") && stats.contains(" journal_shipped_duplicates=0"), stats)
        edge.signal(SIGTERM)
        XCTAssertEqual(edge.waitForExit(timeout: 60), 0, edge.errors)
    }
}

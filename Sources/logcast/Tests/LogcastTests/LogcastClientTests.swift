import Foundation
import Glibc
import XCTest

/// A client's lifecycle seen from a real TCP client (ClientFeed.swift draws the states):
/// the fan-out's own notices to a client that does not read are not its fault.
final class LogcastClientTests: LogcastProcessTestCase {
    /// A `name=value` field of a `STATS` reply (`-1` when it is missing).
    func field(_ name: String, _ stats: String) -> Int {
        stats.split(separator: " ").first { $0.hasPrefix(name + "=") }.map { Int($0.dropFirst(name.count + 1)) ?? -1 } ?? -1
    }

    /// Issue 35, item 5 (a defect): a client whose socket is full falls behind, and every
    /// tick queues a notice for it (`DROPPED n` as it loses lines, `HEARTBEAT` as nothing
    /// reaches it). Those notices are the fan-out's, not replies it asked for: they must not
    /// end it as "not reading its replies" however long it stalls. Before the fix they
    /// counted against the queue limit with the lines, and a stall of a hundred heartbeats
    /// (1000-byte limit, ~12 bytes each) ended every stalled client.
    func testNoticesToAStalledClientNeverEndItAndReachItOnceItReads() throws {
        let a = dir + "/a.log"
        appendLines(a, ["before"])
        let p = try start([a, "--listen", "127.0.0.1:0", "--queue-limit", "1000", "--slow-client", "drop",
                           "--heartbeat", "0.05", "--tick", "0.02"])
        // Replies only (paused): STATS, and a HEARTBEAT per heartbeat interval, the test's
        // positive marker that ticks went by.
        let ticker = try LineClient(port: p.port)
        _ = ticker.command("PAUSE", reply: "OK PAUSE")
        func stats() -> String { ticker.command("STATS", reply: "STATS").last ?? "" }
        // The tail has started once a line written now is counted read.
        var k = 0
        while field("lines_read", stats()) <= 0 && k < 300 {
            appendLines(a, ["sync-\(k)"])
            k += 1
            ticker.readLines(timeout: 0.1) { _ in false }
        }
        let synced = field("lines_read", stats())
        XCTAssertGreaterThan(synced, 0, "the tail of \(a) never started")

        // A small receive window, so the kernel holds little for it; it reads nothing until
        // the end.
        let slow = try LineClient(port: p.port, receiveBuffer: 4096)
        _ = slow.command("GREP", reply: "OK GREP")

        // Fill the slow client's socket until its write stays in flight: the fan-out then
        // drops lines for it (only a client whose write is in flight loses lines).
        let payload = String(repeating: "x", count: 200)
        var written = 0
        while field("lines_dropped", stats()) <= 0 && written < 400_000 {
            appendLines(a, (written..<written + 2000).map { "fill-\($0) \(payload)" })
            written += 2000
        }
        XCTAssertGreaterThan(field("lines_dropped", stats()), 0, "the slow client's socket never filled")

        // A hundred and twenty heartbeats while it stalls, lines lost all along: each batch
        // is more than the queue limit, so it is dropped whole.
        var heartbeats = 0
        var batch = 0
        while heartbeats < 120 && !slow.closedByPeer {
            appendLines(a, (0..<8).map { "stall-\(batch)-\($0) \(payload)" })
            batch += 1
            let got = ticker.readLines(timeout: 30) { $0.last?.hasPrefix("HEARTBEAT ") ?? false }
            XCTAssertEqual(got.last?.hasPrefix("HEARTBEAT "), true, "a heartbeat every 0.05 s: \(got.suffix(3))")
            heartbeats += 1
        }
        // The last one a single line longer than the limit, so nothing is left behind for
        // it when it reads (a line is never split across blocks).
        appendLines(a, ["last " + String(repeating: "y", count: 1500)])
        var read = 0
        // Generous: the fill can be 30 MB, and a TSan-built logcast beside the ASan lane read
        // 149k of 163k lines in the 60 s this once allowed.
        let deadline = Date().addingTimeInterval(300)
        let expected = synced + written + 8 * batch + 1
        // (At least: a sync line written before the tail counted its first may come late.)
        while read < expected && Date() < deadline {
            read = field("lines_read", stats())
            if read < expected { usleep(20_000) }
        }
        XCTAssertGreaterThanOrEqual(read, expected, "every line was read (fill, stall and last)")
        // Two heartbeats more: a pump has visited it since the last line was sealed.
        for _ in 0..<2 { ticker.readLines(timeout: 30) { $0.last?.hasPrefix("HEARTBEAT ") ?? false } }
        let dropped = field("lines_dropped", stats())
        XCTAssertGreaterThan(dropped, 0)
        XCTAssertEqual(field("clients", stats()), 2, "the stalled client is still served: \(p.errors)")

        // It reads now: everything kept for it, then the notices (one DROPPED at least: the
        // ones queued while it stalled are kept within their allowance), then the report
        // of every line it lost.
        func report(_ line: String?) -> Int { line.flatMap { $0.hasPrefix("DROPPED ") ? Int($0.dropFirst(8)) : nil } ?? -1 }
        let lines = slow.readLines(timeout: 120) { report($0.last) >= dropped }
        XCTAssertFalse(slow.closedByPeer, "ended while stalled: \(p.errors)")
        XCTAssertEqual(report(lines.last), dropped, "told every line it lost: \(lines.suffix(3))")
        let fills = lines.compactMap { $0.split(separator: " ").dropFirst().first }.filter { $0.hasPrefix("fill-") }
        let numbers = fills.compactMap { Int($0.dropFirst(5)) }
        XCTAssertEqual(numbers, numbers.sorted(), "what it got is in order")
        XCTAssertEqual(Set(numbers).count, numbers.count, "and each line once")
        XCTAssertGreaterThan(numbers.count, 0)
        // Its replies flow as before: it was never ended.
        XCTAssertEqual(slow.command("SYNC done", reply: "OK SYNC").last, "OK SYNC done")
        XCTAssertEqual(occurrences(of: "not reading its replies", in: p.errors), 0, p.errors)
        p.signal(SIGTERM)
        XCTAssertEqual(p.waitForExit(timeout: 30), 0, p.errors)
    }
}

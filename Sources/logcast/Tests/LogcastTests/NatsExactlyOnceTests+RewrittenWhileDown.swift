import Foundation
import Glibc
import ReactiveUV
import XCTest

/// Files changed while no edge ran: the edge started again must tell the content it left
/// from the one it finds, by the first bytes of each.
extension NatsExactlyOnceTests {
    /// An edge started on an empty `app.csv`, which then gets a header and rows 0–99; once
    /// they are stored and the saved position covers them all, the edge is SIGKILLed (so a
    /// restart that trusted the position would skip what lies below it in a new content).
    func shipTheFirstContentAndStopTheEdge() throws -> String {
        let (log, edge) = try startEdgeOnAnEmptyFile()
        appendText(log, Self.content(0))
        XCTAssertTrue(EventLoop.main.run(until: { (self.counter?.counts.count ?? 0) >= 100 }, timeout: 60),
                      "the first content is shipped; edge: \(edge.errors.suffix(1500))")
        XCTAssertTrue(EventLoop.main.run(until: { self.linesCovered(log) >= 101 }, timeout: 60),
                      "the edge saves its position (\(linesCovered(log)) lines covered)")
        kill9(edge)
        return log
    }

    /// An edge that first saw its log empty (it was started before the writer's first
    /// line), SIGKILLed once the whole file is stored and its position saved; the file is
    /// then truncated and written again, longer than before, while no edge runs. The edge
    /// started again ships the new content from its start. Its store used to know the file
    /// by the empty fingerprint taken at that first open, which matches any content of the
    /// inode: it resumed the new content at the old position and the rows below it were
    /// never shipped.
    func testAFileFirstSeenEmptyAndRewrittenWhileTheEdgeIsDownIsShippedFromItsStart() throws {
        let log = try shipTheFirstContentAndStopTheEdge()
        XCTAssertEqual(truncate(log, 0), 0)
        appendText(log, (100..<300).map(NumberedLineWriter.line).joined())
        let urls = try XCTUnwrap(servers?.urls)
        _ = try startEdge([log], urls: urls)
        appendText(log, "END\n")
        assertExactlyOnce(300, others: [Self.header])
    }

    /// logrotate's copytruncate while no edge runs: the edge stopped (SIGKILL) once every
    /// row it had shipped was covered by its saved position; then rows 100–299 were
    /// appended, the file copied to `app.csv.1` and cut, and rows 300–399 written to it.
    /// The edge started again ships 100–299 from the copy and 300–399 from the file, each
    /// once. It said the unread rows were deleted and never shipped them.
    func testACopyTruncateWhileTheEdgeIsDownShipsTheUnreadRowsFromTheCopy() throws {
        let log = try shipTheFirstContentAndStopTheEdge()
        appendText(log, (100..<300).map(NumberedLineWriter.line).joined())
        try FileManager.default.copyItem(atPath: log, toPath: log + ".1")
        XCTAssertEqual(truncate(log, 0), 0)
        appendText(log, (300..<400).map(NumberedLineWriter.line).joined())
        let urls = try XCTUnwrap(servers?.urls)
        _ = try startEdge([log], urls: urls)
        appendText(log, "END\n")
        assertExactlyOnce(400, others: [Self.header])
    }

    /// The same with rows in the stream past the edge's saved position when it is
    /// SIGKILLed (the writer at ~20k rows/s, still writing): the restarted edge sends them
    /// again from the copy, under the original file's ids (the copy's record names its
    /// origin), and JetStream takes them for resends. Under the copy's own inode they were
    /// new ids: every row between the last save and the kill was stored twice (5,000 in
    /// one run).
    func testRowsSentAgainFromACopyAfterAKillAreTakenForResends() throws {
        let servers = try startServers(1)
        let log = directory + "/app.log"
        appendText(log, "")
        let edge = try startEdge([log], urls: servers.urls)
        counter = try StreamLineCounter(urls: servers.urls, stream: "LOGS")
        let writer = NumberedLineWriter(path: log)
        // Killed while the writer runs (as in the mid-stream test): once it has stopped
        // and the edge has caught up and saved, no row is past the saved position (a slow
        // edge under TSan caught up before the kill when 20,000 rows were all).
        let total = 60_000
        writer.start(until: total)
        XCTAssertTrue(EventLoop.main.run(until: { writer.count >= 15_000 && (self.counter?.counts.count ?? 0) > 15_000 / 4 }, timeout: 60))
        kill9WithResendsPending(edge, log: log)
        XCTAssertTrue(writer.wait())
        try FileManager.default.copyItem(atPath: log, toPath: log + ".1")
        XCTAssertEqual(truncate(log, 0), 0)
        appendText(log, (total..<total + 1_000).map(NumberedLineWriter.line).joined())
        _ = try startEdge([log], urls: servers.urls)
        appendText(log, "END\n")
        assertExactlyOnce(total + 1_000)
        XCTAssertTrue(processes.contains { $0.errors.contains("was already in the stream") }, "no resend was deduplicated")
    }
}

import Foundation
import Glibc
import ReactiveUV
import XCTest

/// Files truncated in place and written again with the same first line (a CSV or a log
/// whose writer starts each file with the same header): every generation's first
/// message gets the id the first one had, so JetStream answers "duplicate" and the edge
/// must tell an older content's copy from its own resend.
extension NatsExactlyOnceTests {
    static let header = "time,level,message"

    /// Runs the main loop until the stream holds `count` header lines.
    func waitForHeaders(_ count: Int) -> Bool {
        EventLoop.main.run(until: { (self.counter?.others.filter { $0 == Self.header }.count ?? 0) >= count }, timeout: 60)
    }

    /// A server, an empty `app.csv`, an edge shipping it and a counter of the stream.
    func startEdgeOnAnEmptyFile() throws -> (log: String, edge: LogcastProcess) {
        let servers = try startServers(1)
        let log = directory + "/app.csv"
        appendText(log, "")
        let edge = try startEdge([log], urls: servers.urls)
        counter = try StreamLineCounter(urls: servers.urls, stream: "LOGS")
        return (log, edge)
    }

    /// The new content's first message is the header alone, a prefix of the old content's
    /// first message (header and rows): the stored copy is not this file's resend, because
    /// the file does not hold the stored copy's bytes. Taken for a resend, the edge went on
    /// after the stored copy's end and dropped every new row below it.
    func testAFileWrittenAgainFromTheSameHeaderLosesNoRowBehindTheOldCopy() throws {
        let (log, edge) = try startEdgeOnAnEmptyFile()
        // 200 rows (17 kB) go out as two messages, the first [0, ~16 kB).
        appendText(log, Self.header + "\n" + (0..<200).map(NumberedLineWriter.line).joined())
        XCTAssertTrue(EventLoop.main.run(until: { (self.counter?.counts.count ?? 0) >= 200 }, timeout: 60))
        let inode = inodeNumber(log)
        XCTAssertEqual(truncate(log, 0), 0)
        appendText(log, Self.header + "\n")
        XCTAssertTrue(waitForHeaders(2), "the new header is shipped on its own; edge: \(edge.errors.suffix(1500))")
        // The new rows take byte ranges inside the old first message's.
        appendText(log, (200..<300).map(NumberedLineWriter.line).joined() + "END\n")
        XCTAssertEqual(inodeNumber(log), inode)
        assertExactlyOnce(300, others: Array(repeating: Self.header, count: 2))
    }

    /// Three contents with the same first line while followed: each goes out under ids of
    /// its own (the truncation count) and the stream holds every line once.
    func testAFileTruncatedTwiceWithTheSameFirstLineShipsEveryContent() throws {
        let (log, edge) = try startEdgeOnAnEmptyFile()
        for generation in 0..<3 {
            if generation > 0 { XCTAssertEqual(truncate(log, 0), 0) }
            appendText(log, Self.content(generation) + (generation == 2 ? "END\n" : ""))
            if generation < 2 {
                XCTAssertTrue(EventLoop.main.run(until: { (self.counter?.counts.count ?? 0) >= (generation + 1) * 100 }, timeout: 60),
                              "content \(generation) is shipped (\(self.counter?.counts.count ?? 0)); edge: \(edge.errors.suffix(1500))")
            }
        }
        assertExactlyOnce(300, others: Array(repeating: Self.header, count: 3))
    }

    /// The same three contents, each shipped by an edge whose state directory was lost
    /// before it started (so no truncation count tells them apart): the third content's
    /// first message finds the plain id taken (by the first content) and the first salted
    /// one too (by the second), and goes out under the next salt — it was sent again under
    /// the same salted id forever.
    func testAContentWhosePlainAndSaltedIdsAreTakenTakesTheNextSalt() throws {
        var (log, edge) = try startEdgeOnAnEmptyFile()
        let urls = try XCTUnwrap(servers?.urls)
        for generation in 0..<3 {
            if generation > 0 {
                kill9(edge)
                try FileManager.default.removeItem(atPath: directory + "/state")
                XCTAssertEqual(truncate(log, 0), 0)
            }
            appendText(log, Self.content(generation) + (generation == 2 ? "END\n" : ""))
            if generation > 0 { edge = try startEdge([log], urls: urls) }
            if generation < 2 {
                XCTAssertTrue(EventLoop.main.run(until: { (self.counter?.counts.count ?? 0) >= (generation + 1) * 100 }, timeout: 60),
                              "content \(generation) is shipped (\(self.counter?.counts.count ?? 0)); edge: \(edge.errors.suffix(1500))")
            }
        }
        assertExactlyOnce(300, others: Array(repeating: Self.header, count: 3))
        XCTAssertTrue(edge.errors.contains("salt 2"), "the third content's first message went out under the second salt: \(edge.errors.suffix(1500))")
    }

    /// The header and the 100 rows of content `generation` (rows numbered from 100 × it).
    static func content(_ generation: Int) -> String {
        header + "\n" + (generation * 100..<(generation + 1) * 100).map(NumberedLineWriter.line).joined()
    }

    /// A file truncated and written again with exactly the bytes it had: the lines are new
    /// ones (a writer logging the same start-up lines again), and the store's truncation
    /// count gives the second content other ids than the first (byte for byte the same
    /// messages were taken for resends). An edge SIGKILLed after it and started again sends
    /// neither content a third time.
    func testAFileWrittenAgainByteForByteIsShippedTwiceAndNotAThirdTime() throws {
        let (log, edge) = try startEdgeOnAnEmptyFile()
        let content = Self.header + "\n" + (0..<100).map(NumberedLineWriter.line).joined()
        appendText(log, content)
        XCTAssertTrue(EventLoop.main.run(until: { (self.counter?.counts.count ?? 0) >= 100 }, timeout: 60))
        XCTAssertEqual(truncate(log, 0), 0)
        // The follower sees the file shorter than what it read before it grows again (the
        // same bytes written past its position between two looks cannot be told from no change).
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline && !edge.errors.contains("file truncated") { usleep(20_000) }
        XCTAssertTrue(edge.errors.contains("file truncated"), edge.errors.suffix(1500).description)
        appendText(log, content)
        XCTAssertTrue(EventLoop.main.run(until: { self.counter?.counts.values.allSatisfy { $0 == 2 } == true && self.counter?.counts.count == 100 }, timeout: 60),
                      "the second content is shipped (\(self.counter?.counts.values.filter { $0 == 2 }.count ?? 0) of 100 lines twice); edge: \(edge.errors.suffix(1500))")
        kill9(edge)
        let urls = try XCTUnwrap(servers?.urls)
        _ = try startEdge([log], urls: urls)
        appendText(log, (100..<150).map(NumberedLineWriter.line).joined() + "END\n")
        guard let counter else { return XCTFail("no counter") }
        XCTAssertTrue(counter.waitForAll(150), "stream holds \(counter.counts.count) of 150 lines (END: \(counter.sawEnd))")
        XCTAssertEqual((0..<100).filter { counter.counts[$0] != 2 }, [], "lines of the first 100 not stored exactly twice")
        XCTAssertEqual((100..<150).filter { counter.counts[$0] != 1 }, [], "lines after the restart not stored exactly once")
        XCTAssertEqual(counter.others, [Self.header, Self.header])
    }
}

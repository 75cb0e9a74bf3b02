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

    /// Three contents with the same first line: the third one's message finds the plain id
    /// taken (by the first content) and the salted one taken too (by the second): it tries
    /// the next salt instead of sending under the same salted id forever.
    func testAFileTruncatedTwiceWithTheSameFirstLineShipsEveryContent() throws {
        let (log, edge) = try startEdgeOnAnEmptyFile()
        for generation in 0..<3 {
            if generation > 0 { XCTAssertEqual(truncate(log, 0), 0) }
            let rows = (generation * 100..<(generation + 1) * 100).map(NumberedLineWriter.line).joined()
            appendText(log, Self.header + "\n" + rows + (generation == 2 ? "END\n" : ""))
            if generation < 2 {
                XCTAssertTrue(EventLoop.main.run(until: { (self.counter?.counts.count ?? 0) >= (generation + 1) * 100 }, timeout: 60),
                              "content \(generation) is shipped (\(self.counter?.counts.count ?? 0)); edge: \(edge.errors.suffix(1500))")
            }
        }
        assertExactlyOnce(300, others: Array(repeating: Self.header, count: 3))
        XCTAssertTrue(edge.errors.contains("salt 2"), "the third content's first message went out under the second salt: \(edge.errors.suffix(1500))")
    }
}

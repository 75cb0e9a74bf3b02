import Foundation
import XCTest

extension NatsExactlyOnceTests {
    /// A line of 1.5 MiB (over logcast's 1 MiB line limit) between numbered lines, written
    /// in pieces: it is left out and logged as lost, and every line after it is shipped once.
    /// The edge's follow used to fail at it ("no longer followed"): nothing of the file after
    /// the line was ever shipped, also after a restart.
    func testALineOverTheLimitIsLeftOutAndTheFileGoesOnBeingShipped() throws {
        let (log, edge) = try startEdgeOnAnEmptyFile()
        appendText(log, (0..<100).map(NumberedLineWriter.line).joined())
        let piece = String(repeating: "z", count: 256 << 10)
        for _ in 0..<6 { appendText(log, piece) }
        appendText(log, "\n" + (100..<200).map(NumberedLineWriter.line).joined() + "END\n")
        assertExactlyOnce(200)
        XCTAssertTrue(edge.errors.contains("a line was longer than the limit"), edge.errors.suffix(1500).description)
    }
}

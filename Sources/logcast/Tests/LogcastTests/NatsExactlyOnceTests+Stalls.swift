import Foundation
import ReactiveUV
import ReactiveUVNATSTestKit
import XCTest

extension NatsExactlyOnceTests {
    /// The edge's stall watch (NatsEdge+Stall.swift): lines waiting while no server answers
    /// for longer than 20 s make the edge say what it waits for (here: the stream, never
    /// reached), without sending anything meanwhile; once the server is there, every line
    /// arrives once.
    func testLinesWaitingTwentySecondsMakeTheEdgeSayWhatItWaitsFor() throws {
        let servers = try NATSTestServers(count: 1)
        self.servers = servers
        let log = directory + "/app.log"
        appendText(log, (0..<100).map(NumberedLineWriter.line).joined())
        let edge = try startEdge([log], urls: servers.urls)
        XCTAssertTrue(waitForLog(edge, "nothing acknowledged for 20 s", timeout: 90),
                      "the edge never said it was waiting: \(edge.errors.suffix(1500))")
        let said = edge.errors.split(separator: "\n").first { $0.contains("nothing acknowledged for 20 s") }.map(String.init) ?? ""
        XCTAssertTrue(said.contains("batches waiting from byte 0"), said)
        XCTAssertTrue(said.contains("stream ready: false"), "it names what it waits for: \(said)")
        XCTAssertFalse(said.contains("sending them again"), "nothing was sent, so nothing is sent again: \(said)")
        try servers.startAll()
        counter = try StreamLineCounter(urls: servers.urls, stream: "LOGS")
        appendText(log, "END\n")
        assertExactlyOnce(100)
    }
}

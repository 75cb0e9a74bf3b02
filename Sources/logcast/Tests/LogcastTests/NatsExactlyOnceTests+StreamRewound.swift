import Foundation
import Glibc
import ReactiveUV
import ReactiveUVNATS
import XCTest

extension NatsExactlyOnceTests {
    /// The stream is deleted and made again under the running edge, so its sequences start
    /// again from 1: the file's next batch is acknowledged below the batches acknowledged
    /// before. That is what the namespaced fault run of issue 33 showed with a window of 1
    /// ("stored at sequence 234, before the file's earlier batch at 236 (out of order)",
    /// twice in a row): the numbering went back. The stream as it is now holds nothing out
    /// of order, so the edge must not say "out of order"; it must say that the stream no
    /// longer holds the batch acknowledged earlier. The edge used to call this a reorder.
    func testAStreamWhoseSequenceGoesBackIsSaidToBeRewoundNotOutOfOrder() throws {
        let servers = try startServers(1)
        let log = directory + "/app.log"
        appendText(log, "")
        let edge = try startEdge([log], urls: servers.urls, extra: ["--http", "127.0.0.1:0"])
        let first = try StreamLineCounter(urls: servers.urls, stream: "LOGS")
        counter = first
        // Several 16 KiB batches, so the last one is acknowledged well above sequence 1.
        appendText(log, (0..<2_000).map(NumberedLineWriter.line).joined())
        XCTAssertTrue(EventLoop.main.run(until: { first.counts.count >= 2_000 }, timeout: 120),
                      "the first lines are stored (\(first.counts.count)); edge: \(edge.errors.suffix(1500))")
        let before = first.lastSequence
        XCTAssertGreaterThan(before, 2, "the first lines went out as several batches")
        first.close()
        counter = nil

        try remakeStream(urls: servers.urls)

        appendText(log, (2_000..<2_100).map(NumberedLineWriter.line).joined())
        let second = try StreamLineCounter(urls: servers.urls, stream: "LOGS")
        counter = second
        XCTAssertTrue(EventLoop.main.run(until: { second.counts.count >= 100 }, timeout: 120),
                      "the new stream gets the new lines (\(second.counts.count)); edge: \(edge.errors.suffix(1500))")
        XCTAssertEqual(second.counts.keys.sorted(), Array(2_000..<2_100), "the new stream holds the new lines only")
        XCTAssertEqual(second.counts.values.filter { $0 > 1 }.count, 0, "a line was stored twice")
        XCTAssertLessThan(second.lastSequence, before, "the new stream numbers its messages below the old one's")

        // The edge's verdict comes after one read of the stream: wait for it.
        XCTAssertTrue(waitForLog(edge, "the stream's sequence went back", timeout: 60),
                      "the edge never said the stream was rewound: \(edge.errors.suffix(1500))")
        XCTAssertTrue(edge.errors.contains("acknowledged at \(before) is no longer there (message \(before) holds no message)"),
                      "the edge names the batch and the message it looked for: \(edge.errors.suffix(1500))")
        XCTAssertFalse(edge.errors.contains("(out of order)"), "a false alarm: \(edge.errors.suffix(1500))")
        // Counted apart in /metrics, for an operator's alert.
        let metrics = try scrapeMetrics(try edge.httpPort())
        XCTAssertEqual(metrics["logcast_nats_edge_sequence_rewinds_total"], 1, "\(metrics.filter { $0.key.contains("nats") })")
        XCTAssertEqual(metrics["logcast_nats_edge_out_of_order_total"], 0, "\(metrics.filter { $0.key.contains("nats") })")
    }

    /// Deletes `LOGS` and makes it again as the edge made it (one replica, `logs.>`, the
    /// edge's default duplicate window), with the test's own connection.
    func remakeStream(urls: [String]) throws {
        let box = ReplayBox<NATSConnection>()
        let connecting = NATS.connect(urls).subscribe(next: { box.value = $0 }, error: { box.error = $0 })
        defer {
            connecting.dispose()
            box.value?.close()
            _ = EventLoop.main.run(until: { box.value?.isClosed ?? true }, timeout: 10)
        }
        XCTAssertTrue(EventLoop.main.run(until: { box.value != nil || box.error != nil }, timeout: 30))
        let js = try XCTUnwrap(box.value, "no connection: \(String(describing: box.error))").jetStream()
        let deleted = ReplayBox<Void>()
        let deleting = js.deleteStream("LOGS").subscribe(next: { deleted.value = () }, error: { deleted.error = $0 })
        defer { deleting.dispose() }
        XCTAssertTrue(EventLoop.main.run(until: { deleted.value != nil || deleted.error != nil }, timeout: 30))
        XCTAssertNil(deleted.error, "deleting the stream")
        let made = ReplayBox<JetStreamInfo>()
        let config = JetStreamConfig(name: "LOGS", subjects: ["logs.>"], replicas: 1, duplicateWindow: 300)
        let making = js.addStream(config).subscribe(next: { made.value = $0 }, error: { made.error = $0 })
        defer { making.dispose() }
        XCTAssertTrue(EventLoop.main.run(until: { made.value != nil || made.error != nil }, timeout: 30))
        XCTAssertEqual(made.value?.lastSequence, 0, "the stream made again is empty: \(String(describing: made.error))")
    }
}

import Foundation
import Glibc
import ReactiveUV
import ReactiveUVNATS
import XCTest

extension NatsExactlyOnceTests {
    /// Every consumer of the stream is deleted on the server, as a cluster can lose one
    /// without telling (issue 33): the hub's live client goes on getting each new line once,
    /// in order. Who makes the consumer again — cnats after its missed heartbeats, or the
    /// library's stall watch — is not asserted (on one server cnats gets there too); that
    /// the hub's clients see no gap and no repeat is.
    func testAHubWhoseConsumerIsDeletedOnTheServerGoesOnServingEveryLineOnce() throws {
        let (servers, log, counter, hub, client) = try startHubOnAStreamOfAThousandLines()

        // The test's own connection, to find and delete the consumers.
        let box = ReplayBox<NATSConnection>()
        let connecting = NATS.connect(servers.urls).subscribe(next: { box.value = $0 }, error: { box.error = $0 })
        defer {
            connecting.dispose()
            box.value?.close()
            _ = EventLoop.main.run(until: { box.value?.isClosed ?? true }, timeout: 10)
        }
        XCTAssertTrue(EventLoop.main.run(until: { box.value != nil || box.error != nil }, timeout: 30))
        let js = try XCTUnwrap(box.value).jetStream()
        func names() -> [String] {
            let got = ReplayBox<[String]>()
            let sub = js.consumerNames(stream: "LOGS").subscribe(next: { got.value = $0 }, error: { got.error = $0 })
            defer { sub.dispose() }
            _ = EventLoop.main.run(until: { got.value != nil || got.error != nil }, timeout: 30)
            return got.value ?? []
        }
        // The hub's live consumer and the counter's exist.
        var before: [String] = []
        let deadline = Date().addingTimeInterval(120)
        while Date() < deadline {
            before = names()
            if before.count == 2 { break }
            _ = EventLoop.main.run(until: { false }, timeout: 0.2)  // polls for the positive marker
        }
        XCTAssertEqual(before.count, 2, "the hub's consumer was not made: \(before)")
        for name in before {
            let done = ReplayBox<Void>()
            let sub = js.deleteConsumer(stream: "LOGS", name: name).subscribe(
                next: { done.value = () }, error: { done.error = $0 })
            XCTAssertTrue(EventLoop.main.run(until: { done.value != nil || done.error != nil }, timeout: 30))
            sub.dispose()
            XCTAssertNil(done.error, "deleting \(name)")
        }

        appendText(log, (1_000..<1_100).map(NumberedLineWriter.line).joined())
        var numbered: [Int] = []
        _ = client.readLines(timeout: 120) { lines in
            numbered = lines.compactMap { NatsExactlyOnceTests.number(in: $0) }
            return numbered.contains(1_099)
        }
        XCTAssertEqual(numbered, Array(1_000..<1_100), "the live client, after its consumer was deleted")
        XCTAssertTrue(EventLoop.main.run(until: { counter.counts.count >= 1_100 }, timeout: 120))
        XCTAssertEqual(counter.counts.filter { $0.value > 1 }.count, 0, "the counter read a line twice")
        print("NatsExactlyOnceTests: the hub's consumer was made again by \(hub.errors.contains("made again from #") ? "the library's stall watch" : "cnats")")
    }
}

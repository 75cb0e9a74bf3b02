import Foundation
import ReactiveUV
import ReactiveUVNATS
import ReactiveUVNATSTestKit
import XCTest

/// What every logcast-against-nats-server test class holds and tears down the same way: the
/// servers it started, the logcast processes, the stream counter and a fresh directory.
///
/// Subclasses add their own members and tear those down in an override of `tearDown` before
/// calling `super.tearDown()` (readers and writers first, then logcast, then the servers, so
/// nothing is left talking to a server that is gone). A test that must also prove its own
/// NATS connections closed sets ``checksConnectionsClosed``.
class NatsEdgeTestCase: XCTestCase {
    var servers: NATSTestServers?
    var processes: [LogcastProcess] = []
    var counter: StreamLineCounter?
    var directory = ""

    /// Whether tearDown waits for the test process's NATS connections to close and fails if
    /// one stays open (the counter's and any the test made itself).
    var checksConnectionsClosed: Bool { false }

    override func setUpWithError() throws {
        guard natsServerPath() != nil else { throw XCTSkip("nats-server is not installed") }
        directory = temporaryDirectory()
    }

    override func tearDown() {
        counter?.close()
        counter = nil
        for p in processes { p.stop() }
        processes = []
        servers?.stopAll()
        servers = nil
        if checksConnectionsClosed {
            _ = EventLoop.main.run(until: { NATS.liveConnections == 0 }, timeout: 10)
            XCTAssertEqual(NATS.liveConnections, 0, "a NATS connection of the test was left open")
        }
        try? FileManager.default.removeItem(atPath: directory)
        super.tearDown()
    }

    /// Starts `count` servers (a cluster when more than one) with `extraConfig` added to each
    /// one's configuration; they are stopped in tearDown.
    func startServers(_ count: Int, extraConfig: String = "") throws -> NATSTestServers {
        let servers = try NATSTestServers(count: count, extraConfig: extraConfig)
        self.servers = servers
        try servers.startAll()
        return servers
    }

    /// Waits until the stream holds `total` distinct lines and END, then checks exactly once
    /// and that the lines without a number are `others`, in stream order.
    func assertExactlyOnce(_ total: Int, others: [String] = [], file: StaticString = #filePath, line: UInt = #line) {
        guard let counter else { return XCTFail("no counter", file: file, line: line) }
        let complete = counter.waitForAll(total)
        let (duplicated, missing) = counter.check(total)
        XCTAssertTrue(complete, "stream holds \(counter.counts.count) of \(total) lines (END: \(counter.sawEnd)); consumer errors: \(counter.consumerErrors); edge: \(processes.last?.errors.suffix(1500) ?? "")", file: file, line: line)
        XCTAssertEqual(missing.count, 0, "missing \(missing.count), first \(missing.prefix(5))", file: file, line: line)
        XCTAssertEqual(duplicated.count, 0, "duplicated \(duplicated.count), first \(duplicated.prefix(5))", file: file, line: line)
        XCTAssertEqual(counter.others, others, file: file, line: line)
    }

    // MARK: Reading the stream's messages

    /// Messages 1...count of stream LOGS, read one by one (with their headers).
    func storedMessages(_ urls: [String], count: UInt64) throws -> [NATSMessage] {
        let box = ReplayBox<NATSConnection>()
        let connecting = NATS.connect(urls).subscribe(next: { box.value = $0 }, error: { box.error = $0 })
        defer {
            box.value?.close()
            _ = EventLoop.main.run(until: { box.value?.isClosed ?? true }, timeout: 10)
            connecting.dispose()
        }
        _ = EventLoop.main.run(until: { box.value != nil || box.error != nil }, timeout: 30)
        if let error = box.error { throw error }
        let js = try XCTUnwrap(box.value).jetStream()
        var messages: [NATSMessage] = []
        guard count > 0 else { return [] }
        for sequence in 1...count {
            let one = ReplayBox<NATSMessage>()
            let d = js.message(stream: "LOGS", sequence: sequence).subscribe(next: { one.value = $0 }, error: { one.error = $0 })
            _ = EventLoop.main.run(until: { one.value != nil || one.error != nil }, timeout: 30)
            d.dispose()
            if let error = one.error { throw error }
            messages.append(try XCTUnwrap(one.value, "no answer for message \(sequence)"))
        }
        return messages
    }

    /// The messages' lines, in stream order, are `L0` … `L<total-1>` (then `END`), each
    /// whole within one message and once.
    func assertInFileOrder(_ messages: [NATSMessage], total: Int, end: Bool = true, line: UInt = #line) {
        var expected = 0
        var sawEnd = false
        for (i, message) in messages.enumerated() {
            XCTAssertEqual(message.payload.last, 10, "message \(i + 1) ends within a line", line: line)
            for text in message.payload.split(separator: 10) {
                if text.elementsEqual("END".utf8) {
                    sawEnd = true
                    continue
                }
                guard let number = numberedLineNumber(text), number == expected else {
                    return XCTFail("message \(i + 1): line \(String(decoding: text.prefix(12), as: UTF8.self)) where L\(expected) was expected", line: line)
                }
                expected += 1
            }
        }
        XCTAssertEqual(expected, total, line: line)
        XCTAssertEqual(sawEnd, end, "END stored", line: line)
    }
}

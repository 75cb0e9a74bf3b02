import Foundation
import Glibc
import ReactiveUV
import ReactiveUVNATS
import ReactiveUVNATSTestKit
import XCTest

/// `--multiline-start` on a NATS edge (`--publish`): against a real nats-server, traces
/// written in bursts reach the stream exactly once, each event whole in one message.
final class LogcastMultilineNatsTests: XCTestCase {
    var servers: NATSTestServers?
    var edge: LogcastProcess?
    var directory = ""
    var connection: NATSConnection?
    var consumer: Disposable?

    override func setUpWithError() throws {
        guard natsServerPath() != nil else { throw XCTSkip("nats-server is not installed") }
        directory = temporaryDirectory()
    }

    override func tearDown() {
        consumer?.dispose()
        consumer = nil
        if let connection {
            connection.close()
            _ = EventLoop.main.run(until: { connection.isClosed }, timeout: 10)
        }
        connection = nil
        edge?.stop()
        edge = nil
        servers?.stopAll()
        servers = nil
        try? FileManager.default.removeItem(atPath: directory)
        super.tearDown()
    }

    /// 24 Java traces (about 700 bytes each), each written in three bursts, to an edge whose
    /// batches hold at most 1 KiB: without the gate most traces would be cut across two
    /// messages (a batch goes out as soon as its bytes are read). Every message must begin
    /// with an event's first line, and the messages together hold every line once, in order.
    func testEdgeNeverSplitsAnEventAcrossMessages() throws {
        let servers = try NATSTestServers(count: 1)
        self.servers = servers
        try servers.startAll()
        let file = directory + "/app.log"
        appendLines(file, ["2026-11-28 00:00:00.000 INFO seq=0 started"])
        let edge = try LogcastProcess([
            file, "--publish", servers.urls.joined(separator: ","), "--stream", "LOGS", "--subject", "logs.test",
            "--state-dir", directory + "/state", "--listen", "127.0.0.1:0", "--batch-bytes", "1024",
            "--multiline-start", LogcastMultilineTests.start, "--multiline-timeout", "0.5",
        ])
        self.edge = edge
        _ = try edge.waitUntilListening()
        var written = ["2026-11-28 00:00:00.000 INFO seq=0 started"]
        let writer = Thread {
            for seq in 1...24 {
                let event = LogcastMultilineTests.javaTrace(seq)
                for part in [event[0..<3], event[3..<7], event[7...]] {
                    appendLines(file, Array(part))
                    usleep(30_000)
                }
            }
        }
        for seq in 1...24 { written += LogcastMultilineTests.javaTrace(seq) }
        writer.start()

        let box = ReplayBox<NATSConnection>()
        let connecting = NATS.connect(servers.urls).subscribe(next: { box.value = $0 }, error: { box.error = $0 })
        defer { connecting.dispose() }
        _ = EventLoop.main.run(until: { box.value != nil || box.error != nil }, timeout: 30)
        let connection = try XCTUnwrap(box.value, "no NATS connection: \(String(describing: box.error))")
        self.connection = connection
        let js = try connection.jetStream()
        // The edge creates the stream once connected: wait for it (bounded).
        let deadline = Date().addingTimeInterval(120)
        while true {
            let info = ReplayBox<JetStreamInfo>()
            let sub = js.streamInfo("LOGS").subscribe(next: { info.value = $0 }, error: { info.error = $0 })
            _ = EventLoop.main.run(until: { info.value != nil || info.error != nil }, timeout: 30)
            sub.dispose()
            if info.value != nil { break }
            guard Date() < deadline else { return XCTFail("the stream never appeared") }
            _ = EventLoop.main.run(until: { false }, timeout: 0.3)
        }
        var messages: [[String]] = []
        var lines = 0
        var lastSequence: UInt64 = 0
        consumer = js.consume(stream: "LOGS", from: .sequence(1)).subscribe(next: { message in
            guard let sequence = message.streamSequence, sequence > lastSequence else { return }
            lastSequence = sequence
            var text = String(decoding: message.payload, as: UTF8.self)
            if text.hasSuffix("\n") { text.removeLast() }
            let got = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            messages.append(got)
            lines += got.count
        })
        // The last trace goes out once the file was quiet for the timeout.
        _ = EventLoop.main.run(until: { lines >= written.count }, timeout: 120)
        XCTAssertEqual(messages.flatMap { $0 }, written, "every line once, in order")
        XCTAssertGreaterThan(messages.count, 12, "the batches are small: many messages")
        for (i, message) in messages.enumerated() {
            XCTAssertTrue(message.first?.hasPrefix("2026-11-28 ") == true, "message \(i) begins inside an event: \(message.first ?? "")")
            XCTAssertLessThanOrEqual(message.joined(separator: "\n").utf8.count + 1, 1024, "message \(i) over --batch-bytes")
        }
        // Each trace whole in one message.
        for seq in 1...24 {
            let event = LogcastMultilineTests.javaTrace(seq)
            XCTAssertEqual(messages.filter { $0.contains(event[0]) }.count, 1)
            XCTAssertTrue(messages.contains { message in
                guard let at = message.firstIndex(of: event[0]) else { return false }
                return Array(message[at..<min(message.count, at + event.count)]) == event
            }, "trace \(seq) is not whole in one message")
        }
    }
}

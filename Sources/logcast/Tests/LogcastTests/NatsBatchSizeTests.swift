import Foundation
import Glibc
import ReactiveUV
import ReactiveUVNATS
import ReactiveUVNATSTestKit
import Testing
import XCTest
@testable import logcast

/// The batch limit for a server's `max_payload`, and batches cut again to a smaller one.
@Suite struct EdgeBatchLimitTests {
    let identity = FileIdentity(device: 1, inode: 2, fingerprint: Array("a\n".utf8))

    @Test func theLimitLeavesRoomForHeadersBelowTheServersMaxPayload() {
        #expect(NatsEdge.batchLimit(requested: 1 << 20, maxPayload: 1 << 20) == (1 << 20) - 8192)
        #expect(NatsEdge.batchLimit(requested: 262_144, maxPayload: 65_536) == 65_536 - 8192)
        #expect(NatsEdge.batchLimit(requested: 16_384, maxPayload: 1 << 20) == 16_384, "a smaller request stays")
        #expect(NatsEdge.batchLimit(requested: 8192, maxPayload: 4096) == 2048, "a tiny limit keeps half for lines")
        #expect(NatsEdge.batchLimit(requested: 8192, maxPayload: nil) == 8192)
    }

    /// Ten lines of 10 bytes in batches of 40, the first sent: cut to 25 bytes, the sent one
    /// splits at a line keeping its start, salt and round; the unsent ones are joined and cut
    /// again at lines (no tiny remainders).
    @Test func batchesAreCutAtLinesAndUnsentOnesAreJoinedFirst() {
        let file = EdgeFile(identity: identity, path: "/x.log", next: 0)
        let line = Array("123456789\n".utf8)
        for i in 0..<10 {
            let chunk = TailChunk(identity: identity, path: "/x.log", offset: Int64(10 * i), endOffset: Int64(10 * i + 10), bytes: line)
            _ = file.take(chunk, batchBytes: 40)
            if i == 3 {
                file.batches[0].firstRound = 0
                file.batches[0].salt = 1
            }
        }
        #expect(file.batches.map { [$0.start, $0.end] } == [[0, 40], [40, 80], [80, 100]])
        file.cut(to: 25)
        #expect(file.batches.map { [$0.start, $0.end] } == [[0, 20], [20, 40], [40, 60], [60, 80], [80, 100]])
        #expect(file.batches[0].salt == 1 && file.batches[0].firstRound == 0, "the first piece keeps its id and round")
        #expect(file.batches[1].salt == 0 && file.batches[1].firstRound == 0)
        #expect(file.batches[2...].allSatisfy { $0.firstRound == nil })
        #expect(file.batches.flatMap(\.bytes) == Array((0..<10).map { _ in line }.joined()), "every byte once, in order")
    }
}


/// The edge's batch size against the server's `max_payload` (NatsEdge+Payload.swift): cut
/// to what the server accepts, as large as it accepts by default, and a trickle of lines
/// still sent at once. Every line is counted by its number in the messages the stream holds.
final class NatsBatchSizeTests: NatsEdgeTestCase {
    override var checksConnectionsClosed: Bool { true }

    func startEdge(_ log: String, urls: [String], extra: [String] = []) throws -> LogcastProcess {
        let edge = try LogcastProcess([log,
            "--publish", urls.joined(separator: ","), "--stream", "LOGS", "--subject", "logs.test",
            "--state-dir", directory + "/state", "--listen", "127.0.0.1:0",
        ] + extra)
        processes.append(edge)
        _ = try edge.waitUntilListening()
        return edge
    }

    /// `from..<to` numbered lines, as the test writers write them.
    func lines(_ range: Range<Int>) -> String { range.map(NumberedLineWriter.line).joined() }

    /// A server refusing messages over 64 KiB and an edge asked for 256 KiB batches (the
    /// edge used to resend its first 256 KiB batch every second, refused each time by cnats
    /// as over the server's limit, and stored nothing): every line is stored once, in file
    /// order, in messages of at most 64 KiB with their headers, and the edge says once
    /// that it cut its batches.
    func testBatchesAreCutToTheServersMaxPayloadAndEveryLineIsStoredOnceInOrder() throws {
        let servers = try startServers(1, extraConfig: "max_payload: 65536")
        let log = directory + "/app.log"
        appendText(log, "")
        let edge = try startEdge(log, urls: servers.urls, extra: ["--batch-bytes", "262144"])
        let counter = try StreamLineCounter(urls: servers.urls, stream: "LOGS")
        self.counter = counter
        XCTAssertEqual(counter.connection?.maxPayload, 65536, "NATSConnection.maxPayload is the server's max_payload")
        // 20,000 lines of ~87 bytes (1.7 MB): 27 messages at the least.
        let total = 20_000
        appendText(log, lines(0..<(total / 2)))
        appendText(log, lines((total / 2)..<total) + "END\n")
        assertExactlyOnce(total)
        let messages = try storedMessages(servers.urls, count: counter.lastSequence)
        XCTAssertGreaterThanOrEqual(messages.count, 27)
        for (i, message) in messages.enumerated() {
            XCTAssertLessThanOrEqual(messageBytes(message), 65536, "message \(i + 1) over the server's max_payload")
        }
        assertInFileOrder(messages, total: total)
        let said = edge.errors.components(separatedBy: "batches are cut to").count - 1
        XCTAssertEqual(said, 1, "the edge says once that it cut its batches: \(edge.errors.suffix(1500))")
        XCTAssertFalse(edge.errors.contains("greater than maximum allowed"), "a batch was refused: \(edge.errors.suffix(1500))")
    }

    /// The default batch against a default server (1 MiB `max_payload`): lines read while
    /// the server is away (the edge's client sees them, so they are all queued) go out in
    /// messages near 1 MiB, larger than the old default of 256 KiB; then a trickle of single
    /// lines, each awaited in the stream before the next is written, is sent at once, one
    /// line a message (no waiting for a batch to fill).
    func testTheDefaultBatchIsAsLargeAsADefaultServerAcceptsAndATrickleIsSentAtOnce() throws {
        let servers = try NATSTestServers(count: 1)
        self.servers = servers
        let log = directory + "/app.log"
        appendText(log, "")
        // The server is not started yet: the edge queues what it reads.
        let edge = try startEdge(log, urls: servers.urls)
        let client = try LineClient(port: edge.port)
        let bulk = 30_000  // 2.6 MB
        appendText(log, lines(0..<bulk))
        let last = "L\(bulk - 1) "
        let seen = client.readLines(timeout: 120) { $0.last?.contains(last) ?? false }
        XCTAssertTrue(seen.last?.contains(last) ?? false, "the edge did not read the file: \(edge.errors.suffix(1500))")
        try servers.startAll()
        let counter = try StreamLineCounter(urls: servers.urls, stream: "LOGS")
        self.counter = counter
        XCTAssertTrue(counter.waitForAll(bulk, end: false), "stream holds \(counter.counts.count) of \(bulk); edge: \(edge.errors.suffix(1500))")
        let bulkMessages = try storedMessages(servers.urls, count: counter.lastSequence)
        let large = bulkMessages.filter { $0.payload.count > 256 << 10 }
        let largeBytes = large.reduce(0) { $0 + $1.payload.count }
        XCTAssertGreaterThanOrEqual(largeBytes, 2_000_000,
                                    "lines in messages over 256 KiB: \(largeBytes) bytes; sizes \(bulkMessages.map(\.payload.count))")
        for message in bulkMessages { XCTAssertLessThanOrEqual(messageBytes(message), 1 << 20) }
        // The trickle: each line alone in the stream before the next is written.
        let trickle = 5
        for n in bulk..<(bulk + trickle) {
            appendText(log, NumberedLineWriter.line(n))
            XCTAssertTrue(counter.waitForAll(n + 1, end: false, stall: 60, timeout: 120), "line \(n) was not stored: \(edge.errors.suffix(1500))")
        }
        let messages = try storedMessages(servers.urls, count: counter.lastSequence)
        let trickled = messages.suffix(trickle).map { String(decoding: $0.payload, as: UTF8.self) }
        XCTAssertEqual(trickled, (bulk..<(bulk + trickle)).map(NumberedLineWriter.line), "each trickled line went out alone, at once")
        assertInFileOrder(messages, total: bulk + trickle, end: false)
    }

    /// The server restarted with a smaller `max_payload` (64 KiB) while the edge queued a
    /// backlog in 1 MiB batches: after the reconnect the edge reads the new limit and cuts
    /// what it queued (and what was in flight) to it; every line is stored once, in order,
    /// and every message stored after the restart fits the new limit.
    func testAReconnectToAServerWithASmallerLimitCutsTheQueuedBatches() throws {
        let servers = try startServers(1)
        let server = try XCTUnwrap(servers.servers.first)
        let log = directory + "/app.log"
        appendText(log, "")
        let edge = try startEdge(log, urls: servers.urls)
        let client = try LineClient(port: edge.port)
        let counter = try StreamLineCounter(urls: servers.urls, stream: "LOGS")
        self.counter = counter
        let first = 5_000
        appendText(log, lines(0..<first))
        XCTAssertTrue(counter.waitForAll(first, end: false), "stream holds \(counter.counts.count) of \(first); edge: \(edge.errors.suffix(1500))")
        let before = counter.lastSequence
        server.stop(SIGTERM)
        // Queued while the server is away (the edge's client sees every line taken).
        let total = 30_000
        appendText(log, lines(first..<total) + "END\n")
        let seen = client.readLines(timeout: 120) { $0.last?.hasSuffix("END") ?? false }
        XCTAssertTrue(seen.last?.hasSuffix("END") ?? false, "the edge did not read the file: \(edge.errors.suffix(1500))")
        let config = try String(contentsOfFile: server.configPath, encoding: .utf8)
        try (config + "\nmax_payload: 65536\n").write(toFile: server.configPath, atomically: true, encoding: .utf8)
        try server.start()
        assertExactlyOnce(total)
        let messages = try storedMessages(servers.urls, count: counter.lastSequence)
        assertInFileOrder(messages, total: total)
        for (i, message) in messages.enumerated().dropFirst(Int(before)) {
            XCTAssertLessThanOrEqual(messageBytes(message), 65536, "message \(i + 1), stored after the restart, over the new limit")
        }
        XCTAssertTrue(edge.errors.contains("at most 65536 bytes"), "the edge says it cut its batches: \(edge.errors.suffix(1500))")
        // Cut on reconnecting, before sending: not by the fallback after a refusal.
        XCTAssertFalse(edge.errors.contains("greater than maximum allowed"), "a batch was refused: \(edge.errors.suffix(1500))")
    }

    // MARK: Message sizes

    /// A message's size as the server counts it against `max_payload`: payload and headers
    /// (`NATS/1.0\r\n`, `Name: value\r\n` each, `\r\n`).
    func messageBytes(_ message: NATSMessage) -> Int {
        message.payload.count + 12 + message.headers.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count + 4 }
    }
}

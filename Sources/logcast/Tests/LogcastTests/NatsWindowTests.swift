import Foundation
import Glibc
import ReactiveUV
import ReactiveUVNATS
import ReactiveUVNATSTestKit
import Testing
import XCTest
@testable import logcast

/// The edge's window: several batches of a file in flight, each keeping its bytes and
/// bounds from its first send (a resend is the same message, so the stream dedupes it).
@Suite struct EdgeWindowBatchTests {
    let identity = FileIdentity(device: 1, inode: 2, fingerprint: Array("L0\n".utf8))

    func chunk(_ text: String, at offset: Int64) -> TailChunk {
        let bytes = Array(text.utf8)
        return TailChunk(identity: identity, path: "/x.log", offset: offset, endOffset: offset + Int64(bytes.count), bytes: bytes)
    }

    @Test func linesReadAfterASendGoIntoANewBatchNotIntoTheOneInFlight() {
        let file = EdgeFile(identity: identity, path: "/x.log", next: 0)
        _ = file.take(chunk("a\n", at: 0), batchBytes: 1024)
        _ = file.take(chunk("b\n", at: 2), batchBytes: 1024)
        #expect(file.batches.count == 1, "unsent lines are merged up to the limit")
        file.sent = 1
        file.batches[0].firstRound = 0
        _ = file.take(chunk("c\n", at: 4), batchBytes: 1024)
        _ = file.take(chunk("d\n", at: 6), batchBytes: 1024)
        #expect(file.batches.map { [$0.start, $0.end] } == [[0, 4], [4, 8]])
        #expect(file.batches[0].bytes == Array("a\nb\n".utf8), "the sent batch kept its bytes")
        file.sent = 2
        file.batches[1].firstRound = 0
        _ = file.take(chunk("e\n", at: 8), batchBytes: 1024)
        #expect(file.batches.map(\.start) == [0, 4, 8])
        // A new round (nothing in flight) keeps what was sent as it was sent.
        file.restartRound(closing: true)
        _ = file.take(chunk("f\n", at: 10), batchBytes: 1024)
        #expect(file.batches.map { [$0.start, $0.end] } == [[0, 4], [4, 8], [8, 12]], "only the never-sent batch grew")
    }

    @Test func aNewRoundSendsFromTheFirstBatchWithTheSameBounds() {
        let file = EdgeFile(identity: identity, path: "/x.log", next: 0)
        for (i, line) in ["a\n", "b\n", "c\n"].enumerated() {
            _ = file.take(chunk(line, at: Int64(2 * i)), batchBytes: 1024)
            file.sent = file.batches.count
            file.batches[file.batches.count - 1].firstRound = file.round
        }
        let round = file.round
        file.restartRound()
        #expect(file.round == round + 1)
        #expect(file.sent == 0)
        #expect(file.batches.map { [$0.start, $0.end] } == [[0, 2], [2, 4], [4, 6]])
    }

    @Test func theWindowComesFromTheEnvironmentWithinItsBounds() {
        setenv("LOGCAST_NATS_WINDOW", "3", 1)
        #expect(NatsEdge.windowSetting() == 3)
        setenv("LOGCAST_NATS_WINDOW", "0", 1)
        #expect(NatsEdge.windowSetting() == 1, "out of range: the default, one batch in flight")
        setenv("LOGCAST_NATS_WINDOW", "many", 1)
        #expect(NatsEdge.windowSetting() == 1)
        unsetenv("LOGCAST_NATS_WINDOW")
        #expect(NatsEdge.windowSetting() == 1)
    }
}

/// A window of 8 (`LOGCAST_NATS_WINDOW=8`, not the default) against a real 3-node
/// cluster: with several batches in flight, a killed stream leader must leave every line
/// once; a batch stored before an earlier one of its file (what a window can do under a
/// leader change, see `NatsEdge.windowSetting`) must be said by the edge, never silent.
/// The default window of 1, strictly in order, meets the same kills in NatsFaultTests.
final class NatsWindowTests: NatsEdgeTestCase {
    var reader: StreamOrderReader?

    override func tearDown() {
        reader?.close()
        reader = nil
        super.tearDown()
    }

    /// Two files written at once, small batches (so each file has many in flight), the
    /// leader SIGKILLed twice while the writers run and restarted each time.
    func testTwoFilesStayInFileOrderByStreamSequenceWhenTheLeaderIsKilled() throws {
        let servers = try startServers(3)
        let logs = [directory + "/a.log", directory + "/b.log"]
        for log in logs { appendText(log, "") }
        let edge = try LogcastProcess(logs + [
            "--publish", servers.urls.joined(separator: ","), "--stream", "LOGS", "--subject", "logs.test",
            "--state-dir", directory + "/state", "--listen", "127.0.0.1:0", "--batch-bytes", "8192",
            "--stream-replicas", "3",
        ], wrapper: ["/usr/bin/env", "LOGCAST_NATS_WINDOW=8"])
        processes.append(edge)
        _ = try edge.waitUntilListening()
        let reader = try StreamOrderReader(urls: servers.urls, stream: "LOGS", timeout: 180)
        self.reader = reader
        // Disjoint numbers per file: a.log 0..<40k, b.log 100k..<140k.
        let perFile = 40_000
        let writerA = NumberedLineWriter(path: logs[0], rate: 10_000)
        let writerB = OffsetLineWriter(path: logs[1], first: 100_000, rate: 10_000)
        writerA.start(until: perFile)
        writerB.start(count: perFile)
        for mark in [8_000, 24_000] {
            XCTAssertTrue(reader.wait { reader.counts.count >= mark }, "stream holds \(reader.counts.count) lines; edge: \(edge.errors.suffix(1500))")
            // The stream's info may time out while the cluster is busy: ask again.
            var name: String?
            let deadline = Date().addingTimeInterval(90)
            while name == nil && Date() < deadline { name = reader.leader() }
            let leaderName = try XCTUnwrap(name, "no stream leader")
            let leader = try XCTUnwrap(servers.server(named: leaderName))
            leader.stop(SIGKILL)
            let before = reader.counts.count
            // (The writers may have finished already: then "progress" is the rest.)
            let target = min(before + 4_000, 2 * perFile)
            XCTAssertTrue(reader.wait { reader.counts.count >= target }, "no progress after the leader's death: stream at \(reader.counts.count); consumer errors \(reader.consumerErrors); edge: \(edge.errors.suffix(3000))")
            try leader.start()
        }
        XCTAssertTrue(writerA.wait())
        XCTAssertTrue(writerB.wait())
        appendText(logs[1], "END\n")
        let expected = Array(0..<perFile) + Array(100_000..<(100_000 + perFile))
        XCTAssertTrue(reader.wait { reader.sawEnd && expected.allSatisfy { reader.counts[$0] != nil } },
                      "stream holds \(reader.counts.count) of \(expected.count); consumer errors \(reader.consumerErrors); edge: \(edge.errors.suffix(1500))")
        let missing = expected.filter { reader.counts[$0] == nil }
        let duplicated = reader.counts.filter { $0.value > 1 }.map(\.key).sorted()
        XCTAssertEqual(missing.count, 0, "missing \(missing.count), first \(missing.prefix(5))")
        let said = edge.errors.split(separator: "\n").filter { !$0.contains("was already in the stream") }.suffix(60).joined(separator: "\n")
        XCTAssertEqual(duplicated.count, 0, "duplicated \(duplicated.count), first \(duplicated.prefix(5)); the edge said: \(said)")
        // Order: whatever the stream holds out of file order, the edge noticed and said.
        let toldOrder = edge.errors.contains("(out of order)")
        XCTAssertEqual(reader.inversions.isEmpty, !toldOrder,
                       "the stream holds \(reader.inversions.count) lines out of file order (first \(reader.inversions.prefix(3))); the edge said so: \(toldOrder)")
        print("NatsWindowTests: window 8, two leader kills: \(reader.inversions.count) lines out of file order (the edge said so: \(toldOrder))")
    }
}

/// Appends `L<n>` lines numbered from `first` (``NumberedLineWriter`` numbers from 0), so
/// two files written at once hold disjoint numbers.
final class OffsetLineWriter: @unchecked Sendable {
    private let first: Int
    private let path: String
    private let rate: Int
    private let done = DispatchSemaphore(value: 0)

    init(path: String, first: Int, rate: Int) {
        self.path = path
        self.first = first
        self.rate = rate
    }

    /// Writes `count` lines from a thread of its own, paced at ~`rate` lines/s.
    func start(count: Int) {
        let (path, first, rate, done) = (path, first, rate, done)
        Thread {
            let perTick = max(1, rate / 200)
            var n = first
            while n < first + count {
                var text = ""
                for k in n..<min(first + count, n + perTick) { text += NumberedLineWriter.line(k) }
                appendText(path, text)
                n += perTick
                usleep(5_000)
            }
            done.signal()
        }.start()
    }

    /// Waits until every line is written.
    func wait(timeout: Double = 120) -> Bool { done.wait(timeout: .now() + timeout) == .success }
}

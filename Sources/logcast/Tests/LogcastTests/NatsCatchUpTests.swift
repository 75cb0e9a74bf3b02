import Foundation
import Glibc
import ReactiveUV
import ReactiveUVNATS
import ReactiveUVNATSTestKit
import Testing
import XCTest
@testable import logcast

/// The pause before a resend after a failed publish (``NatsEdge/resendPause(after:backoff:)``):
/// after a timeout or JetStream's "in process" the first pause, the back-off unchanged; after
/// anything else the back-off, doubled up to its longest; never 0.
@Suite struct EdgeResendPauseTests {
    let timeout = NATSError(status: .timeout, operation: "publish", target: "logs.edge")
    let inProcess = NATSError(status: .generic, operation: "publish", target: "logs.edge", serverCode: 10158)
    let noResponders = NATSError(status: .noResponders, operation: "publish", target: "logs.edge")

    @Test func aTimeoutOrAnInProcessAnswerIsResentAfterTheFirstPauseWithoutGrowingTheBackoff() {
        for error in [timeout, inProcess] {
            for backoff in [NatsEdge.firstBackoff, NatsEdge.longestBackoff] {
                let (delay, next) = NatsEdge.resendPause(after: error, backoff: backoff)
                #expect(delay == NatsEdge.firstBackoff, "\(error)")
                #expect(next == backoff, "\(error)")
            }
        }
    }

    @Test func aStoredCopyReadThatTheClusterCouldNotAnswerYetIsTriedAgainSoon() {
        let unavailable = NATSError(status: .generic, operation: "get message", target: "LOGS #1302", serverCode: 10008)
        let denied = NATSError(status: .generic, operation: "get message", target: "LOGS #1302", serverCode: 10003)
        #expect(NatsEdge.storedCopyRetryPause(after: unavailable) == NatsEdge.firstBackoff)
        #expect(NatsEdge.storedCopyRetryPause(after: timeout) == NatsEdge.firstBackoff)
        #expect(NatsEdge.storedCopyRetryPause(after: denied) == 1)
    }

    @Test func noRespondersBacksOffDoublingUpToTheLongestPause() {
        var backoff = NatsEdge.firstBackoff
        var delays: [Double] = []
        for _ in 0..<4 {
            let (delay, next) = NatsEdge.resendPause(after: noResponders, backoff: backoff)
            delays.append(delay)
            backoff = next
        }
        #expect(delays == [0.25, 0.5, 0.5, 0.5])
        #expect(NatsEdge.longestBackoff <= 0.5, "a pause runs on after the cluster is whole again")
        #expect(NatsEdge.publishTimeout <= 1, "a batch sent into a partition waits this out after the heal")
    }
}

/// Catch-up after a fault (issue 33 §2: "after healing, every line written meanwhile stored
/// within 2 s"): what the edge queued while the stream could not be reached goes out in few
/// messages near the batch limit, not one message per write the follower read, because with
/// one batch per file in flight each message costs one round trip to the stream's leader
/// (a replicated commit with 3 replicas). (Checked 2026-11-28 because the slow recoveries
/// of the fault test were taken for many small backlog batches: the backlog was already in
/// full batches, `EdgeFile.take` adds new lines to the last batch never sent, and it went
/// out in ~100 ms; the time went to the publish timeout and back-offs, `resendPause`.) Counted here in the messages the stream holds, on
/// one real nats-server that is SIGSTOPped while a writer appends in many small writes (a
/// stopped server, like a cut-off leader, leaves the edge's publish unanswered until it
/// times out), then continued.
final class NatsCatchUpTests: NatsEdgeTestCase {
    var stopped: pid_t?
    override var checksConnectionsClosed: Bool { true }

    override func tearDown() {
        if let stopped { kill(stopped, SIGCONT) }
        super.tearDown()
    }

    /// 20,000 lines (1.7 MB) appended 25 at a time (800 writes, as a logging program at
    /// 5,000 lines/s writes them) while the server is stopped: once it runs again, the lines
    /// stored after it are in at most 4 messages (1.7 MB in batches of 1 MiB less the header
    /// room is 2; one more for the batch that was in flight when the server stopped, one
    /// for a cut at an unlucky read), every line once and in file order.
    func testABacklogQueuedWhileTheStreamIsAwayGoesOutInFewFullBatches() throws {
        let servers = try startServers(1)
        let server = try XCTUnwrap(servers.servers.first)
        let pid = try XCTUnwrap(server.pid)
        let log = directory + "/app.log"
        appendText(log, "")
        let edge = try LogcastProcess([log,
            "--publish", servers.urls.joined(separator: ","), "--stream", "LOGS", "--subject", "logs.test",
            "--state-dir", directory + "/state", "--listen", "127.0.0.1:0",
        ])
        processes.append(edge)
        _ = try edge.waitUntilListening()
        let client = try LineClient(port: edge.port)
        let counter = try StreamLineCounter(urls: servers.urls, stream: "LOGS")
        self.counter = counter

        // Before the fault: a first part, stored (the edge is past its start-up).
        let first = 2_000, total = 22_000
        let writer = NumberedLineWriter(path: log, rate: 5_000)
        writer.start(until: first)
        XCTAssertTrue(writer.wait())
        XCTAssertTrue(counter.waitForAll(first, end: false), "stream holds \(counter.counts.count) of \(first); edge: \(edge.errors.suffix(1500))")
        let before = counter.lastSequence

        // The fault: the server stopped while the writer goes on in small writes; the edge
        // reads them all (its local client sees the last one) while nothing can be stored.
        XCTAssertEqual(kill(pid, SIGSTOP), 0)
        stopped = pid
        writer.start(until: total)
        XCTAssertTrue(writer.wait())
        let last = "L\(total - 1) "
        let seen = client.readLines(timeout: 120) { $0.last?.contains(last) ?? false }
        XCTAssertTrue(seen.last?.contains(last) ?? false, "the edge did not read the file: \(edge.errors.suffix(1500))")
        appendText(log, "END\n")

        // The heal.
        XCTAssertEqual(kill(pid, SIGCONT), 0)
        stopped = nil
        assertExactlyOnce(total)

        let messages = try storedMessages(servers.urls, count: counter.lastSequence)
        assertInFileOrder(messages, total: total)
        let backlog = messages.dropFirst(Int(before))
        let sizes = backlog.map(\.payload.count)
        print("NatsCatchUpTests: \(backlog.count) messages after the server continued, bytes \(sizes.prefix(20))\(sizes.count > 20 ? " …" : "")")
        XCTAssertGreaterThan(sizes.reduce(0, +), 1_700_000, "the lines written while the server was stopped are stored after it")
        XCTAssertLessThanOrEqual(backlog.count, 4, "the backlog went out in \(backlog.count) messages of \(sizes.prefix(40)) bytes")
    }
}

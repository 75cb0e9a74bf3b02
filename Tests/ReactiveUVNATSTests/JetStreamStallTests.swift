import Foundation
import ReactiveUV
import ReactiveUVNATS
import XCTest

/// An ordered consumer whose server-side consumer stops delivering — deleted on the server,
/// the server paused past the heartbeat, the server killed and started again on its store —
/// goes on delivering every message once and in order, and says when it was made again.
final class JetStreamStallTests: NATSTestCase {
    /// Publishes `range` as `prefix<n>` (ids too) to `subject` and waits for every
    /// acknowledgement; returns each payload by the sequence the stream stored it at
    /// (publishes retried after a failure may be stored in another order than sent).
    @discardableResult
    func publish(_ js: JetStream, _ subject: String, _ range: ClosedRange<Int>, prefix: String = "m") -> [UInt64: String] {
        let acked = Box<[UInt64: String]>([:])
        let errors = Box<[Error]>([])
        for i in range {
            let payload = "\(prefix)\(i)"
            subscriptions.append(js.publish(subject, payload: Array(payload.utf8), id: payload).subscribe(
                next: { acked.value[$0.sequence] = payload }, error: { errors.value.append($0) }, completed: {}))
        }
        XCTAssertTrue(waitFor(120) { acked.value.count + errors.value.count == range.count }, "acknowledged \(acked.value.count)")
        XCTAssertEqual(errors.value.count, 0, "\(errors.value.prefix(3))")
        return acked.value
    }

    /// What one consumer got, on the loop.
    final class Received {
        var sequences: [UInt64] = []
        var payloads: [String] = []
        var error: Error?
        var completed = false
    }

    func record(_ signal: Signal<NATSMessage>) -> Received {
        let got = Received()
        subscriptions.append(signal.subscribe(
            next: { got.sequences.append($0.streamSequence ?? 0); got.payloads.append(String(decoding: $0.payload, as: UTF8.self)) },
            error: { got.error = $0 }, completed: { got.completed = true }))
        return got
    }

    /// Deletes every consumer of `stream` on the server, waiting until it holds `expected`
    /// first (ordered consumers are made off the loop).
    func deleteConsumers(_ js: JetStream, _ stream: String, expected: Int) throws -> [String] {
        var names: [String] = []
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            names = try awaitValue(js.consumerNames(stream: stream))
            if names.count == expected { break }
            _ = waitFor(0.2) { false }  // polls for the positive marker (the consumer listed)
        }
        XCTAssertEqual(names.count, expected, "consumers: \(names)")
        for name in names { _ = try awaitValue(js.deleteConsumer(stream: stream, name: name)) }
        return names
    }

    /// The consumer is deleted on the server. cnats 3.4 would make it again only after 10 s
    /// without a heartbeat; the watch (a 1 s stall timeout here) does it once the stream is
    /// found holding more, from the first sequence not delivered: every message once, in
    /// order, and the restart is reported with that sequence.
    func testAConsumerDeletedOnTheServerIsMadeAgainFromTheNextSequence() throws {
        let servers = try startServers(1)
        let connection = try connect(servers.urls)
        let js = try connection.jetStream(requestTimeout: 5)
        _ = try addStream(js, JetStreamConfig(name: "D", subjects: ["d"]))
        publish(js, "d", 1...200)
        let restarts = Box<[JetStreamConsumerRestart]>([])
        subscriptions.append(js.consumerRestarts.subscribeNext { restarts.value.append($0) })
        let got = record(js.consume(stream: "D", stallTimeout: 1))
        XCTAssertTrue(waitFor { got.sequences.count == 200 }, "got \(got.sequences.count)")

        let deleted = try deleteConsumers(js, "D", expected: 1)
        publish(js, "d", 201...400)
        XCTAssertTrue(waitFor(60) { got.sequences.count >= 400 || got.error != nil },
                      "got \(got.sequences.count) of 400 after the consumer was deleted; restarts \(restarts.value)")
        XCTAssertNil(got.error)
        XCTAssertEqual(got.sequences, Array(1...400), "every message once, in stream order")
        XCTAssertEqual(got.payloads, (1...400).map { "m\($0)" })
        XCTAssertEqual(js.consumerRestartCount, restarts.value.count)
        let restart = try XCTUnwrap(restarts.value.first, "the restart was reported")
        XCTAssertEqual(restart.stream, "D")
        XCTAssertNil(restart.subject)
        XCTAssertEqual(restart.restartedFrom, 201, "made again from the first sequence not delivered")
        XCTAssertEqual(restart.streamLastSequence, 400)
        XCTAssertGreaterThanOrEqual(restart.silentFor, 1)
        // The server drops a consumer nobody listens to: one is left, ours.
        var now: [String] = []
        let restartedAt = Date()
        while Date().timeIntervalSince(restartedAt) < 60 {
            now = try awaitValue(js.consumerNames(stream: "D"))
            if now.count == 1 { break }
            _ = waitFor(0.5) { false }  // polls for the positive marker (one consumer listed)
        }
        print("JetStreamStallTests: consumers after the restart: \(now), \(Date().timeIntervalSince(restartedAt)) s")
        XCTAssertEqual(now.count, 1, "one consumer again: \(now)")
        XCTAssertFalse(now.contains(deleted[0]))
        connection.close()
        XCTAssertTrue(waitFor { got.completed }, "completes when the connection closes")
    }

    /// With a filter subject, the stream growing on another subject is not "more": the
    /// consumer is checked and left alone; a message of its own subject brings a restart.
    func testAFilteredConsumerIsMadeAgainOnlyWhenItsOwnSubjectHoldsMore() throws {
        let servers = try startServers(1)
        let connection = try connect(servers.urls)
        let js = try connection.jetStream(requestTimeout: 5)
        _ = try addStream(js, JetStreamConfig(name: "F", subjects: ["f.a", "f.b"]))
        publish(js, "f.a", 1...50, prefix: "a")
        let got = record(js.consume(stream: "F", subject: "f.a", stallTimeout: 0.6))
        XCTAssertTrue(waitFor { got.sequences.count == 50 })
        _ = try deleteConsumers(js, "F", expected: 1)
        publish(js, "f.b", 1...50, prefix: "b")  // sequences 51...100, not ours
        // Two checks that found nothing of f.a at or beyond 51 (the marker), no restart.
        XCTAssertTrue(waitFor(60) { js.stallChecks >= 2 }, "checks: \(js.stallChecks)")
        XCTAssertEqual(js.consumerRestartCount, 0, "other subjects' messages are not a stall")
        XCTAssertEqual(js.stallCheckFailures, 0, "\(String(describing: js.lastStallCheckError))")
        publish(js, "f.a", 51...60, prefix: "a")  // sequences 101...110
        XCTAssertTrue(waitFor(60) { got.sequences.count >= 60 }, "got \(got.sequences.count)")
        XCTAssertEqual(got.sequences, Array(1...50) + Array(101...110))
        XCTAssertEqual(got.payloads, (1...60).map { "a\($0)" })
        XCTAssertEqual(js.consumerRestartCount, 1)
        // The probe consumers the checks made are gone again, and the server dropped the
        // silent one nobody listens to: only ours is left.
        var now: [String] = []
        let restartedAt = Date()
        while Date().timeIntervalSince(restartedAt) < 60 {
            now = try awaitValue(js.consumerNames(stream: "F"))
            if now.count == 1 { break }
            _ = waitFor(0.5) { false }  // polls for the positive marker (one consumer listed)
        }
        print("JetStreamStallTests: filtered: consumers after the restart: \(now), \(Date().timeIntervalSince(restartedAt)) s")
        XCTAssertEqual(now.count, 1, "\(now)")
    }

    /// A reader that holds its consumer back with a closed gate for several stall timeouts
    /// is not stalled: no check, no restart, and everything arrives once the gate opens.
    func testAConsumerHeldBackByItsGateIsNotTakenForSilent() throws {
        let servers = try startServers(1)
        let connection = try connect(servers.urls)
        let js = try connection.jetStream(requestTimeout: 5)
        _ = try addStream(js, JetStreamConfig(name: "H", subjects: ["h"]))
        publish(js, "h", 1...100)
        let gate = ConsumerGate()
        let got = Received()
        subscriptions.append(js.consume(stream: "H", bufferLimit: 4, gate: gate, stallTimeout: 0.3).subscribeNext { message in
            got.sequences.append(message.streamSequence ?? 0)
            if message.streamSequence == 20 { gate.close() }
        })
        XCTAssertTrue(waitFor { got.sequences.count >= 20 && gate.isClosed })
        // The span of the absence: ten stall timeouts with the gate closed.
        _ = waitFor(3) { false }
        XCTAssertEqual(js.stallChecks, 0, "a closed gate is the reader's choice, not silence")
        gate.open()
        XCTAssertTrue(waitFor { got.sequences.count == 100 }, "got \(got.sequences.count)")
        XCTAssertEqual(got.sequences, Array(1...100))
        XCTAssertEqual(js.consumerRestartCount, 0)
    }

    /// The server is paused (SIGSTOP) past cnats's 10 s heartbeat limit while the consumer
    /// waits for more, messages are published to it after it resumes; then it is killed and
    /// started again on the same port and store. Every message once and in order, whatever
    /// recovered the consumer (cnats itself or the watch), and no check storm while the
    /// server did not answer.
    func testAPausedThenRestartedServerLosesAndRepeatsNothing() throws {
        let servers = try startServers(1)
        let server = servers.servers[0]
        var options = NATSOptions()
        options.reconnectWait = 0.2
        let connection = try connect(servers.urls, options: options)
        let js = try connection.jetStream(requestTimeout: 2)
        _ = try addStream(js, JetStreamConfig(name: "P", subjects: ["p"]))
        var stored = publish(js, "p", 1...100)
        let got = record(js.consume(stream: "P", stallTimeout: 2))
        XCTAssertTrue(waitFor { got.sequences.count == 100 })

        let paused = try XCTUnwrap(server.pid)
        XCTAssertEqual(kill(paused, SIGSTOP), 0)
        _ = waitFor(12) { false }  // past cnats's missed-heartbeat limit (2 × 5 s)
        XCTAssertEqual(kill(paused, SIGCONT), 0)
        // At most one check per tick (2/3 s) while paused, whatever failed: 18 in 12 s at the
        // very most (a check that fails at once, while cnats reconnects, comes back at the
        // next tick); a loop without that bound would have made thousands.
        XCTAssertLessThanOrEqual(js.stallChecks, 25, "no storm of checks while the server was paused")
        stored.merge(publish(js, "p", 101...200)) { a, _ in a }
        XCTAssertTrue(waitFor(90) { got.sequences.count >= 200 || got.error != nil },
                      "after the pause: got \(got.sequences.count) of 200; restarts \(js.consumerRestartCount)")

        server.stop(SIGKILL)
        try server.start()
        stored.merge(publish(js, "p", 201...300)) { a, _ in a }
        XCTAssertTrue(waitFor(90) { got.sequences.count >= 300 || got.error != nil },
                      "after the restart: got \(got.sequences.count) of 300; restarts \(js.consumerRestartCount)")
        XCTAssertNil(got.error)
        XCTAssertEqual(got.sequences, Array(1...300), "every message once, in stream order")
        XCTAssertEqual(got.payloads, (1...300).map { stored[UInt64($0)] ?? "?" }, "each message as stored")
        XCTAssertEqual(Set(got.payloads), Set((1...300).map { "m\($0)" }))
        print("JetStreamStallTests: pause and restart: \(js.consumerRestartCount) restarts by the watch, \(js.stallChecks) checks, \(js.stallCheckFailures) failed")
    }

    /// A 3-node cluster and a stream of 3 replicas: its leader is paused (SIGSTOP) for 5 s,
    /// then killed and started again after 3 s, while messages go on being stored (by a new
    /// leader), as logcast's edge goes on writing. The consumer (a replica of one, on one of
    /// the stream's servers) delivers every message once and in order after each.
    /// Loopback cannot cut a server off as logcast's namespaced fault test does (where the
    /// silence was seen); these faults are the nearest it can make.
    func testAStreamLeaderPausedThenKilledWhileMessagesAreStoredLosesAndRepeatsNothing() throws {
        let servers = try startServers(3)
        var options = NATSOptions()
        options.reconnectWait = 0.1
        let connection = try connect(servers.urls, options: options)
        let js = try connection.jetStream(requestTimeout: 2, window: 64)
        _ = try addStream(js, JetStreamConfig(name: "C", subjects: ["c"], replicas: 3))
        var total = 100
        var stored = publish(js, "c", 1...total)
        let got = record(js.consume(stream: "C"))
        XCTAssertTrue(waitFor { got.sequences.count == total })
        for fault in ["SIGSTOP for 5 s", "SIGKILL, restarted after 3 s"] {
            let info = try awaitValue(js.streamInfo("C"))
            let leader = try XCTUnwrap(servers.server(named: info.leader ?? ""), "no leader: \(info)")
            let faultAt = Date()
            if fault.hasPrefix("SIGSTOP") {
                let pid = try XCTUnwrap(leader.pid)
                XCTAssertEqual(kill(pid, SIGSTOP), 0)
                stored.merge(publish(js, "c", (total + 1)...(total + 100))) { a, _ in a }
                _ = waitFor(max(0, 5 - Date().timeIntervalSince(faultAt))) { false }  // the span of the pause
                XCTAssertEqual(kill(pid, SIGCONT), 0)
            } else {
                leader.stop(SIGKILL)
                stored.merge(publish(js, "c", (total + 1)...(total + 100))) { a, _ in a }
                _ = waitFor(max(0, 3 - Date().timeIntervalSince(faultAt))) { false }  // the span of the outage
                try leader.start()
            }
            total += 100
            stored.merge(publish(js, "c", (total + 1)...(total + 100))) { a, _ in a }
            total += 100
            XCTAssertTrue(waitFor(120) { got.sequences.count >= total || got.error != nil },
                          "after the leader's \(fault): got \(got.sequences.count) of \(total); restarts \(js.consumerRestartCount)")
        }
        XCTAssertNil(got.error)
        XCTAssertEqual(got.sequences, (1...total).map { UInt64($0) }, "every message once, in stream order")
        XCTAssertEqual(got.payloads, (1...total).map { stored[UInt64($0)] ?? "?" }, "each message as stored")
        print("JetStreamStallTests: cluster: \(js.consumerRestartCount) restarts by the watch, \(js.stallChecks) checks, \(js.stallCheckFailures) failed")
    }
}

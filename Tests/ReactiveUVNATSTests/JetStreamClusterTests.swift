import Foundation
import ReactiveUV
import ReactiveUVNATS
import XCTest

/// A 3-node cluster and a stream of 3 replicas: the leader is killed mid-stream.
final class JetStreamClusterTests: NATSTestCase {
    func testKillingTheStreamLeaderLosesNothingAndDuplicatesNothing() throws {
        let servers = try startServers(3)
        var options = NATSOptions()
        options.reconnectWait = 0.1
        let connection = try connect(servers.urls, options: options)
        let js = try connection.jetStream(requestTimeout: 2, window: 64)
        let info = try addStream(js, JetStreamConfig(name: "C", subjects: ["c.>"], replicas: 3))
        XCTAssertEqual(info.replicaNames.count, 2, "two followers besides the leader")
        let leaderName = try XCTUnwrap(info.leader)
        let leader = try XCTUnwrap(servers.server(named: leaderName))

        let total = 3000
        let acked = Box<[Int: JetStreamAck]>([:])
        let failures = Box<[Error]>([])
        for i in 0..<total {
            subscriptions.append(js.publish("c.x", payload: Array("line \(i)".utf8), id: "c-\(i)").subscribe(
                next: { acked.value[i] = $0 }, error: { failures.value.append($0) }, completed: {}))
        }
        XCTAssertTrue(waitFor { acked.value.count >= 500 })
        leader.stop(SIGKILL)
        let killedAt = acked.value.count
        XCTAssertTrue(waitFor(120) { acked.value.count >= min(total, killedAt + 500) || !failures.value.isEmpty },
                      "publishing resumes on a new leader (acked \(acked.value.count))")
        try leader.start()
        XCTAssertTrue(waitFor(180) { acked.value.count + failures.value.count == total },
                      "acknowledged \(acked.value.count) of \(total)")
        XCTAssertEqual(failures.value.count, 0, "\(failures.value.prefix(3))")

        // Exactly once: the stream holds `total` messages, one per id.
        let stored = try awaitValue(js.streamInfo("C"))
        XCTAssertEqual(stored.messages, UInt64(total))
        XCTAssertNotEqual(stored.leader, nil)
        // The killed node catches up: the leader then lists both other nodes as replicas,
        // the killed one among the three, each current and none behind.
        var healed: JetStreamInfo?
        let healDeadline = Date().addingTimeInterval(120)
        while healed == nil && Date() < healDeadline {
            let now = try awaitValue(js.streamInfo("C"))
            if now.replicas.count == 2 && now.replicas.allSatisfy({ $0.current && !$0.offline && $0.lag == 0 }) {
                healed = now
            } else {
                _ = waitFor(0.5) { false }
            }
        }
        let whole = try XCTUnwrap(healed, "the replicas never all caught up")
        XCTAssertEqual(Set(whole.replicas.map(\.name) + [whole.leader ?? ""]).count, 3)
        XCTAssertTrue(whole.replicas.map(\.name).contains(leaderName) || whole.leader == leaderName)
        XCTAssertEqual(whole.replicaNames, whole.replicas.map(\.name))
        // Read back with a consumer made again after a failure (from after the last message
        // read): right after the old leader's return the cluster can still let a consumer's
        // creation time out (a CI run saw "replayed 0" with a single try).
        let replayed = Box<[String]>([])
        let lastSequence = Box<UInt64>(0)
        let consumerErrors = Box<[String]>([])
        let failed = Box(false)
        let consumer = SerialDisposable()
        subscriptions.append(consumer)
        let deadline = Date().addingTimeInterval(120)
        while replayed.value.count < total && Date() < deadline {
            failed.value = false
            consumer.inner = js.consume(stream: "C", from: .sequence(lastSequence.value + 1)).subscribe(
                next: { message in
                    lastSequence.value = message.streamSequence ?? lastSequence.value
                    replayed.value.append(message.messageID ?? "?")
                },
                error: { error in
                    consumerErrors.value.append("\(error)")
                    failed.value = true
                },
                completed: {})
            _ = waitFor(deadline.timeIntervalSinceNow) { replayed.value.count >= total || failed.value }
            if failed.value { _ = waitFor(0.5) { false } }
        }
        XCTAssertEqual(replayed.value.count, total, "consumer errors \(consumerErrors.value)")
        XCTAssertEqual(Set(replayed.value), Set((0..<total).map { "c-\($0)" }))
    }
}

/// An ordered consumer made the moment a 3-replica stream exists (what logcast's stream
/// reader does right after the edge created the stream) must deliver every message.
final class JetStreamClusterConsumerTests: NATSTestCase {
    func testAnOrderedConsumerMadeRightAfterAReplicatedStreamAppearsDeliversEverything() throws {
        let servers = try startServers(3)
        let connection = try connect(servers.urls)
        let js = try connection.jetStream(requestTimeout: 5, window: 64)
        _ = try addStream(js, JetStreamConfig(name: "R", subjects: ["r.>"], replicas: 3))
        let received = Box<[String]>([])
        let failure = Box<Error?>(nil)
        let done = Box(false)
        let started = Date()
        subscriptions.append(js.consume(stream: "R").subscribe(
            next: { received.value.append(String(decoding: $0.payload, as: UTF8.self)) },
            error: { failure.value = $0; print("consumer failed after \(Date().timeIntervalSince(started)) s: \($0)") },
            completed: { done.value = true }))
        let total = 2000
        let acked = Box(0)
        for i in 0..<total {
            subscriptions.append(js.publish("r.x", payload: Array("m\(i)".utf8), id: "r-\(i)").subscribe(
                next: { _ in acked.value += 1 }, error: { failure.value = $0 }, completed: {}))
        }
        XCTAssertTrue(waitFor(120) { acked.value == total || failure.value != nil }, "acknowledged \(acked.value)")
        XCTAssertTrue(waitFor(120) { received.value.count >= total || failure.value != nil },
                      "received \(received.value.count) of \(total); error: \(String(describing: failure.value))")
        XCTAssertNil(failure.value)
        XCTAssertEqual(received.value, (0..<total).map { "m\($0)" })
    }
}

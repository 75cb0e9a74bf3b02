import Foundation
import ReactiveUV
import ReactiveUVNATS
import XCTest

/// JetStream on one real server: streams, acknowledged publishing with ids, replay.
final class JetStreamTests: NATSTestCase {
    /// Publishes `ids` (payload = id) and waits for every acknowledgement.
    func publishAll(_ js: JetStream, subject: String, _ ids: [String], timeout: Double = 120) -> [String: JetStreamAck] {
        let acks = Box<[String: JetStreamAck]>([:])
        let errors = Box<[Error]>([])
        for id in ids {
            subscriptions.append(js.publish(subject, payload: Array(id.utf8), id: id).subscribe(
                next: { acks.value[id] = $0 }, error: { errors.value.append($0) }, completed: {}))
        }
        XCTAssertTrue(waitFor(timeout) { acks.value.count + errors.value.count == ids.count },
                      "acknowledged \(acks.value.count) of \(ids.count)")
        XCTAssertEqual(errors.value.count, 0, "\(errors.value.prefix(3))")
        return acks.value
    }

    func testPublishIsAcknowledgedWithSequencesAndRepeatedIdsAreDuplicates() throws {
        let servers = try startServers(1)
        let connection = try connect(servers.urls)
        let js = try connection.jetStream(window: 32)
        let info = try addStream(js, JetStreamConfig(name: "T", subjects: ["t.>"]))
        XCTAssertEqual(info.name, "T")
        XCTAssertEqual(info.messages, 0)

        let ids = (1...500).map { "m\($0)" }
        let acks = publishAll(js, subject: "t.a", ids)
        XCTAssertEqual(acks.count, 500)
        XCTAssertEqual(Set(acks.values.map(\.sequence)), Set(1...500), "every message stored once, numbered 1...500")
        XCTAssertTrue(acks.values.allSatisfy { !$0.duplicate && $0.stream == "T" })
        XCTAssertEqual(js.inFlight, 0)

        // The same ids again: acknowledged as duplicates, nothing new stored.
        let again = publishAll(js, subject: "t.a", Array(ids.prefix(50)))
        XCTAssertTrue(again.values.allSatisfy(\.duplicate))
        XCTAssertEqual(again["m7"]?.sequence, acks["m7"]?.sequence)
        let after = try awaitValue(js.streamInfo("T"))
        XCTAssertEqual(after.messages, 500)
        XCTAssertEqual(after.lastSequence, 500)
    }

    func testHeadersTravelAndAStoredMessageCanBeFetchedBySequence() throws {
        let servers = try startServers(1)
        let connection = try connect(servers.urls)
        let js = try connection.jetStream()
        _ = try addStream(js, JetStreamConfig(name: "H", subjects: ["h"]))
        let before = Int64(Date().timeIntervalSince1970 * 1e9)
        let ack = try awaitValue(js.publish("h", payload: Array("body".utf8), id: "h-1", headers: ["Logcast-Range": "0-4"]))
        let again = try awaitValue(js.publish("h", payload: Array("longer body".utf8), id: "h-1", headers: ["Logcast-Range": "0-11"]))
        XCTAssertTrue(again.duplicate)
        XCTAssertEqual(again.sequence, ack.sequence, "a duplicate names the stored copy")
        let stored = try awaitValue(js.message(stream: "H", sequence: again.sequence))
        XCTAssertEqual(stored.headers["Logcast-Range"], "0-4", "the first copy is the one stored")
        XCTAssertEqual(stored.messageID, "h-1")
        XCTAssertEqual(String(decoding: stored.payload, as: UTF8.self), "body")
        // When the stream stored it (the server's clock, on this host): within the test's run.
        let time = try XCTUnwrap(stored.timestamp, "a fetched message carries its stored time")
        XCTAssertGreaterThanOrEqual(time, before - 1_000_000_000)
        XCTAssertLessThanOrEqual(time, Int64(Date().timeIntervalSince1970 * 1e9) + 1_000_000_000)
        let missing = try XCTUnwrap(awaitError(js.message(stream: "H", sequence: 99)) as? NATSError)
        XCTAssertEqual(missing.operation, "get message")
    }

    func testTheWindowBoundsMessagesInFlight() throws {
        let servers = try startServers(1)
        let connection = try connect(servers.urls)
        let js = try connection.jetStream(window: 8)
        _ = try addStream(js, JetStreamConfig(name: "W", subjects: ["w"], storage: .memory))
        let maxInCnats = Box(0)
        let acked = Box(0)
        for i in 0..<200 {
            subscriptions.append(js.publish("w", payload: [UInt8(i & 0xff)], id: "w\(i)").subscribe(
                next: { _ in acked.value += 1 }, error: { XCTFail("\($0)") }, completed: {}))
        }
        // Everything was queued at once; at most `window` went to cnats.
        XCTAssertEqual(js.inFlight, 200)
        XCTAssertFalse(js.hasRoom)
        let rooms = Box(0)
        js.whenRoom { rooms.value += 1 }
        XCTAssertTrue(waitFor {
            maxInCnats.value = max(maxInCnats.value, js.unacknowledged)
            return acked.value == 200
        })
        XCTAssertTrue(js.hasRoom)
        XCTAssertGreaterThan(maxInCnats.value, 0)
        XCTAssertLessThanOrEqual(maxInCnats.value, 8, "never more than the window sent and unacknowledged")
        XCTAssertGreaterThan(rooms.value, 0, "the room callback ran once the window drained")
    }

    func testNoRespondersIsRetriedAfterGrowingPausesNotInAStorm() throws {
        let servers = try startServers(1)
        let connection = try connect(servers.urls)
        let js = try connection.jetStream(requestTimeout: 1)
        _ = try addStream(js, JetStreamConfig(name: "S", subjects: ["s"]))
        // A stored message and a stream that refuses: a publish expecting another stream.
        let ack = try awaitValue(js.publish("s", payload: [1], id: "one"))
        XCTAssertEqual(ack.sequence, 1)
        // Nobody answers on "nowhere": publishes pause and retry (no storm), never store.
        let errors = Box(0)
        let sub = js.publish("nowhere", payload: [1], id: "x").subscribe(next: { _ in XCTFail("stored?") },
                                                                        error: { _ in errors.value += 1 }, completed: {})
        XCTAssertTrue(waitFor(30) { js.retries >= 4 }, "retries: \(js.retries)")
        // Pauses of 0.25, 0.5, 1 and 2 s: four retries take ~1.75 s; without a pause
        // "no responders" comes back at once and the count would be in the thousands.
        XCTAssertLessThanOrEqual(js.retries, 6)
        XCTAssertEqual(js.inFlight, 1)
        sub.dispose()
        XCTAssertEqual(errors.value, 0, "retried, not failed")
    }

    func testStreamsThatCannotBeCreatedAreClearErrors() throws {
        let servers = try startServers(1)
        let connection = try connect(servers.urls)
        let js = try connection.jetStream(requestTimeout: 5)
        // Three replicas without a cluster.
        let replicas = try XCTUnwrap(awaitError(js.addStream(JetStreamConfig(name: "R3", subjects: ["r3"], replicas: 3))) as? NATSError)
        XCTAssertEqual(replicas.operation, "add stream")
        XCTAssertEqual(replicas.target, "R3")
        XCTAssertEqual(replicas.serverCode, 10074, replicas.description)
        // The same name with another configuration.
        _ = try addStream(js, JetStreamConfig(name: "A", subjects: ["a"]))
        let clash = try XCTUnwrap(awaitError(js.addStream(JetStreamConfig(name: "A", subjects: ["b"]))) as? NATSError)
        XCTAssertEqual(clash.serverCode, 10058, clash.description)
        // A name the server refuses.
        let badName = try XCTUnwrap(awaitError(js.addStream(JetStreamConfig(name: "a.b", subjects: ["c"]))) as? NATSError)
        XCTAssertTrue(badName.description.contains("add stream on a.b"), badName.description)
        // A stream that does not exist.
        let missing = try XCTUnwrap(awaitError(js.streamInfo("NOPE")) as? NATSError)
        XCTAssertEqual(missing.serverCode, 10059, missing.description)
        // The connection still works after all that.
        XCTAssertEqual(try awaitValue(js.publish("a", payload: [1], id: nil)).sequence, 1)
    }

    func testOrderedConsumerReplaysFromASequenceOrATimeThenGoesLive() throws {
        let servers = try startServers(1)
        let connection = try connect(servers.urls)
        let js = try connection.jetStream()
        _ = try addStream(js, JetStreamConfig(name: "L", subjects: ["l.>"]))
        let firstBatch = publishAll(js, subject: "l.x", (1...300).map { "e\($0)" })
        XCTAssertEqual(firstBatch.count, 300)

        // From a sequence.
        let fromSequence = Box<[NATSMessage]>([])
        subscriptions.append(js.consume(stream: "L", from: .sequence(101)).subscribeNext { fromSequence.value.append($0) })
        XCTAssertTrue(waitFor { fromSequence.value.count == 200 }, "got \(fromSequence.value.count)")
        XCTAssertEqual(fromSequence.value.map { $0.streamSequence! }, Array(101...300))
        XCTAssertEqual(fromSequence.value.map { String(decoding: $0.payload, as: UTF8.self) }, (101...300).map { "e\($0)" })
        XCTAssertEqual(fromSequence.value.first?.messageID, "e101")

        // From a time: the timestamp of message 250.
        let stamp = try XCTUnwrap(fromSequence.value.first { $0.streamSequence == 250 }?.timestamp)
        let fromTime = Box<[UInt64]>([])
        let timeError = Box<Error?>(nil)
        subscriptions.append(js.consume(stream: "L", subject: "l.>", from: .time(stamp)).subscribe(
            next: { fromTime.value.append($0.streamSequence!) }, error: { timeError.value = $0 }, completed: {}))
        XCTAssertTrue(waitFor { (fromTime.value.last ?? 0) == 300 || timeError.value != nil })
        XCTAssertNil(timeError.value)
        XCTAssertLessThanOrEqual(fromTime.value.first ?? 0, 250)
        XCTAssertEqual(fromTime.value, Array((fromTime.value.first ?? 0)...300), "in order without gaps")

        // Then live: new messages reach both consumers in order.
        _ = publishAll(js, subject: "l.y", (301...350).map { "e\($0)" })
        XCTAssertTrue(waitFor { fromSequence.value.count == 250 && fromTime.value.last == 350 })
        XCTAssertEqual(fromSequence.value.map { $0.streamSequence! }, Array(101...350))
        XCTAssertEqual(fromSequence.value.last?.subject, "l.y")

        // A consumer of a stream that does not exist fails clearly.
        let error = try XCTUnwrap(awaitError(js.consume(stream: "NOPE")) as? NATSError)
        XCTAssertTrue(error.description.contains("NOPE"), error.description)
    }

    func testAClosedGateHoldsAConsumersDeliveriesBackUntilItOpens() throws {
        let servers = try startServers(1)
        let connection = try connect(servers.urls)
        let js = try connection.jetStream()
        _ = try addStream(js, JetStreamConfig(name: "G", subjects: ["g"]))
        _ = publishAll(js, subject: "g", (1...300).map { "g\($0)" })

        // Closed from the start: nothing, while an ungated consumer of the same stream gets all.
        let gate = ConsumerGate()
        gate.close()
        let gated = Box<[UInt64]>([])
        let free = Box<Int>(0)
        subscriptions.append(js.consume(stream: "G", bufferLimit: 1, gate: gate).subscribeNext { message in
            gated.value.append(message.streamSequence!)
            // Closed again from inside delivery at the 100th: at most the one message already
            // handed to the loop and the one being handed over follow.
            if message.streamSequence == 100 { gate.close() }
        })
        subscriptions.append(js.consume(stream: "G").subscribeNext { _ in free.value += 1 })
        XCTAssertTrue(waitFor { free.value == 300 })
        _ = EventLoop.main.run(until: { !gated.value.isEmpty }, timeout: 0.5)
        XCTAssertEqual(gated.value, [], "a closed gate delivers nothing")
        XCTAssertTrue(gate.isClosed)

        gate.open()
        XCTAssertTrue(waitFor { gated.value.count >= 100 })
        _ = EventLoop.main.run(until: { gated.value.count > 102 }, timeout: 0.5)
        XCTAssertLessThanOrEqual(gated.value.count, 102, "held back again after the 100th")
        XCTAssertTrue(gate.isClosed)

        gate.open()
        XCTAssertTrue(waitFor { gated.value.count == 300 }, "got \(gated.value.count)")
        XCTAssertEqual(gated.value, Array(1...300), "in order, each once")
    }

    /// After a reconnect cnats 3.4 restarts every ordered consumer from "the last sequence it
    /// received + 1": 1 for a consumer that has received nothing yet, whatever its start.
    /// A consumer of new messages on a quiet stream (the hub's live feed) then got the whole
    /// stream again; now every consumer still starts where it was asked to.
    func testAReconnectBeforeTheFirstMessageDoesNotSendTheStreamFromItsStartAgain() throws {
        let servers = try startServers(1)
        let connection = try connect(servers.urls)
        let events = Box<[NATSConnectionEvent]>([])
        subscriptions.append(connection.events.subscribeNext { events.value.append($0) })
        let js = try connection.jetStream()
        _ = try addStream(js, JetStreamConfig(name: "Q", subjects: ["q"]))
        _ = publishAll(js, subject: "q", (1...100).map { "q\($0)" })

        let fresh = Box<[UInt64]>([])
        let fromEnd = Box<[UInt64]>([])
        let fromTime = Box<[UInt64]>([])
        let later = Int64(Date().timeIntervalSince1970 * 1e9) + 1_000_000_000
        subscriptions.append(js.consume(stream: "Q", from: .new).subscribeNext { fresh.value.append($0.streamSequence!) })
        subscriptions.append(js.consume(stream: "Q", from: .sequence(101)).subscribeNext { fromEnd.value.append($0.streamSequence!) })
        subscriptions.append(js.consume(stream: "Q", from: .time(later)).subscribeNext { fromTime.value.append($0.streamSequence!) })
        let deadline = Date().addingTimeInterval(60)
        while (try? awaitValue(js.streamInfo("Q")).consumers) != 3 && Date() < deadline { _ = waitFor(0.1) { false } }
        XCTAssertEqual(try awaitValue(js.streamInfo("Q")).consumers, 3)

        // The server goes and comes back (its file store keeps the stream): cnats reconnects
        // and restarts the three consumers.
        servers.servers[0].stop(SIGKILL)
        XCTAssertTrue(waitFor { events.value.contains(.disconnected) }, "events: \(events.value)")
        try servers.servers[0].start()
        XCTAssertTrue(waitFor { events.value.contains(.reconnected(servers.urls[0])) }, "events: \(events.value)")
        _ = waitFor(2) { false }  // the restarted consumers would send 1...100 now
        XCTAssertEqual(fresh.value, [], "nothing stored before the consumer was made")
        XCTAssertEqual(fromEnd.value, [])

        // New messages (stored a second after `later` at least) reach all three, once each.
        _ = waitFor(1.5) { false }
        _ = publishAll(js, subject: "q", (101...110).map { "q\($0)" })
        XCTAssertTrue(waitFor { fresh.value.count >= 10 && fromEnd.value.count >= 10 && fromTime.value.count >= 10 },
                      "new \(fresh.value), from 101 \(fromEnd.value), from a time \(fromTime.value); events \(events.value)")
        _ = waitFor(0.5) { false }
        XCTAssertEqual(fresh.value, Array(101...110))
        XCTAssertEqual(fromEnd.value, Array(101...110))
        XCTAssertEqual(fromTime.value, Array(101...110))
    }
}

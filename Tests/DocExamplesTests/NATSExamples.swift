import Foundation
import XCTest

import ReactiveUV
import ReactiveUVNATS
import ReactiveUVNATSTestKit

// ReactiveUVNATS.md's example, run against a real nats-server (ReactiveUVNATSTestKit starts
// it on a free loopback port with its store in a temporary directory, and stops it by pid).

/// ReactiveUVNATS.md, "A first stream": connect, make a stream, publish a message with an
/// id, and read the stream back from its start.
func natsExample(servers: [String], print: @escaping (String) -> Void) -> Disposable {
    NATS.connect(servers)                                         // Signal<NATSConnection>; disposing closes
        .flattenMap { connection -> Signal<NATSMessage> in
            let js: JetStream
            do { js = try connection.jetStream(window: 256) }    // ≤ 256 publishes unacknowledged
            catch { return .error(error) }
            return js.addStream(JetStreamConfig(name: "LOGS", subjects: ["logs.>"]))
                .flattenMap { _ in js.publish("logs.web1", payload: Array("hello".utf8), id: "web1/1@0") }
                .flattenMap { ack in
                    print("stored as \(ack.sequence)")
                    return js.consume(stream: "LOGS", from: .all).take(1)   // ordered replay, then live
                }
        }
        .subscribe(next: { message in print(String(decoding: message.payload, as: UTF8.self)) },
                   error: { print("failed: \($0)") })
}

final class NATSExampleTests: XCTestCase {
    func testTheExampleStoresAMessageAndReadsItBack() throws {
        guard natsServerPath() != nil else { throw XCTSkip("nats-server is not installed (scripts/ensure-deps.sh installs it)") }
        let servers = try NATSTestServers(count: 1)
        defer { servers.stopAll() }
        try servers.startAll()

        let before = MainLoopHoldings.now
        let printed = Printed()
        let example = natsExample(servers: servers.urls, print: printed.print)
        XCTAssertTrue(runMainLoop(timeout: 60) { printed.lines.count >= 2 }, "\(printed.lines)")
        XCTAssertEqual(printed.lines, ["stored as 1", "hello"])
        example.dispose()
        // A closed connection is destroyed on the loop once cnats's handles have left it.
        XCTAssertTrue(runMainLoop(timeout: 30) { NATS.liveConnections == 0 }, "connections left: \(NATS.liveConnections)")
        assertMainLoopHandlesClosed(since: before)
    }
}

/// ReactiveUVNATS.md, "The rest of the surface" (compiled; the JetStream calls run in
/// ReactiveUVNATSTests against real servers).
func natsSurface(connection: NATSConnection, js: JetStream, bytes: [UInt8]) -> [Any] {
    let events = connection.events                          // .disconnected, .reconnected(url), .closed, .error — on the loop
    let limit = connection.maxPayload                       // the server's max_payload (headers count); read again after .reconnected
    let unsent = connection.unsentBytes                     // published bytes not yet at the server (cnats's buffer + the socket's queue)
    let messages = connection.subscribe("logs.>")            // Signal<NATSMessage>
    let sent = connection.publish("logs.web1", payload: bytes)        // core NATS: no acknowledgement
    let replay = js.consume(stream: "LOGS", from: .sequence(1000))    // also .time(ns), .all, .new
    let info = js.streamInfo("LOGS")
    let seventh = js.message(stream: "LOGS", sequence: 7)
    let deleted = js.deleteStream("LOGS")
    return [events, limit as Any, unsent as Any, messages, sent, replay, info, seventh, deleted]
}

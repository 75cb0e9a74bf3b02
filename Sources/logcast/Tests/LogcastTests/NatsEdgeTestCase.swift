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
}

import Foundation
import Glibc
import ReactiveUV
import ReactiveUVNATS
import ReactiveUVNATSTestKit
import XCTest

/// logcast's clean exit closes cnats's library (`NATS.closeLibrary`, `nats_CloseAndWait`)
/// once its NATS connections are destroyed, so cnats's threads are joined before the process
/// exits: an edge that shipped lines exits 0 on SIGTERM and says (at debug level) that the
/// library was closed, with no connection left.
final class NatsLibraryCloseTests: NatsEdgeTestCase {
    func testAnEdgeExitingOnSIGTERMClosesCnatsAfterItsConnection() throws {
        let daemon = try startShippingLogcast(hub: false)
        assertSIGTERMClosesTheLibraryOnce(daemon)
    }

    /// The same with a hub (`--from`) in the process as well: its connection (and its
    /// consumer's) are destroyed before the library is closed.
    func testAnEdgeAndHubExitingOnSIGTERMCloseCnatsAfterTheirConnections() throws {
        let daemon = try startShippingLogcast(hub: true)
        // Both the edge and the hub connected (each says so once).
        let deadline = Date().addingTimeInterval(30)
        while daemon.errors.components(separatedBy: "nats: connected to").count - 1 < 2 && Date() < deadline { usleep(100_000) }
        XCTAssertEqual(daemon.errors.components(separatedBy: "nats: connected to").count - 1, 2, "\(daemon.errors.suffix(1500))")
        assertSIGTERMClosesTheLibraryOnce(daemon)
    }

    /// A logcast at debug level shipping one file to a one-server stream (and reading it
    /// back as a hub with `hub`), returned once 100 lines it shipped are in the stream: the
    /// positive marker that its connection works.
    func startShippingLogcast(hub: Bool) throws -> LogcastProcess {
        let servers = try startServers(1)
        let log = directory + "/app.log"
        appendText(log, "")
        let urls = servers.urls.joined(separator: ",")
        let daemon = try LogcastProcess([log, "--publish", urls] + (hub ? ["--from", urls] : []) + [
            "--stream", "LOGS", "--subject", "logs.test",
            "--state-dir", directory + "/state", "--listen", "127.0.0.1:0", "--log-level", "debug",
        ])
        processes.append(daemon)
        _ = try daemon.waitUntilListening()
        let counter = try StreamLineCounter(urls: servers.urls, stream: "LOGS")
        defer { counter.close() }
        appendText(log, (0..<100).map(NumberedLineWriter.line).joined())
        XCTAssertTrue(counter.waitForAll(100, end: false), "stream holds \(counter.counts.count) of 100; logcast: \(daemon.errors.suffix(1500))")
        return daemon
    }

    /// Sends SIGTERM and checks that logcast exits 0 having said once that cnats's library
    /// was closed.
    func assertSIGTERMClosesTheLibraryOnce(_ daemon: LogcastProcess, line: UInt = #line) {
        daemon.signal(SIGTERM)
        XCTAssertEqual(daemon.waitForExit(timeout: 30), 0, "logcast did not exit 0 on SIGTERM: \(daemon.errors.suffix(1500))", line: line)
        let said = daemon.errors.split(separator: "\n").filter { $0.contains("nats: library") }
        XCTAssertEqual(said.count, 1, "what logcast said of cnats's library: \(said); \(daemon.errors.suffix(1500))", line: line)
        XCTAssertTrue(said.first?.hasSuffix("nats: library closed") ?? false,
                      "cnats's library was not closed at exit: \(said)", line: line)
    }
}

import Glibc
import XCTest

@testable import ReactiveUV
@testable import ReactiveUVTLS

/// `TLS.listen(stopAccepting:)`, as `TCP.listen(stopAccepting:)`: the listening socket
/// closes when the signal fires (new connects refused by the kernel), the connection
/// already accepted goes on, and disposing still closes everything.
final class TLSStopAcceptingTests: XCTestCase {
    func testStopAcceptingRefusesNewConnectsWhileTheAcceptedConnectionGoesOn() throws {
        let certs = try TestCertificates()
        defer { certs.remove() }
        let loop = try EventLoop()
        let draining = Subject<Void>()
        var port = 0
        var accepted = 0
        let server = Recorder<Void>()
        let listening = server.subscribe(
            TLS.listen(port: 0, certificate: certs.server, key: certs.serverKey, stopAccepting: draining, on: loop, onListening: { port = $0.port })
                .flattenMap { c -> Signal<Void> in
                    accepted += 1
                    return c.send(c.reads).then { c.shutdown() }.catchTo(.empty())
                })
        XCTAssertTrue(loop.run(until: { port != 0 || server.terminated }, timeout: 60), "listening")
        XCTAssertNil(server.error)

        // A client connected before the drain: it keeps its connection after it.
        var client: TLSConnection?
        var lines: [String] = []
        let connect = Recorder<Void>()
        let connected = connect.subscribe(
            TLS.connect(host: "127.0.0.1", port: port, serverName: "localhost", trust: .certificateAuthorities(path: certs.ca), on: loop)
                .flattenMap { c -> Signal<Void> in
                    client = c
                    return Signal.merge([c.write("before\n"), c.lines.map { lines.append($0) }])
                })
        XCTAssertTrue(loop.run(until: { lines == ["before"] || connect.terminated }, timeout: 60), "\(lines) \(connect.events)")
        XCTAssertEqual(accepted, 1)

        draining.sendNext(())
        // The listening socket closes at once: a new connect is refused by the kernel.
        var lastConnect = "not tried"
        let deadline = deadlineIn(60)
        var refused = false
        while !refused && monotonicSeconds() < deadline {
            let attempt = Recorder<TCPConnection>()
            let d = attempt.subscribe(TCP.connect(host: "127.0.0.1", port: port, on: loop).take(1))
            _ = loop.run(until: { attempt.terminated }, timeout: 30)
            d.dispose()
            if let error = attempt.error as? UVError {
                lastConnect = "\(error)"
                refused = abs(Int(error.code)) == Int(ECONNREFUSED)
            } else {
                lastConnect = "accepted"
            }
        }
        XCTAssertTrue(refused, "new connects are refused once stopAccepting fired (last: \(lastConnect))")
        XCTAssertEqual(accepted, 1, "nothing accepted after the drain")
        XCTAssertFalse(server.terminated, "the listen signal neither completes nor fails: it owns the accepted connection")

        // The accepted connection still echoes.
        let wrote = Recorder<Void>()
        wrote.subscribe(try XCTUnwrap(client).write("after\n"))
        XCTAssertTrue(loop.run(until: { lines.count == 2 || connect.terminated }, timeout: 60), "\(lines) \(connect.events)")
        XCTAssertEqual(lines, ["before", "after"])
        XCTAssertTrue(wrote.completed)

        XCTAssertNil(connect.error)
        // Disposing the subscriptions closes both ends.
        connected.dispose()
        listening.dispose()
        assertLoopCleanAndClose(loop)
    }
}

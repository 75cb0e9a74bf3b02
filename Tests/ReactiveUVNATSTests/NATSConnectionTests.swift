import Foundation
import ReactiveUV
import ReactiveUVNATS
import ReactiveUVNATSTestKit
import XCTest

/// Core NATS on one real server: connect, subscribe, publish, errors, reconnects.
final class NATSConnectionTests: NATSTestCase {
    func testPublishedMessagesArriveInOrderOnTheLoopThread() throws {
        let servers = try startServers(1)
        let connection = try connect(servers.urls)
        XCTAssertTrue(connection.isConnected)
        XCTAssertEqual(connection.connectedURL, servers.urls[0])

        let received = Box<[String]>([])
        let onLoopThread = Box(true)
        let loop = self.loop!
        subscriptions.append(connection.subscribe("greet.*").subscribeNext { message in
            if !loop.isCurrentThread { onLoopThread.value = false }
            received.value.append("\(message.subject) \(String(decoding: message.payload, as: UTF8.self))")
        })
        for i in 0..<200 {
            subscriptions.append(connection.publish("greet.\(i % 2 == 0 ? "even" : "odd")", payload: Array("hello \(i)".utf8)).subscribe())
        }
        XCTAssertTrue(waitFor { received.value.count == 200 }, "received \(received.value.count) of 200")
        XCTAssertEqual(received.value, (0..<200).map { "greet.\($0 % 2 == 0 ? "even" : "odd") hello \($0)" })
        XCTAssertTrue(onLoopThread.value, "messages must arrive on the connection's loop thread")
    }

    func testDisposingTheConnectSubscriptionClosesTheConnection() throws {
        let servers = try startServers(1)
        let events = Box<[NATSConnectionEvent]>([])
        let completed = Box(false)
        let connection = Box<NATSConnection?>(nil)
        let subscription = NATS.connect(servers.urls, on: loop).subscribe(
            next: { c in
                connection.value = c
                _ = c.events.subscribeNext { events.value.append($0) }
            }, error: { XCTFail("\($0)") }, completed: { completed.value = true })
        XCTAssertTrue(waitFor { connection.value != nil })
        let messageEnded = Box(false)
        subscriptions.append(connection.value!.subscribe("x").subscribe(next: { _ in }, error: { _ in }, completed: { messageEnded.value = true }))
        subscription.dispose()
        XCTAssertTrue(waitFor { events.value.contains(.closed) }, "events: \(events.value)")
        XCTAssertTrue(connection.value!.isClosed)
        XCTAssertTrue(waitFor { messageEnded.value }, "a subscription completes when its connection closes")
        XCTAssertFalse(completed.value, "a disposed subscription sends nothing more")
        // A publish on a closed connection is a clear error, not a crash.
        let error = awaitError(connection.value!.publish("x", payload: [1]))
        XCTAssertEqual((error as? NATSError)?.status, .connectionClosed)
    }

    func testBadURLsAreClearErrorsBeforeAnyAttempt() throws {
        for url in ["http://127.0.0.1:4222", "nats://127.0.0.1:99999", "nats://:4222", "nats://127.0.0.1:port"] {
            let error = awaitError(NATS.connect([url], on: loop))
            let nats = try XCTUnwrap(error as? NATSError, "\(url): \(String(describing: error))")
            XCTAssertEqual(nats.status, .invalidArgument, url)
            XCTAssertEqual(nats.target, url)
            XCTAssertTrue(nats.description.contains("during connect on \(url)"), nats.description)
        }
        let none = awaitError(NATS.connect([], on: loop)) as? NATSError
        XCTAssertEqual(none?.status, .invalidArgument)
    }

    func testRefusedConnectionFailsWithNoServer() throws {
        let port = freeLoopbackPort()  // nothing listens there
        let url = "nats://127.0.0.1:\(port)"
        let error = try XCTUnwrap(awaitError(NATS.connect([url], on: loop)) as? NATSError)
        XCTAssertEqual(error.status, .noServer)
        XCTAssertEqual(error.operation, "connect")
        XCTAssertTrue(error.description.hasPrefix("No server available for connection during connect on \(url)"), error.description)
    }

    func testClosingWhileReconnectingEndsPromptly() throws {
        let servers = try startServers(1)
        var options = NATSOptions()
        options.reconnectWait = 0.1
        let connection = try connect(servers.urls, options: options)
        let events = Box<[NATSConnectionEvent]>([])
        subscriptions.append(connection.events.subscribeNext { events.value.append($0) })
        servers.servers[0].stop(SIGKILL)
        XCTAssertTrue(waitFor { events.value.contains(.disconnected) }, "events: \(events.value)")
        XCTAssertTrue(waitFor(1) { false } == false)  // let a few reconnect attempts fail
        connection.close()
        XCTAssertTrue(waitFor(30) { events.value.contains(.closed) }, "events: \(events.value)")
        XCTAssertFalse(connection.isConnected)
    }

    func testDisconnectAndReconnectAreReportedAndMessagesFlowAgain() throws {
        let servers = try startServers(1)
        var options = NATSOptions()
        options.reconnectWait = 0.1
        let connection = try connect(servers.urls, options: options)
        let events = Box<[NATSConnectionEvent]>([])
        subscriptions.append(connection.events.subscribeNext { events.value.append($0) })
        let received = Box<[String]>([])
        subscriptions.append(connection.subscribe("after").subscribeNext {
            received.value.append(String(decoding: $0.payload, as: UTF8.self))
        })
        _ = try awaitValue(connection.publish("after", payload: Array("one".utf8)).then { Signal<Void>.return(()) }, timeout: 10)
        XCTAssertTrue(waitFor { received.value == ["one"] })

        servers.servers[0].stop(SIGKILL)
        XCTAssertTrue(waitFor { events.value.contains(.disconnected) }, "events: \(events.value)")
        try servers.servers[0].start()
        XCTAssertTrue(waitFor { events.value.contains(.reconnected(servers.urls[0])) }, "events: \(events.value)")
        XCTAssertEqual(events.value.first, .disconnected)
        // The subscription was re-established by cnats: a message published now arrives.
        subscriptions.append(connection.publish("after", payload: Array("two".utf8)).subscribe())
        XCTAssertTrue(waitFor { received.value == ["one", "two"] }, "received \(received.value)")
    }

    /// `unsentBytes` counts what the server has not taken: 0 once an idle connection's
    /// publishes arrived; above 0 while a frozen server (SIGSTOP) leaves 32 MB of publishes
    /// in cnats's buffer and the socket's send queue (more than the two kernels' buffers
    /// hold); 0 again once the thawed server has read them all. The pings are slow enough
    /// (60 s) that the frozen server is not taken as stale meanwhile.
    func testUnsentBytesCountWhatTheServerHasNotTakenYet() throws {
        let servers = try startServers(1)
        var options = NATSOptions()
        options.pingInterval = 60
        let connection = try connect(servers.urls, options: options)
        let received = Box(0)
        subscriptions.append(connection.subscribe("bulk").subscribeNext { _ in received.value += 1 })
        subscriptions.append(connection.publish("bulk", payload: [1]).subscribe())
        XCTAssertTrue(waitFor { received.value == 1 }, "the first message arrives")
        XCTAssertTrue(waitFor { connection.unsentBytes == 0 }, "an idle connection has nothing unsent: \(String(describing: connection.unsentBytes))")

        let pid = try XCTUnwrap(servers.servers[0].pid)
        XCTAssertEqual(kill(pid, SIGSTOP), 0)
        defer { kill(pid, SIGCONT) }
        let payload = [UInt8](repeating: UInt8(ascii: "x"), count: 128 * 1024)
        for _ in 0..<256 { subscriptions.append(connection.publish("bulk", payload: payload).subscribe()) }
        var most = 0
        XCTAssertTrue(waitFor(30) {
            most = max(most, connection.unsentBytes ?? 0)
            return most > 1_000_000
        }, "32 MB published to a frozen server: at most \(most) bytes counted unsent")

        XCTAssertEqual(kill(pid, SIGCONT), 0)
        XCTAssertTrue(waitFor { received.value == 257 }, "the thawed server delivers every message (\(received.value) of 257)")
        XCTAssertTrue(waitFor { connection.unsentBytes == 0 }, "everything reached the server: \(String(describing: connection.unsentBytes)) unsent")
    }

    /// cnats's ping timer finds a frozen server (SIGSTOP) and closes the socket on its own
    /// thread while the loop publishes (write interest changing from cnats's flusher
    /// thread): the loop must never be left polling the closed descriptor. With cnats's
    /// own libuv adapter it could (libuv aborts on the EBADF of epoll_ctl: logcast's
    /// leader-kill test died of it every run); with ours it polls a duplicate that stays
    /// open until its handle has closed. Four freezes, each a disconnect and a reconnect,
    /// with messages flowing after each.
    func testAStaleConnectionClosedByCnatsOwnThreadNeverLeavesTheLoopPollingAClosedSocket() throws {
        let servers = try startServers(1)
        let server = servers.servers[0]
        var options = NATSOptions()
        options.pingInterval = 0.2
        options.reconnectWait = 0.1
        options.connectTimeout = 0.5
        let connection = try connect(servers.urls, options: options)
        let events = Box<[NATSConnectionEvent]>([])
        subscriptions.append(connection.events.subscribeNext { events.value.append($0) })
        let received = Box(0)
        subscriptions.append(connection.subscribe("flow").subscribeNext { _ in received.value += 1 })
        let payload = Array(repeating: UInt8(ascii: "x"), count: 512)
        // Publishing on every tick keeps cnats's write interest going on and off.
        subscriptions.append(Signal<SchedulerTime>.interval(0.002, on: loop.scheduler).subscribeNext { _ in
            for _ in 0..<20 { _ = connection.publish("flow", payload: payload).subscribe() }
        })
        XCTAssertTrue(waitFor { received.value >= 1000 }, "messages flow at first (\(received.value))")
        for cycle in 1...4 {
            let pid = try XCTUnwrap(server.pid)
            XCTAssertEqual(kill(pid, SIGSTOP), 0)
            XCTAssertTrue(waitFor { events.value.filter { $0 == .disconnected }.count >= cycle },
                          "cycle \(cycle): the ping timer finds the frozen server (events \(events.value))")
            XCTAssertEqual(kill(pid, SIGCONT), 0)
            XCTAssertTrue(waitFor { events.value.filter { $0 == .reconnected(servers.urls[0]) }.count >= cycle },
                          "cycle \(cycle): reconnected (events \(events.value))")
            let before = received.value
            XCTAssertTrue(waitFor { received.value >= before + 1000 }, "cycle \(cycle): messages flow again")
        }
        XCTAssertTrue(connection.isConnected)
    }
}

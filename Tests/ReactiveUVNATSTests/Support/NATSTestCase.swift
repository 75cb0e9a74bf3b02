import CLibUV
import Foundation
import ReactiveUV
import ReactiveUVNATS
import ReactiveUVNATSTestKit
import XCTest

/// A test with its own event loop on the main thread and real nats-servers, both cleaned
/// up in tearDown (servers by pid, the loop only once cnats's handles on it have closed).
class NATSTestCase: XCTestCase {
    var loop: EventLoop!
    var servers: NATSTestServers?
    var subscriptions: [Disposable] = []

    override func setUpWithError() throws {
        guard natsServerPath() != nil else { throw XCTSkip("nats-server is not installed") }
        loop = try EventLoop()
    }

    override func tearDown() {
        for d in subscriptions { d.dispose() }
        subscriptions = []
        if let loop {
            // Every handle cnats's adapter made (its uv_async_t and uv_poll_t) must close once
            // the connections are closed; then uv_loop_close succeeds.
            // The connection itself is destroyed by a loop task once its handles are gone, so
            // wait for that too: a loop closed before it would leave the connection alive, and
            // with it cnats's subscription threads, never joined (a TSan thread leak at exit).
            let closed = loop.run(until: { openHandles(loop, excludingTimers: true) == 0 && NATS.liveConnections == 0 },
                                  timeout: 30)
            XCTAssertTrue(closed, "cnats handles left open on the loop, or \(NATS.liveConnections) connections not destroyed")
            XCTAssertEqual(openHandles(loop, excludingTimers: false), 0, "handles left open")
            XCTAssertNoThrow(try loop.close(), "uv_loop_close must succeed: all handles closed")
        }
        loop = nil
        servers?.stopAll()
        servers = nil
        super.tearDown()
    }

    /// Starts `count` servers (a cluster when more than one).
    @discardableResult
    func startServers(_ count: Int) throws -> NATSTestServers {
        let made = try NATSTestServers(count: count)
        servers = made
        try made.startAll()
        return made
    }

    /// Runs the loop until `condition` holds (at most `timeout` seconds); false on timeout.
    func waitFor(_ timeout: Double = 60, _ condition: () -> Bool) -> Bool {
        loop.run(until: condition, timeout: timeout)
    }

    /// Connects and waits for the connection (fails the test on error).
    func connect(_ urls: [String], options: NATSOptions = NATSOptions()) throws -> NATSConnection {
        let box = Box<Result<NATSConnection, Error>?>(nil)
        subscriptions.append(NATS.connect(urls, options: options, on: loop).subscribe(
            next: { box.value = .success($0) }, error: { box.value = .failure($0) }, completed: {}))
        XCTAssertTrue(waitFor { box.value != nil }, "connect did not answer")
        return try XCTUnwrap(box.value).get()
    }

    /// Subscribes and waits for the signal's first value or error.
    func awaitValue<T>(_ signal: Signal<T>, timeout: Double = 60) throws -> T {
        let box = Box<Result<T, Error>?>(nil)
        subscriptions.append(signal.subscribe(next: { if box.value == nil { box.value = .success($0) } },
                                              error: { box.value = .failure($0) }, completed: {}))
        XCTAssertTrue(waitFor(timeout) { box.value != nil }, "no answer in \(timeout) s")
        guard let result = box.value else { throw NSError(domain: "timeout", code: 1) }
        return try result.get()
    }

    /// Waits for the signal's error (fails the test when it sends a value instead).
    func awaitError<T>(_ signal: Signal<T>, timeout: Double = 60) -> Error? {
        do {
            let value = try awaitValue(signal, timeout: timeout)
            XCTFail("expected an error, got \(value)")
            return nil
        } catch {
            return error
        }
    }

    /// Adds a stream, retrying while a new cluster has not elected its meta leader yet.
    func addStream(_ js: JetStream, _ config: JetStreamConfig, timeout: Double = 60) throws -> JetStreamInfo {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            do {
                return try awaitValue(js.addStream(config))
            } catch let error as NATSError where Date() < deadline && error.serverCode != 10058 && error.serverCode != 10074 {
                _ = waitFor(0.5) { false }
            }
        }
    }
}

/// A mutable cell for results written by signal callbacks on the loop (main) thread.
final class Box<Value>: @unchecked Sendable {
    var value: Value
    init(_ value: Value) { self.value = value }
}

/// Handles open on `loop` other than its own two (the execute wake-up and the timer
/// prepare handle), optionally not counting timers (run(until:)'s own deadline timer).
func openHandles(_ loop: EventLoop, excludingTimers: Bool) -> Int {
    final class Count { var all = 0; var timers = 0 }
    let count = Count()
    withExtendedLifetime(count) {
        uv_walk(loop.uvLoop, { handle, arg in
            guard let handle, let arg, uv_is_closing(handle) == 0 else { return }
            let c = Unmanaged<Count>.fromOpaque(arg).takeUnretainedValue()
            c.all += 1
            if handle.pointee.type == UV_TIMER { c.timers += 1 }
        }, Unmanaged.passUnretained(count).toOpaque())
    }
    return count.all - 2 - (excludingTimers ? count.timers : 0)
}

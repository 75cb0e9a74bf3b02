import CLibUV
import CSystemShims
import Glibc
import XCTest

@testable import ReactiveUV

// Helpers for the stream IO tests (TCP, Unix sockets, stdin, subprocess): counting a loop's handles, a loop running on its own thread,
// and a recorder of events.

/// Handles on `loop` other than the loop's own two (its async and prepare handles),
/// including ones whose close callback has not run yet. Call on the loop's thread.
func userHandleCount(_ loop: EventLoop) -> Int {
    var count = 0
    let own: Set<UnsafeMutableRawPointer> = [UnsafeMutableRawPointer(loop.asyncHandle), UnsafeMutableRawPointer(loop.prepareHandle)]
    withUnsafeMutablePointer(to: &count) { counter in
        var context = (counter, own)
        withUnsafeMutablePointer(to: &context) { context in
            uv_walk(loop.uvLoop, { handle, arg in
                guard let handle, let arg else { return }
                let context = arg.assumingMemoryBound(to: (UnsafeMutablePointer<Int>, Set<UnsafeMutableRawPointer>).self)
                if !context.pointee.1.contains(UnsafeMutableRawPointer(handle)) { context.pointee.0.pointee += 1 }
            }, context)
        }
    }
    return count
}

/// IO objects (streams, listeners, processes) registered on `loop`: for the shared loops,
/// where other tests' timers may live too. Call on the loop's thread.
func ioResourceCount(_ loop: EventLoop) -> Int {
    loop.resources.values.filter {
        guard let owner = ($0 as? UVHandleCore)?.owner else { return false }
        return owner is UVStream || owner is StreamListener || owner is SubprocessRun
    }.count
}

/// Runs `loop` (this thread's) until every IO handle is closed and freed and no IO object
/// is registered; then closes the loop. Fails the test if handles stay open.
func assertAllHandlesClosedAndClose(
    _ loop: EventLoop, timeout: Double = 10, file: StaticString = #filePath, line: UInt = #line
) {
    let closed = waitForHandlesToClose(loop, timeout: timeout)
    XCTAssertTrue(closed, "handles still open: \(userHandleCount(loop)), resources: \(loop.resources.count)", file: file, line: line)
    XCTAssertNoThrow(try loop.close(), "uv_loop_close", file: file, line: line)
}

/// Runs `loop` (this thread's) without blocking until it holds no IO handle and no
/// registered IO object, or `timeout` passes. Polls with `runNoWait` rather than
/// `run(until:)`, whose own deadline timer would be counted as an open handle.
func waitForHandlesToClose(_ loop: EventLoop, timeout: Double = 10) -> Bool {
    let deadline = csys_monotonic_ns() + UInt64(timeout * 1e9)
    while csys_monotonic_ns() < deadline {
        if userHandleCount(loop) == 0 && loop.resources.isEmpty { return true }
        loop.runNoWait()
        if userHandleCount(loop) == 0 && loop.resources.isEmpty { return true }
        usleep(1000)
    }
    return userHandleCount(loop) == 0 && loop.resources.isEmpty
}

/// An owned loop running on its own thread, for servers or clients on "another loop".
final class LoopThread: @unchecked Sendable {
    // Thread-safety: `loop` is set before init returns; `report` is guarded by its lock.
    private(set) var loop: EventLoop!
    private var thread: TestThread?
    private let report = Locked<(handlesLeft: Int, resourcesLeft: Int, closeError: String?)?>(nil)
    private let stopping = Locked(false)

    init() {
        let ready = Latch()
        let box = Locked<EventLoop?>(nil)
        thread = TestThread { [report, stopping] in
            let loop = try! EventLoop()
            loop.retainAsync()  // idle: wait for work instead of returning
            box.withLock { $0 = loop }
            ready.countDown()
            while !stopping.value { loop.run() }
            loop.releaseAsync()
            // Let close callbacks of handles closed by the test run, then check and close.
            _ = waitForHandlesToClose(loop)
            let handles = userHandleCount(loop)
            let resources = loop.resources.count
            var closeError: String?
            do { try loop.close() } catch { closeError = "\(error)" }
            report.withLock { $0 = (handles, resources, closeError) }
        }
        _ = ready.wait(timeout: 30)
        loop = box.value
    }

    /// Runs `body` on the loop's thread and waits for its result.
    func sync<T>(_ body: @escaping () -> T) -> T {
        let result = Locked<T?>(nil)
        let done = Latch()
        let work = UncheckedSendable(body)
        loop.execute {
            let value = work.value()
            result.withLock { $0 = value }
            done.countDown()
        }
        _ = done.wait(timeout: 30)
        return result.value!
    }

    /// Stops the loop, waits for its handles to close, closes it, and checks that nothing
    /// was left open.
    func finish(file: StaticString = #filePath, line: UInt = #line) {
        stopping.withLock { $0 = true }
        loop.stop()
        thread?.join()
        thread = nil
        guard let report = report.value else {
            XCTFail("loop thread did not report", file: file, line: line)
            return
        }
        XCTAssertEqual(report.handlesLeft, 0, "handles left on the loop thread's loop", file: file, line: line)
        XCTAssertEqual(report.resourcesLeft, 0, "IO objects left registered", file: file, line: line)
        XCTAssertNil(report.closeError, "uv_loop_close", file: file, line: line)
    }
}

/// Records a subscription's events (from any thread) for assertions.
final class Recorder<Value>: @unchecked Sendable {
    // Thread-safety: `state` is a Locked box.
    private let state = Locked<(values: [Value], error: (any Error)?, completed: Bool, threads: Set<Int64>)>(([], nil, false, []))

    var values: [Value] { state.value.values }
    var error: (any Error)? { state.value.error }
    var completed: Bool { state.value.completed }
    var terminated: Bool { state.withLock { $0.error != nil || $0.completed } }
    var threads: Set<Int64> { state.value.threads }

    @discardableResult
    func subscribe(_ signal: Signal<Value>) -> Disposable {
        signal.subscribe(
            next: { v in self.state.withLock { $0.values.append(v); $0.threads.insert(csys_thread_id()) } },
            error: { e in self.state.withLock { $0.error = e; $0.threads.insert(csys_thread_id()) } },
            completed: { self.state.withLock { $0.completed = true; $0.threads.insert(csys_thread_id()) } })
    }
}

/// A TCP server on `loop` for tests: subscribes `listen` with `handler` per connection and
/// returns the bound port once listening (running `loop` if it is this thread's).
func startServer(
    on loop: EventLoop, host: String = "127.0.0.1", options: TCPOptions = TCPOptions(),
    handler: @escaping (TCPConnection) -> Signal<Void>
) -> (port: Int, subscription: Disposable, errors: Recorder<Void>) {
    let port = Locked(0)
    let errors = Recorder<Void>()
    let signal = TCP.listen(host: host, port: 0, options: options, on: loop, onListening: { address in
        port.withLock { $0 = address.port }
    })
    .flattenMap { handler($0) }
    let subscription = errors.subscribe(signal)
    if loop.isCurrentThread {
        _ = loop.run(until: { port.value != 0 || errors.terminated }, timeout: 30)
    } else {
        let deadline = csys_monotonic_ns() + 30_000_000_000
        while port.value == 0 && !errors.terminated && csys_monotonic_ns() < deadline { usleep(1000) }
    }
    return (port.value, subscription, errors)
}

/// The echo handler: each connection sends back its reads, then shuts down; one
/// connection's failure never ends the server.
func echo(_ connection: StreamConnection) -> Signal<Void> {
    connection.send(connection.reads).then { connection.shutdown() }.catchTo(.empty())
}

/// Connects, sends `payload` (chunk by chunk), shuts down, and collects every byte read
/// until the peer ends: the bytes, once the connection has closed.
func roundTrip(_ connect: Signal<some StreamConnection>, _ payload: [[UInt8]]) -> Signal<[UInt8]> {
    connect.flattenMap { connection -> Signal<[UInt8]> in
        let sending = connection.send(Signal.fromArray(payload)).then { connection.shutdown() }
        return Signal.merge([connection.reads, sending.map { _ in [UInt8]() }])
    }
    .aggregate(start: [UInt8]()) { $0 + $1 }
}

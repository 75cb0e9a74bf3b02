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
    loop.resources.values.filter { isIOResource($0) }.count
}

/// The one "all handles closed" check every IO test on a loop of its own ends with (libuv's
/// tests end the same way): runs `loop` (this thread's) until no handle but the loop's own
/// two is left, closing or not (every close callback ran, so every handle's memory is
/// freed), and nothing is registered with it; then closes it, which `uv_loop_close` allows
/// only with no handle and no request left. Fails the test otherwise. Tests on the shared
/// loops check ``ioResourceCount(_:)`` / ``mainLoopIOResources()`` instead, which count
/// with the same predicate (``isIOResource(_:)``).
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
/// A plain blocking client connection to `127.0.0.1:port` (the kernel completes it from
/// the listen backlog; the loop need not be running): its descriptor, or -1.
func connectBlockingClient(port: Int) -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let rc = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    if rc == 0 { return fd }
    Glibc.close(fd)
    return -1
}

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

/// The `.pauseSource` relay scenario: a server relays its second connection's reads to its
/// first (`relay(slow, producer)`), the first peer connects and does not read, the second
/// writes `size` bytes and ends. Asserts that the producer's reads pause at the mark with the
/// relay's memory bounded and the producer's bytes waiting on its own side, then that once
/// the slow peer reads every byte arrives in order and the relay and the producer complete.
func assertRelayPausesTheProducerUntilTheSlowPeerReads(
    highWaterMark: Int, size: Int,
    relay makeRelay: @escaping (_ slow: TCPConnection, _ producer: TCPConnection) -> Signal<Void>,
    file: StaticString = #filePath, line: UInt = #line
) throws {
    let loop = try EventLoop()
    let options = TCPOptions(highWaterMark: highWaterMark, backpressure: .pauseSource)
    let accepted = Confined<[TCPConnection]>([])
    let relay = Recorder<Void>()
    let (port, server, _) = startServer(on: loop, options: options) { c in
        accepted.value.append(c)
        if accepted.value.count == 2 { relay.subscribe(makeRelay(accepted.value[0], accepted.value[1])) }
        return .never()
    }
    // The slow peer connects first and does not read yet.
    let slowClient = Locked<TCPConnection?>(nil)
    let slowSubscription = Recorder<TCPConnection>().subscribe(
        TCP.connect(host: "127.0.0.1", port: port, on: loop).doNext { c in slowClient.withLock { $0 = c } })
    XCTAssertTrue(loop.run(until: { accepted.value.count == 1 && slowClient.value != nil }, timeout: 30), file: file, line: line)
    // The producer writes `size` bytes and ends its side.
    let payload = [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
        for i in 0..<size { buffer[i] = UInt8(truncatingIfNeeded: i &* 31 &+ i >> 16) }
        count = size
    }
    let producerClient = Locked<TCPConnection?>(nil)
    let produced = Recorder<Void>()
    let producerSubscription = Recorder<TCPConnection>().subscribe(
        TCP.connect(host: "127.0.0.1", port: port, on: loop).doNext { c in
            producerClient.withLock { $0 = c }
            produced.subscribe(c.write(payload).then { c.shutdown() })
        })

    // The relay's queue reaches the mark: the producer's reads are paused.
    XCTAssertTrue(loop.run(until: { accepted.value.count == 2 && accepted.value[1].stream.isReadingPaused }, timeout: 30), file: file, line: line)
    runLoop(loop, for: 0.2)
    let (slow, producer) = (accepted.value[0], accepted.value[1])
    XCTAssertTrue(producer.stream.isReadingPaused, "still paused: the slow peer has not read", file: file, line: line)
    XCTAssertLessThanOrEqual(slow.stream.peakWriteQueueSize, highWaterMark + UVStream.readBufferSize, "relay memory bounded", file: file, line: line)
    XCTAssertFalse(produced.terminated, "the producer's bytes wait on the producer's side", file: file, line: line)
    XCTAssertGreaterThan(producerClient.value!.writeQueueSize, 0, file: file, line: line)
    XCTAssertFalse(slow.isClosed, file: file, line: line)

    // The slow peer reads: the relay resumes and pauses as needed; every byte arrives.
    let bytes = Confined<[UInt8]>([])
    bytes.value.reserveCapacity(size)
    let received = Recorder<[UInt8]>()
    received.subscribe(slowClient.value!.reads.doNext { bytes.value.append(contentsOf: $0) }.ignoreValues())
    XCTAssertTrue(loop.run(until: { received.terminated }, timeout: 120), file: file, line: line)
    XCTAssertNil(received.error, file: file, line: line)
    XCTAssertEqual(bytes.value.count, size, file: file, line: line)
    XCTAssertTrue(bytes.value == payload, "the relay delivered every byte in order", file: file, line: line)
    XCTAssertTrue(relay.completed, "\(String(describing: relay.error))", file: file, line: line)
    XCTAssertTrue(produced.completed, file: file, line: line)
    XCTAssertLessThanOrEqual(slow.stream.peakWriteQueueSize, highWaterMark + UVStream.readBufferSize, file: file, line: line)

    slowSubscription.dispose()
    producerSubscription.dispose()
    server.dispose()
    assertAllHandlesClosedAndClose(loop)
}

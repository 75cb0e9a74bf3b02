import CLibUV
import CSystemShims
import Glibc
import XCTest

@testable import ReactiveUV

// Every IO signal × every way a user ends a subscription from inside the event flow
// (issue 10 §1). Each cell runs on a fresh loop on the test's thread; it checks that the
// subscription saw its first event (the positive marker), that nothing was delivered after
// the dispose returned, that no subscriber object leaked, and that every handle closed and
// the loop closes (`assertAllHandlesClosedAndClose`).

/// How a cell ends its subscription.
enum DisposeWay: String, CaseIterable {
    /// `take(1)`.
    case take1
    /// `first()`, called from another thread (on the loop's own thread it would run the
    /// main loop, not the cell's).
    case first
    /// `takeUntil(trigger)`, the trigger sent from the first value's callback.
    case takeUntil
    /// `dispose()` of the subscription from its own next-callback.
    case ownCallback
    /// The source published to two subscribers; the second one's callback disposes the
    /// first one's subscription and the connection.
    case otherSubscriber
    /// `dispose()` from another thread once the first value arrived.
    case otherThread
}

/// One IO signal under test: how to make it on a loop, and how to make it produce more.
struct MatrixSource: @unchecked Sendable {
    // Thread-safety: immutable closures, called on the test's thread.
    let name: String
    /// The signal, its values as text.
    let make: (MatrixEnvironment) -> Signal<String>
    /// Called between loop turns while the cell waits: makes more events happen
    /// (appends to a file, raises the signal, connects a client).
    var poke: (MatrixEnvironment) -> Void = { _ in }
}

/// What a cell's sources need: the loop, a fresh directory, the servers.
final class MatrixEnvironment: @unchecked Sendable {
    // Thread-safety: built and used on the test's thread; `clientFDs` only there too.
    let loop: EventLoop
    let directory: TemporaryDirectory
    let echoPort: Int
    let unixEchoPath: String
    var clientFDs: [Int32] = []
    var pipeWriter: Int32 = -1
    var listenPort = Locked(0)

    init(loop: EventLoop, echoPort: Int, unixEchoPath: String) throws {
        self.loop = loop
        self.directory = try TemporaryDirectory()
        self.echoPort = echoPort
        self.unixEchoPath = unixEchoPath
    }

    /// A plain blocking client connection to `port` (the kernel completes it from the
    /// listen backlog; the loop need not be running).
    func connectRawClient(port: Int) {
        guard port != 0 else { return }
        let fd = connectBlockingClient(port: port)
        if fd >= 0 { clientFDs.append(fd) }
    }

    func finish() {
        for fd in clientFDs { Glibc.close(fd) }
        clientFDs = []
        if pipeWriter >= 0 { Glibc.close(pipeWriter) }
        pipeWriter = -1
        directory.remove()
    }
}

/// What a cell's subscriber saw, from any thread.
final class DisposeProbe: @unchecked Sendable {
    // Thread-safety: `state` is a Locked box.
    private let state = Locked<(values: [String], late: [String], disposed: Bool, errors: [String], completed: Bool)>(
        ([], [], false, [], false))

    func next(_ value: String) {
        state.withLock {
            if $0.disposed { $0.late.append(value) }
            $0.values.append(value)
        }
    }
    func error(_ error: any Error) { state.withLock { $0.errors.append("\(error)") } }
    func complete() { state.withLock { $0.completed = true } }
    /// Called right after the dispose returned (or the disposing event was sent).
    func markDisposed() { state.withLock { $0.disposed = true } }

    var values: [String] { state.value.values }
    var late: [String] { state.value.late }
    var disposed: Bool { state.value.disposed }
    var errors: [String] { state.value.errors }
    var completed: Bool { state.value.completed }
}

final class DisposeMatrixTests: XCTestCase {
    /// An echo server (TCP and Unix socket) on its own loop thread, and a SIGUSR2 watch
    /// kept for the whole test there, so a `raise` between a cell's dispose and the end
    /// of its poking never meets libuv's reset-to-default disposition.
    private var server: LoopThread!
    private var serverSubscriptions: [Disposable] = []
    private var echoPort = 0
    private var unixDirectory: TemporaryDirectory!
    private var unixEchoPath = ""

    override func setUpWithError() throws {
        server = LoopThread()
        let started = startServer(on: server.loop) { echo($0) }
        echoPort = started.port
        serverSubscriptions.append(started.subscription)
        unixDirectory = try TemporaryDirectory()
        unixEchoPath = unixDirectory.file("echo.sock")
        let listening = Latch()
        serverSubscriptions.append(
            UnixSocket.listen(path: unixEchoPath, on: server.loop, onListening: { _ in listening.countDown() })
                .flattenMap { echo($0) }.subscribe(next: { _ in }, error: { _ in }, completed: {}))
        XCTAssertTrue(listening.wait(timeout: 30), "unix echo server listening")
        serverSubscriptions.append(UnixSignal.signal(SIGUSR2, on: server.loop).subscribeNext { _ in })
        XCTAssertNotEqual(echoPort, 0)
    }

    override func tearDown() {
        for subscription in serverSubscriptions { subscription.dispose() }
        serverSubscriptions = []
        server.finish()
        unixDirectory.remove()
    }

    // MARK: - The sources

    static func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    static let threeLines = "a\nb\nc\n"

    static let sources: [MatrixSource] = [
        MatrixSource(name: "TCPConnection.reads", make: { env in
            TCP.connect(host: "127.0.0.1", port: env.echoPort, on: env.loop)
                .flattenMap { c in c.write(threeLines).then { c.reads } }.map(text)
        }),
        MatrixSource(name: "TCPConnection.lines", make: { env in
            TCP.connect(host: "127.0.0.1", port: env.echoPort, on: env.loop)
                .flattenMap { c in c.write(threeLines).then { c.lines } }
        }),
        MatrixSource(name: "TCPConnection.lines (inner take)", make: { env in
            TCP.connect(host: "127.0.0.1", port: env.echoPort, on: env.loop)
                .flattenMap { c in c.write(threeLines).then { c.lines.take(2) } }
        }),
        MatrixSource(name: "TCP.connect", make: { env in
            TCP.connect(host: "127.0.0.1", port: env.echoPort, on: env.loop).map { "\($0)" }
        }),
        MatrixSource(
            name: "TCP.listen",
            make: { env in
                TCP.listen(host: "127.0.0.1", port: 0, on: env.loop, onListening: { address in
                    env.listenPort.withLock { $0 = address.port }
                }).map { "\($0)" }
            },
            poke: { env in if env.clientFDs.count < 4 { env.connectRawClient(port: env.listenPort.value) } }),
        MatrixSource(name: "UnixSocketConnection.lines", make: { env in
            UnixSocket.connect(path: env.unixEchoPath, on: env.loop)
                .flattenMap { c in c.write(threeLines).then { c.lines } }
        }),
        MatrixSource(name: "UnixSocket.connect", make: { env in
            UnixSocket.connect(path: env.unixEchoPath, on: env.loop).map { "\($0)" }
        }),
        MatrixSource(
            name: "UnixSocket.listen",
            make: { env in
                let path = env.directory.file("listen.sock")
                return UnixSocket.listen(path: path, on: env.loop).map { "\($0)" }
                    .merge(UnixSocket.connect(path: path, on: env.loop).then { .never() }
                        .catchTo(.never()).map { "\($0)" })
            }),
        MatrixSource(name: "File.read", make: { env in
            let path = env.directory.file("read.txt")
            writeFile(path, String(repeating: "0123456789\n", count: 50))
            return File.read(path, chunkSize: 7, on: env.loop).map(text)
        }),
        MatrixSource(name: "File.lines", make: { env in
            let path = env.directory.file("lines.txt")
            writeFile(path, String(repeating: "line\n", count: 200))
            return File.lines(path, on: env.loop)
        }),
        MatrixSource(
            name: "File.watch",
            make: { env in
                writeFile(env.directory.file("watched.txt"), "")
                return File.watch(env.directory.path, on: env.loop).map { "\($0)" }
            },
            poke: { env in append(env.directory.file("watched.txt"), "x\n") }),
        MatrixSource(
            name: "File.tail",
            make: { env in
                let path = env.directory.file("tail.log")
                writeFile(path, threeLines)
                return File.tail(path, from: .beginning, on: env.loop)
            },
            poke: { env in append(env.directory.file("tail.log"), "more\nand more\n") }),
        MatrixSource(
            name: "File.tailChunks",
            make: { env in
                let path = env.directory.file("chunks.log")
                writeFile(path, threeLines)
                return File.tailChunks(path, from: .beginning, on: env.loop).map(text)
            },
            poke: { env in append(env.directory.file("chunks.log"), "more\nand more\n") }),
        MatrixSource(
            name: "StandardInput.lines",
            make: { env in
                // Standard input's code path on a pipe of our own (fd 0 is the test runner's).
                var fds: [Int32] = [-1, -1]
                precondition(pipe(&fds) == 0)
                env.pipeWriter = fds[1]
                writeAll(fds[1], threeLines)
                return StandardInput.reads(fd: fds[0], name: "stdin", exclusive: false, on: env.loop).lines()
            },
            poke: { env in
                // After the dispose the read end is closed: EPIPE then, which is fine.
                if env.pipeWriter >= 0 { _ = write(env.pipeWriter, "x\ny\n", 4) }
            }),
        MatrixSource(name: "Subprocess.run", make: { env in
            Subprocess.run(["/bin/sh", "-c", "echo a; echo b >&2; echo c; exit 3"], on: env.loop).map { "\($0)" }
        }),
        MatrixSource(name: "Subprocess.run (long-running child)", make: { env in
            Subprocess.run(["/bin/sh", "-c", "while :; do echo tick; sleep 0.01; done"], on: env.loop).map { "\($0)" }
        }),
        MatrixSource(
            name: "UnixSignal.signal",
            make: { env in UnixSignal.signal(SIGUSR2, on: env.loop).map { "\($0)" } },
            poke: { _ in raise(SIGUSR2) }),
        MatrixSource(name: "DNS.resolve", make: { env in
            DNS.resolve("localhost", port: 80, on: env.loop).map { "\($0)" }
        }),
        MatrixSource(name: "Signal.timer", make: { env in
            Signal<SchedulerTime>.timer(0.001, on: env.loop.scheduler).map { "\($0)" }
        }),
        MatrixSource(name: "Signal.interval", make: { env in
            Signal<SchedulerTime>.interval(0.001, on: env.loop.scheduler).map { "\($0)" }
        }),
    ]

    // MARK: - The matrix

    func testEverySourceToleratesEveryWayOfDisposingFromInsideTheEventFlow() throws {
        var failures: [String] = []
        // RUV_MATRIX_ONLY=<source name prefix> narrows the run while debugging one source.
        let only = getenv("RUV_MATRIX_ONLY").map { String(cString: $0) }
        for source in DisposeMatrixTests.sources where only.map({ source.name.hasPrefix($0) }) ?? true {
            for way in DisposeWay.allCases {
                let failure = try runCell(source, way)
                if let failure {
                    failures.append("\(source.name) × \(way.rawValue): \(failure)")
                    writeAll(2, "dispose matrix FAILED: \(failures.last!)\n")
                }
            }
        }
        XCTAssertEqual(failures, [], failures.joined(separator: "\n"))
    }

    /// Runs one cell; returns what went wrong, or `nil`.
    private func runCell(_ source: MatrixSource, _ way: DisposeWay) throws -> String? {
        let baseline = Diagnostics.liveSubscriptions
        let loop = try EventLoop()
        let env = try MatrixEnvironment(loop: loop, echoPort: echoPort, unixEchoPath: unixEchoPath)
        let probe = DisposeProbe()
        var problems: [String] = []

        let signal = source.make(env)
        var keep: [Disposable] = []
        var helper: TestThread?
        let helperDone = Latch()
        switch way {
        case .take1:
            keep.append(signal.take(1).subscribe(
                next: { probe.next($0) }, error: { probe.error($0) }, completed: { probe.complete(); probe.markDisposed() }))
        case .first:
            helper = TestThread {
                // first() disposes its subscription from the value's callback.
                do {
                    if let value = try signal.first() { probe.next(value) }
                } catch {
                    probe.error(error)
                }
                probe.markDisposed()
                helperDone.countDown()
                loop.execute {}  // wake the loop so the test notices
            }
        case .takeUntil:
            let trigger = Subject<Void>()
            keep.append(signal.takeUntil(trigger).subscribe(
                next: { value in
                    probe.next(value)
                    if !probe.disposed {
                        trigger.sendNext(())
                        probe.markDisposed()
                    }
                },
                error: { probe.error($0) }, completed: { probe.complete() }))
        case .ownCallback:
            let serial = SerialDisposable()
            serial.inner = signal.subscribe(
                next: { value in
                    probe.next(value)
                    serial.dispose()
                    probe.markDisposed()
                },
                error: { probe.error($0) }, completed: { probe.complete() })
            keep.append(serial)
        case .otherSubscriber:
            let connection = signal.publish()
            let first = SerialDisposable()
            first.inner = connection.signal.subscribe(
                next: { probe.next($0) }, error: { probe.error($0) }, completed: { probe.complete() })
            let connected = SerialDisposable()
            keep.append(connection.signal.subscribe(next: { _ in
                if probe.disposed { return }
                first.dispose()
                connected.dispose()
                probe.markDisposed()
            }, error: { _ in }, completed: {}))
            connected.inner = connection.connect()
            keep.append(first)
            keep.append(connected)
        case .otherThread:
            let subscription = signal.subscribe(
                next: { probe.next($0) }, error: { probe.error($0) }, completed: { probe.complete() })
            keep.append(subscription)
            helper = TestThread {
                let deadline = csys_monotonic_ns() + 60_000_000_000
                while probe.values.isEmpty && csys_monotonic_ns() < deadline { usleep(200) }
                subscription.dispose()
                probe.markDisposed()
                helperDone.countDown()
                loop.execute {}
            }
        }

        // The positive marker: the first value, then the disposal having happened.
        let ended = loop.run(
            until: {
                source.poke(env)
                let waitingForHelper = helper != nil && !helperDone.isOpen
                return !waitingForHelper && probe.disposed && !probe.values.isEmpty
            }, timeout: 30)
        if !ended {
            problems.append("no value and dispose within 30 s (values \(probe.values.count), errors \(probe.errors))")
        }
        helper?.join()
        if getenv("RUV_MATRIX_VERBOSE") != nil {
            writeAll(2, "dispose matrix: \(source.name) × \(way.rawValue): values \(probe.values.prefix(3))\n")
        }
        if !probe.late.isEmpty { problems.append("delivered after dispose returned: \(probe.late)") }
        if !probe.errors.isEmpty { problems.append("errors: \(probe.errors)") }
        if way == .take1 && probe.values.count != 1 { problems.append("take(1) saw \(probe.values.count) values") }

        for d in keep { d.dispose() }
        keep = []
        env.finish()
        let closed = waitForHandlesToClose(loop, timeout: 30)
        if !closed { problems.append("handles left open: \(userHandleCount(loop)), resources \(loop.resources.count)") }
        do { try loop.close() } catch { problems.append("uv_loop_close: \(error)") }

        // Subscriber objects are freed when the last reference goes (the server side's
        // per-connection subscriptions end on its thread a moment later).
        let deadline = csys_monotonic_ns() + 30_000_000_000
        while Diagnostics.liveSubscriptions > baseline && csys_monotonic_ns() < deadline {
            _ = EventLoop.main.run(until: { Diagnostics.liveSubscriptions <= baseline }, timeout: 0.01)
        }
        if Diagnostics.liveSubscriptions > baseline {
            problems.append("leaked subscriptions: \(Diagnostics.liveSubscriptions - baseline)")
        }
        return problems.isEmpty ? nil : problems.joined(separator: "; ")
    }

    // MARK: - The issue's own crash pattern, and a write from the read callback

    func testConnectWriteThenLinesTakeTwoDeliversTwoLinesAndCloses() throws {
        let loop = try EventLoop()
        let recorder = Recorder<String>()
        recorder.subscribe(
            TCP.connect(host: "127.0.0.1", port: echoPort, on: loop)
                .flattenMap { c in c.write("a\nb\nc\n").then { c.lines } }
                .take(2))
        XCTAssertTrue(loop.run(until: { recorder.terminated }, timeout: 60))
        XCTAssertEqual(recorder.values, ["a", "b"])
        XCTAssertTrue(recorder.completed)
        assertAllHandlesClosedAndClose(loop)
    }

    func testAWriteIntoTheSameConnectionFromItsReadCallbackComesBack() throws {
        for useUnix in [false, true] {
            let loop = try EventLoop()
            let connect: Signal<StreamConnection> = useUnix
                ? UnixSocket.connect(path: unixEchoPath, on: loop).map { $0 as StreamConnection }
                : TCP.connect(host: "127.0.0.1", port: echoPort, on: loop).map { $0 as StreamConnection }
            let lines = Recorder<String>()
            let writes = Recorder<Void>()
            lines.subscribe(
                connect.flattenMap { c -> Signal<String> in
                    c.write("first\n").then {
                        c.lines.doNext { line in
                            // Answer the first line from inside its own read callback.
                            if line == "first" { writes.subscribe(c.write("second\n")) }
                        }
                    }
                }.take(2))
            XCTAssertTrue(loop.run(until: { lines.terminated && writes.terminated }, timeout: 60), "unix: \(useUnix)")
            XCTAssertEqual(lines.values, ["first", "second"], "unix: \(useUnix)")
            XCTAssertTrue(lines.completed)
            XCTAssertNil(writes.error)
            assertAllHandlesClosedAndClose(loop)
        }
    }
}

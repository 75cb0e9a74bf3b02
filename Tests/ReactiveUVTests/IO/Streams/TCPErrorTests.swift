import CLibUV
import CSystemShims
import Glibc
import XCTest

@testable import ReactiveUV

/// Bad input and bad peers: each is a clear error, never a crash, and leaves no handle open.
final class TCPErrorTests: XCTestCase {
    func testListeningOnAPortInUseFailsWithAddressInUse() throws {
        let loop = try EventLoop()
        let (port, first, _) = startServer(on: loop) { _ in .never() }
        XCTAssertNotEqual(port, 0)

        let second = Recorder<TCPConnection>()
        second.subscribe(TCP.listen(host: "127.0.0.1", port: port, on: loop))
        XCTAssertTrue(loop.run(until: { second.terminated }, timeout: 30))
        let error = try XCTUnwrap(second.error as? UVError, "\(String(describing: second.error))")
        XCTAssertEqual(error, .addressInUse)
        XCTAssertEqual(error.name, "EADDRINUSE")
        XCTAssertTrue(error.description.contains("127.0.0.1:\(port)"), error.description)
        XCTAssertTrue(error.description.contains("EADDRINUSE (address already in use) during"), error.description)

        first.dispose()
        assertAllHandlesClosedAndClose(loop)
    }

    func testConnectingToAClosedPortFailsWithConnectionRefused() throws {
        let loop = try EventLoop()
        // A port that was just free: listen on 0, then stop listening.
        let (port, server, _) = startServer(on: loop) { _ in .never() }
        server.dispose()
        XCTAssertTrue(waitForHandlesToClose(loop))

        let client = Recorder<TCPConnection>()
        client.subscribe(TCP.connect(host: "127.0.0.1", port: port, on: loop))
        XCTAssertTrue(loop.run(until: { client.terminated }, timeout: 30))
        XCTAssertTrue(client.values.isEmpty)
        let error = try XCTUnwrap(client.error as? UVError, "\(String(describing: client.error))")
        XCTAssertEqual(error, .connectionRefused)
        XCTAssertEqual(error.description, "ECONNREFUSED (connection refused) during connect on 127.0.0.1:\(port)")
        assertAllHandlesClosedAndClose(loop)
    }

    /// A socket bound to a port and connected to that same port connects to itself (TCP's
    /// simultaneous open; `connect` can pick such a source port by chance when nothing
    /// listens). `TCP.connect` checks every connection for it, and reports ECONNREFUSED.
    func testASocketConnectedToItselfIsRecognized() throws {
        let loop = try EventLoop()
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        XCTAssertGreaterThanOrEqual(fd, 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let size = socklen_t(MemoryLayout<sockaddr_in>.size)
        XCTAssertEqual(withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, size) } }, 0)
        var length = size
        XCTAssertEqual(withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }, 0)
        XCTAssertEqual(withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, size) } }, 0, "errno \(errno)")

        let tcp = UnsafeMutablePointer<uv_tcp_t>.allocate(capacity: 1)
        XCTAssertEqual(uv_tcp_init(loop.uvLoop, tcp), 0)
        XCTAssertEqual(uv_tcp_open(tcp, fd), 0)
        XCTAssertTrue(TCPConnectAttempt.isConnectedToItself(tcp))
        uv_close(UnsafeMutablePointer<uv_handle_t>(OpaquePointer(tcp))) { UnsafeMutableRawPointer($0)?.deallocate() }

        // An ordinary connection is not.
        let (port, server, _) = startServer(on: loop) { _ in .never() }
        let client = Recorder<TCPConnection>()
        client.subscribe(TCP.connect(host: "127.0.0.1", port: port, on: loop))
        XCTAssertTrue(loop.run(until: { !client.values.isEmpty || client.terminated }, timeout: 30))
        let connection = try XCTUnwrap(client.values.first)
        XCTAssertNotEqual(connection.localAddress, connection.remoteAddress)
        connection.close()
        server.dispose()
        assertAllHandlesClosedAndClose(loop)
    }

    func testBadAddressesAreErrorsNotTraps() throws {
        let loop = try EventLoop()
        let outOfRange = Recorder<TCPConnection>()
        outOfRange.subscribe(TCP.connect(host: "127.0.0.1", port: 70000, on: loop))
        let badName = Recorder<TCPConnection>()
        badName.subscribe(TCP.connect(host: "no such host.invalid", port: 80, on: loop))
        XCTAssertTrue(loop.run(until: { outOfRange.terminated && badName.terminated }, timeout: 60))
        XCTAssertEqual((outOfRange.error as? UVError)?.name, "EINVAL")
        let nameError = try XCTUnwrap(badName.error as? UVError, "\(String(describing: badName.error))")
        XCTAssertTrue(nameError.name.hasPrefix("EAI_"), nameError.description)
        XCTAssertTrue(nameError.description.contains("no such host.invalid:80"), nameError.description)
        assertAllHandlesClosedAndClose(loop)
    }

    func testSubscribingOnAClosedLoopFailsAtOnce() throws {
        let loop = try EventLoop()
        XCTAssertNoThrow(try loop.close())
        let client = Recorder<TCPConnection>()
        client.subscribe(TCP.connect(host: "127.0.0.1", port: 9, on: loop))
        let process = Recorder<SubprocessEvent>()
        process.subscribe(Subprocess.run(["true"], on: loop))
        XCTAssertTrue(client.terminated && process.terminated, "no waiting forever on a loop that will never run")
        XCTAssertEqual(client.error as? UVError, .invalidArgument)
        XCTAssertTrue("\(client.error!)".contains("connect on a closed EventLoop"), "\(client.error!)")
        XCTAssertEqual(process.error as? UVError, .invalidArgument)
    }

    func testAPeerThatResetsMidWriteFailsTheWriterWithResetOrBrokenPipe() throws {
        let loop = try EventLoop()
        // The server reads the first chunk, then resets the connection (RST, SO_LINGER 0).
        let (port, server, _) = startServer(on: loop) { connection in
            connection.reads.take(1).map { _ in connection.reset() }
        }
        let big = [UInt8](repeating: 0x61, count: 32 << 20)
        let write = Recorder<Void>()
        let client = Recorder<TCPConnection>()
        client.subscribe(
            TCP.connect(host: "127.0.0.1", port: port, on: loop).doNext { connection in
                write.subscribe(connection.write(big))
            })
        XCTAssertTrue(loop.run(until: { write.terminated }, timeout: 60))
        XCTAssertFalse(write.completed, "32 MiB cannot all be flushed to a peer that reset")
        let error = try XCTUnwrap(write.error as? UVError, "\(String(describing: write.error))")
        XCTAssertTrue(error == .connectionReset || error == .brokenPipe, error.description)
        XCTAssertTrue(error.description.contains("write"), error.description)
        XCTAssertTrue(error.description.contains("127.0.0.1:\(port)"), error.description)
        // The failed connection closed itself, so its connect signal completed.
        XCTAssertTrue(loop.run(until: { client.terminated }, timeout: 30))
        XCTAssertTrue(client.completed)
        XCTAssertTrue(client.values.first?.isClosed ?? false)

        server.dispose()
        assertAllHandlesClosedAndClose(loop)
    }

    func testALineLongerThanTheLimitFailsWithLineTooLong() throws {
        let loop = try EventLoop()
        let (port, server, _) = startServer(on: loop) { echo($0) }
        let lines = Recorder<String>()
        let client = TCP.connect(host: "127.0.0.1", port: port, on: loop).flattenMap { connection -> Signal<String> in
            let line = Array("short\r\n".utf8) + [UInt8](repeating: 0x78, count: 100) + [10] + Array("never\n".utf8)
            return connection.write(line).then { connection.lines(maxLength: 10) }
        }
        let subscription = lines.subscribe(client)
        XCTAssertTrue(loop.run(until: { lines.terminated }, timeout: 30))
        XCTAssertEqual(lines.values, ["short"])
        XCTAssertEqual(lines.error as? LineError, .lineTooLong(maxLength: 10))
        XCTAssertEqual("\(lines.error!)", "line longer than the limit of 10 bytes")

        subscription.dispose()
        server.dispose()
        assertAllHandlesClosedAndClose(loop)
    }

    func testDisposingDuringConnectIsSilentAndClosesTheHandle() throws {
        let loop = try EventLoop()
        let (port, server, _) = startServer(on: loop) { echo($0) }

        // Disposed on the loop's thread before libuv reported the connect.
        let here = Recorder<TCPConnection>()
        here.subscribe(TCP.connect(host: "127.0.0.1", port: port, on: loop)).dispose()
        // Disposed from another thread, racing the connect.
        let there = Recorder<TCPConnection>()
        let subscription = there.subscribe(TCP.connect(host: "127.0.0.1", port: port, on: loop))
        let thread = TestThread { subscription.dispose() }
        // Subscribed from another thread and disposed there at once.
        let remote = Recorder<TCPConnection>()
        let remoteThread = TestThread {
            remote.subscribe(TCP.connect(host: "127.0.0.1", port: port, on: loop)).dispose()
        }
        runLoop(loop, for: 0.3)
        thread.join()
        remoteThread.join()
        for recorder in [here, there, remote] {
            XCTAssertNil(recorder.error)
            XCTAssertFalse(recorder.completed)
        }
        XCTAssertTrue(here.values.isEmpty)
        XCTAssertTrue(remote.values.isEmpty)

        server.dispose()
        assertAllHandlesClosedAndClose(loop)
    }

    func testDisposingDuringAPendingWriteToAPeerThatDoesNotReadClosesEverything() throws {
        let loop = try EventLoop()
        let (port, server, _) = startServer(on: loop) { _ in .never() }  // never reads
        let connection = Locked<TCPConnection?>(nil)
        let write = Recorder<Void>()
        let client = Recorder<TCPConnection>()
        let subscription = client.subscribe(
            TCP.connect(host: "127.0.0.1", port: port, on: loop).doNext { c in
                connection.withLock { $0 = c }
                write.subscribe(c.write([UInt8](repeating: 1, count: 64 << 20)))
            })
        XCTAssertTrue(loop.run(until: { (connection.value?.writeQueueSize ?? 0) > 0 }, timeout: 30))
        runLoop(loop, for: 0.05)
        XCTAssertFalse(write.terminated, "the write is pending")

        // From another thread, in the middle of the write.
        TestThread { subscription.dispose() }.join()
        XCTAssertTrue(loop.run(until: { connection.value?.isClosed ?? false }, timeout: 30))
        // The write's own subscription was not disposed: it learns that its bytes were
        // cancelled by the close; the connect subscription, disposed, hears nothing.
        XCTAssertTrue(loop.run(until: { write.terminated }, timeout: 30))
        XCTAssertEqual(write.error as? UVError, .cancelled)
        XCTAssertNil(client.error)
        XCTAssertFalse(client.completed)

        server.dispose()
        assertAllHandlesClosedAndClose(loop)
    }

    func testDisposingDuringAReadFromAnotherThreadStopsSilently() throws {
        let loop = try EventLoop()
        // The server streams 64 KiB chunks as fast as the client takes them.
        let chunk = [UInt8](repeating: 7, count: 64 << 10)
        let (port, server, _) = startServer(on: loop) { connection in
            connection.send(Signal.fromArray(Array(repeating: chunk, count: 4096))).catchTo(.empty())
        }
        let reads = Recorder<[UInt8]>()
        let subscription = reads.subscribe(
            TCP.connect(host: "127.0.0.1", port: port, on: loop).flattenMap { $0.reads })
        XCTAssertTrue(loop.run(until: { reads.values.count >= 3 }, timeout: 30))
        let thread = TestThread { subscription.dispose() }
        runLoop(loop, for: 0.1)
        thread.join()
        let count = reads.values.count
        runLoop(loop, for: 0.1)
        XCTAssertEqual(reads.values.count, count, "nothing after the dispose")
        XCTAssertNil(reads.error)
        XCTAssertFalse(reads.completed)

        server.dispose()
        assertAllHandlesClosedAndClose(loop)
    }

    func testReadsStopOnDisposeAndALaterSubscriptionGetsTheRest() throws {
        let loop = try EventLoop()
        let (port, server, _) = startServer(on: loop) { connection in
            connection.write("one\ntwo\n").then { connection.shutdown() }
        }
        let connection = Locked<TCPConnection?>(nil)
        let client = Recorder<TCPConnection>()
        client.subscribe(TCP.connect(host: "127.0.0.1", port: port, on: loop).doNext { c in connection.withLock { $0 = c } })
        XCTAssertTrue(loop.run(until: { connection.value != nil }, timeout: 30))
        let c = connection.value!

        // Two concurrent readers: the second is refused with EBUSY.
        let first = Recorder<String>()
        let firstSubscription = first.subscribe(c.lines.take(1))
        let second = Recorder<[UInt8]>()
        second.subscribe(c.reads)
        XCTAssertEqual((second.error as? UVError)?.name, "EBUSY")
        XCTAssertTrue(loop.run(until: { first.terminated }, timeout: 30))
        XCTAssertEqual(first.values, ["one"])
        firstSubscription.dispose()

        // Both lines arrived in one chunk, and the first reader's line splitter consumed it:
        // a later subscription sees the end of stream. The connection stays open until then.
        let rest = Recorder<[UInt8]>()
        rest.subscribe(c.reads)
        XCTAssertTrue(loop.run(until: { rest.terminated }, timeout: 30))
        XCTAssertTrue(rest.completed)
        XCTAssertNil(rest.error)

        // The peer ended its side; ending ours completes the conversation: the connection
        // closes by itself and its connect signal completes.
        XCTAssertFalse(c.isClosed, "half-closed by the peer: still open for our writes")
        Recorder<Void>().subscribe(c.shutdown())
        XCTAssertTrue(loop.run(until: { client.terminated }, timeout: 30))
        XCTAssertTrue(client.completed, "the connect signal completes once the connection closed")
        XCTAssertTrue(c.isClosed)

        server.dispose()
        assertAllHandlesClosedAndClose(loop)
    }

    func testWritesAfterCloseAndShutdownFailClearly() throws {
        let loop = try EventLoop()
        let (port, server, _) = startServer(on: loop) { _ in .never() }
        let connection = Locked<TCPConnection?>(nil)
        let client = Recorder<TCPConnection>()
        client.subscribe(TCP.connect(host: "127.0.0.1", port: port, on: loop).doNext { c in connection.withLock { $0 = c } })
        XCTAssertTrue(loop.run(until: { connection.value != nil }, timeout: 30))
        let c = connection.value!

        let shutdown = Recorder<Void>()
        shutdown.subscribe(c.shutdown())
        XCTAssertTrue(loop.run(until: { shutdown.terminated }, timeout: 30))
        XCTAssertTrue(shutdown.completed)
        let afterShutdown = Recorder<Void>()
        afterShutdown.subscribe(c.write("late"))
        XCTAssertEqual(afterShutdown.error as? UVError, .brokenPipe)

        c.close()
        let afterClose = Recorder<Void>()
        afterClose.subscribe(c.write("later"))
        XCTAssertEqual((afterClose.error as? UVError)?.name, "ENOTCONN")
        let readsAfterClose = Recorder<[UInt8]>()
        readsAfterClose.subscribe(c.reads)
        XCTAssertTrue(readsAfterClose.completed, "closed without an error: reads complete")

        server.dispose()
        assertAllHandlesClosedAndClose(loop)
    }
}

/// Runs `loop` for `seconds`, whatever happens.
func runLoop(_ loop: EventLoop, for seconds: Double) {
    _ = loop.run(until: { false }, timeout: seconds)
}

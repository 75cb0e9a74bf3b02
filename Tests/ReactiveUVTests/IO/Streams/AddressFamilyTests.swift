import CLibUV
import CSystemShims
import Glibc
import XCTest

@testable import ReactiveUV

/// Echo over IPv6 loopback and over a Unix domain socket; Unix socket errors; half-close.
final class AddressFamilyTests: XCTestCase {
    func testIPv6LoopbackEcho() throws {
        let loop = try EventLoop()
        let (port, server, errors) = startServer(on: loop, host: "::1") { echo($0) }
        if port == 0 {
            server.dispose()
            assertAllHandlesClosedAndClose(loop)
            throw XCTSkip("IPv6 loopback unavailable: \(String(describing: errors.error))")
        }
        let payload = (0..<100).map { Array("v6 message \($0)\n".utf8) }
        let result = Recorder<[UInt8]>()
        let connection = Locked<TCPConnection?>(nil)
        result.subscribe(roundTrip(
            TCP.connect(host: "[::1]", port: port, on: loop).doNext { c in connection.withLock { $0 = c } }, payload))
        XCTAssertTrue(loop.run(until: { result.terminated }, timeout: 30))
        XCTAssertNil(result.error)
        XCTAssertEqual(result.values.first, payload.flatMap { $0 })
        XCTAssertEqual(connection.value?.remoteAddress?.family, .ipv6)
        XCTAssertEqual(connection.value?.remoteAddress?.description, "[::1]:\(port)")

        server.dispose()
        assertAllHandlesClosedAndClose(loop)
    }

    /// A host name goes through `uv_getaddrinfo`; the connection tries the addresses in the
    /// resolver's order (`localhost` may come first as `::1`, where nothing listens: refused,
    /// then 127.0.0.1, where the server is).
    func testConnectingByNameResolvesAndFallsBackAcrossAddresses() throws {
        let loop = try EventLoop()
        let (port, server, errors) = startServer(on: loop, host: "127.0.0.1") { echo($0) }
        XCTAssertNotEqual(port, 0, "\(String(describing: errors.error))")
        let payload = (0..<10).map { Array("by name \($0)\n".utf8) }
        let result = Recorder<[UInt8]>()
        let connection = Locked<TCPConnection?>(nil)
        result.subscribe(roundTrip(
            TCP.connect(host: "localhost", port: port, on: loop).doNext { c in connection.withLock { $0 = c } }, payload))
        XCTAssertTrue(loop.run(until: { result.terminated }, timeout: 30))
        XCTAssertNil(result.error)
        XCTAssertEqual(result.values.first, payload.flatMap { $0 })
        XCTAssertEqual(connection.value?.remoteAddress?.description, "127.0.0.1:\(port)")

        // Disposed while the name is being resolved: nothing is sent, nothing stays open.
        let early = Recorder<TCPConnection>()
        let subscription = early.subscribe(TCP.connect(host: "localhost", port: port, on: loop))
        subscription.dispose()
        _ = loop.run(until: { false }, timeout: 0.2)
        XCTAssertTrue(early.values.isEmpty)
        XCTAssertFalse(early.terminated)

        server.dispose()
        assertAllHandlesClosedAndClose(loop)
    }

    func testUnixDomainSocketEcho() throws {
        let loop = try EventLoop()
        let directory = try makeTemporaryDirectory()
        let path = directory + "/echo.sock"
        let listening = Locked(false)
        let serverErrors = Recorder<Void>()
        let server = serverErrors.subscribe(
            UnixSocket.listen(path: path, on: loop, onListening: { _ in listening.withLock { $0 = true } })
                .flattenMap { echo($0) })
        XCTAssertTrue(loop.run(until: { listening.value || serverErrors.terminated }, timeout: 30))
        XCTAssertTrue(listening.value, "\(String(describing: serverErrors.error))")

        let payload = (0..<100).map { Array("unix message \($0)\n".utf8) }
        let result = Recorder<[UInt8]>()
        result.subscribe(roundTrip(UnixSocket.connect(path: path, on: loop), payload))
        XCTAssertTrue(loop.run(until: { result.terminated }, timeout: 30))
        XCTAssertNil(result.error)
        XCTAssertEqual(result.values.first, payload.flatMap { $0 })

        // Listening on the same path again: EADDRINUSE.
        let again = Recorder<UnixSocketConnection>()
        again.subscribe(UnixSocket.listen(path: path, on: loop))
        XCTAssertTrue(loop.run(until: { again.terminated }, timeout: 30))
        XCTAssertEqual(again.error as? UVError, .addressInUse)

        server.dispose()
        assertAllHandlesClosedAndClose(loop)
        XCTAssertNotEqual(access(path, F_OK), 0, "the socket file is removed when listening stops")
        rmdir(directory)
    }

    func testUnixSocketErrors() throws {
        let loop = try EventLoop()
        let directory = try makeTemporaryDirectory()
        let missing = Recorder<UnixSocketConnection>()
        missing.subscribe(UnixSocket.connect(path: directory + "/nobody.sock", on: loop))
        let tooLong = Recorder<UnixSocketConnection>()
        tooLong.subscribe(UnixSocket.listen(path: directory + "/" + String(repeating: "x", count: 200), on: loop))
        let noDirectory = Recorder<UnixSocketConnection>()
        noDirectory.subscribe(UnixSocket.listen(path: directory + "/missing/dir.sock", on: loop))
        XCTAssertTrue(loop.run(until: { missing.terminated && tooLong.terminated && noDirectory.terminated }, timeout: 30))
        XCTAssertEqual(missing.error as? UVError, .noSuchFile)
        XCTAssertTrue("\(missing.error!)".contains("connect on \(directory)/nobody.sock"), "\(missing.error!)")
        XCTAssertEqual((tooLong.error as? UVError)?.name, "ENAMETOOLONG")
        // libuv's uv_pipe_bind reports a missing directory as EACCES (as Windows would).
        XCTAssertEqual(noDirectory.error as? UVError, .permissionDenied)
        assertAllHandlesClosedAndClose(loop)
        rmdir(directory)
    }

    func testHalfCloseThePeerSeesEndOfStreamAndCanStillReply() throws {
        let loop = try EventLoop()
        // The server reads everything until the client ends its side, then replies and ends.
        let serverEvents = Locked<[String]>([])
        let (port, server, _) = startServer(on: loop) { connection in
            connection.reads
                .aggregate(start: 0) { $0 + $1.count }
                .doCompleted { serverEvents.withLock { $0.append("reads completed") } }
                .flattenMap { count -> Signal<Void> in
                    serverEvents.withLock { $0.append("read \(count) bytes") }
                    return connection.write("got \(count) bytes\n")
                }
                .then { connection.shutdown() }
                .doCompleted { serverEvents.withLock { $0.append("replied and shut down") } }
        }
        let reply = Recorder<String>()
        let connection = Locked<TCPConnection?>(nil)
        let client = TCP.connect(host: "127.0.0.1", port: port, on: loop).flattenMap { c -> Signal<String> in
            connection.withLock { $0 = c }
            return c.write("hello").then { c.shutdown() }.then { c.lines }
        }
        reply.subscribe(client)
        XCTAssertTrue(loop.run(until: { reply.terminated }, timeout: 30))
        XCTAssertNil(reply.error)
        XCTAssertEqual(reply.values, ["got 5 bytes"])
        XCTAssertEqual(serverEvents.value, ["read 5 bytes", "reads completed", "replied and shut down"])
        // Both sides ended: the connection closed by itself, and so the connect completed.
        XCTAssertTrue(reply.completed)
        XCTAssertTrue(connection.value?.isClosed ?? false)

        server.dispose()
        assertAllHandlesClosedAndClose(loop)
    }

    func testNoDelayAndKeepAliveOptionsReachTheSocket() throws {
        let loop = try EventLoop()
        let options = TCPOptions(noDelay: true, keepAlive: 30)
        let (port, server, _) = startServer(on: loop, options: options) { _ in .never() }
        let connection = Locked<TCPConnection?>(nil)
        let client = Recorder<TCPConnection>()
        let subscription = client.subscribe(
            TCP.connect(host: "127.0.0.1", port: port, options: options, on: loop).doNext { c in connection.withLock { $0 = c } })
        XCTAssertTrue(loop.run(until: { connection.value != nil }, timeout: 30))
        let c = connection.value!
        func option(_ level: Int32, _ name: Int32) -> Int32 {
            var fd: uv_os_fd_t = -1
            XCTAssertEqual(uv_fileno(c.stream.uvHandle, &fd), 0)
            var value: Int32 = -1
            var length = socklen_t(MemoryLayout<Int32>.size)
            XCTAssertEqual(getsockopt(fd, level, name, &value, &length), 0)
            return value
        }
        XCTAssertNotEqual(option(Int32(IPPROTO_TCP), TCP_NODELAY), 0)
        XCTAssertNotEqual(option(SOL_SOCKET, SO_KEEPALIVE), 0)
        XCTAssertEqual(option(Int32(IPPROTO_TCP), TCP_KEEPIDLE), 30)
        XCTAssertEqual(c.localAddress?.host, "127.0.0.1")
        XCTAssertEqual(c.remoteAddress?.port, port)
        XCTAssertEqual("\(c)", "127.0.0.1:\(port)")

        // Changed later, from another thread: applied on the loop.
        TestThread {
            c.setNoDelay(false)
            c.setKeepAlive(false)
        }.join()
        runLoop(loop, for: 0.05)
        XCTAssertEqual(option(Int32(IPPROTO_TCP), TCP_NODELAY), 0)
        XCTAssertEqual(option(SOL_SOCKET, SO_KEEPALIVE), 0)

        subscription.dispose()
        server.dispose()
        assertAllHandlesClosedAndClose(loop)
    }
}

/// A fresh directory under /tmp for sockets and files.
func makeTemporaryDirectory() throws -> String {
    var template = Array("/tmp/reactiveuv-io-XXXXXX".utf8CString)
    guard let result = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
        throw UVError(code: errno, operation: "mkdtemp")
    }
    return String(cString: result)
}

import CSystemShims
import Glibc
import XCTest

@testable import ReactiveUV

/// Many clients against one echo server, both written as signal pipelines, on two loops
/// (the server on its own thread, the clients on the test's thread).
final class TCPEchoTests: XCTestCase {
    /// Message `n` of client `c`: 16 bytes, numbered, ending in a line break.
    static func message(client: Int, _ n: Int) -> [UInt8] {
        var text = "c\(client)m\(n)"
        while text.utf8.count < 15 { text += "." }
        return Array(text.utf8) + [10]
    }

    func testTwoHundredClientsEachEchoAThousandNumberedMessagesInOrder() throws {
        let server = LoopThread()
        let (port, serverSubscription, serverErrors) = startServer(on: server.loop) { echo($0) }
        XCTAssertNotEqual(port, 0, "server listening: \(String(describing: serverErrors.error))")

        let loop = try EventLoop()
        let clients = 200
        let messages = 1000
        let payloads = (0..<clients).map { c in (0..<messages).map { TCPEchoTests.message(client: c, $0) } }
        let started = csys_monotonic_ns()
        let results = payloads.map { payload -> Recorder<[UInt8]> in
            let recorder = Recorder<[UInt8]>()
            recorder.subscribe(roundTrip(TCP.connect(host: "127.0.0.1", port: port, on: loop), payload))
            return recorder
        }
        XCTAssertTrue(
            loop.run(until: { results.allSatisfy { $0.terminated } }, timeout: 120),
            "clients finished: \(results.filter { $0.terminated }.count) of \(clients)")
        let seconds = Double(csys_monotonic_ns() - started) / 1e9
        print("echo: \(clients) clients × \(messages) messages in \(seconds) s")

        for (c, result) in results.enumerated() {
            XCTAssertNil(result.error, "client \(c)")
            XCTAssertTrue(result.completed, "client \(c) completed")
            let expected = payloads[c].flatMap { $0 }
            let received = result.values.first ?? []
            XCTAssertEqual(received.count, expected.count, "client \(c): every byte came back")
            XCTAssertTrue(received == expected, "client \(c): bytes in order, uncorrupted")
        }

        // Every connection closed on both sides: the server holds its listening handle only.
        let deadline = csys_monotonic_ns() + 30_000_000_000
        while server.sync({ userHandleCount(server.loop) }) != 1 && csys_monotonic_ns() < deadline { usleep(2000) }
        XCTAssertEqual(server.sync { userHandleCount(server.loop) }, 1, "server: only the listener is left")
        XCTAssertNil(serverErrors.error)
        XCTAssertFalse(serverErrors.terminated)

        serverSubscription.dispose()
        assertAllHandlesClosedAndClose(loop)
        server.finish()
    }

    func testEchoBetweenTheMainLoopAndABackgroundPoolLoop() throws {
        // The server on a shared background loop thread, the client on the main loop by
        // default (`on:` left out on the main thread).
        let background = LoopPool.shared.next()
        let port = Locked(0)
        let serverThreads = Locked<Set<Int64>>([])
        let serverErrors = Recorder<Void>()
        let server = serverErrors.subscribe(
            TCP.listen(host: "127.0.0.1", port: 0, on: background, onListening: { address in
                port.withLock { $0 = address.port }
            })
            .flattenMap { connection -> Signal<Void> in
                serverThreads.withLock { _ = $0.insert(csys_thread_id()) }
                return echo(connection)
            })
        XCTAssertTrue(runMainLoop(timeout: 30) { port.value != 0 })

        let payload = (0..<100).map { TCPEchoTests.message(client: 0, $0) }
        let result = Recorder<[UInt8]>()
        result.subscribe(roundTrip(TCP.connect(host: "127.0.0.1", port: port.value), payload))
        XCTAssertTrue(runMainLoop(timeout: 30) { result.terminated })
        XCTAssertNil(result.error)
        XCTAssertEqual(result.values.first, payload.flatMap { $0 })
        XCTAssertEqual(result.threads, [Int64(getpid())], "client events on the main thread")
        XCTAssertEqual(serverThreads.value, [background.threadID], "server events on the loop's thread")

        // Disposed from this thread: the close hops to the background loop.
        server.dispose()
        XCTAssertTrue(runMainLoop(timeout: 10) { ioResourceCount(EventLoop.main) == 0 })
        let left = Locked(-1)
        let deadline = csys_monotonic_ns() + 10_000_000_000
        while csys_monotonic_ns() < deadline {
            let closed = Latch()
            background.execute {
                left.withLock { $0 = ioResourceCount(background) }
                closed.countDown()
            }
            _ = closed.wait(timeout: 10)
            if left.value == 0 { break }
            usleep(2000)
        }
        XCTAssertEqual(left.value, 0, "the background loop holds no IO handles")
        XCTAssertNil(serverErrors.error)
    }
}

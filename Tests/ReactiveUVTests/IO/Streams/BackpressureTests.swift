import CLibUV
import CSystemShims
import Glibc
import XCTest

@testable import ReactiveUV

/// A peer that does not read: the writer's memory stays bounded by the high-water mark,
/// and each policy does what it says.
final class BackpressureTests: XCTestCase {
    static let highWaterMark = 256 << 10
    static let chunk = [UInt8](repeating: 0x55, count: 64 << 10)
    /// 64 MiB offered at once by a source that cannot pause (far more than the kernel's
    /// socket buffers on loopback take).
    static let flood = Signal.fromArray(Array(repeating: chunk, count: 1024))
    static let floodBytes = 1024 * (64 << 10)

    func testDropAndCountDropsWholeWritesPastTheMarkAndCountsThem() throws {
        let loop = try EventLoop()
        let options = TCPOptions(highWaterMark: Self.highWaterMark, backpressure: .dropAndCount)
        let serverConnection = Locked<TCPConnection?>(nil)
        let sent = Recorder<Void>()
        let (port, server, _) = startServer(on: loop, options: options) { c in
            serverConnection.withLock { $0 = c }
            sent.subscribe(c.send(Self.flood).then { c.shutdown() })
            return .never()
        }
        let clientConnection = Locked<TCPConnection?>(nil)
        let client = Recorder<TCPConnection>()
        let clientSubscription = client.subscribe(
            TCP.connect(host: "127.0.0.1", port: port, on: loop).doNext { c in clientConnection.withLock { $0 = c } })
        XCTAssertTrue(loop.run(until: { (serverConnection.value?.droppedWrites ?? 0) > 0 }, timeout: 30))
        runLoop(loop, for: 0.1)

        let c = serverConnection.value!
        XCTAssertFalse(c.isClosed)
        XCTAssertFalse(sent.terminated, "accepted bytes still wait for the peer")
        XCTAssertLessThanOrEqual(c.stream.peakWriteQueueSize, Self.highWaterMark + Self.chunk.count, "memory bounded by the mark")
        XCTAssertLessThanOrEqual(c.writeQueueSize, Self.highWaterMark + Self.chunk.count)
        XCTAssertEqual(c.droppedBytes, c.droppedWrites * Self.chunk.count, "whole writes are dropped")
        XCTAssertGreaterThan(c.droppedWrites, 500, "most of 64 MiB was dropped")

        // Once the peer reads, everything that was not dropped arrives, and the send completes.
        let received = Recorder<Int>()
        received.subscribe(clientConnection.value!.reads.aggregate(start: 0) { $0 + $1.count })
        XCTAssertTrue(loop.run(until: { received.terminated && sent.terminated }, timeout: 60))
        XCTAssertTrue(sent.completed)
        XCTAssertEqual(received.values, [Self.floodBytes - c.droppedBytes])

        clientSubscription.dispose()
        server.dispose()
        assertAllHandlesClosedAndClose(loop)
    }

    func testDisconnectClosesTheConnectionWithAClearError() throws {
        let loop = try EventLoop()
        let options = TCPOptions(highWaterMark: Self.highWaterMark, backpressure: .disconnect)
        let serverConnection = Locked<TCPConnection?>(nil)
        let sent = Recorder<Void>()
        let closed = Recorder<Void>()
        let (port, server, _) = startServer(on: loop, options: options) { c in
            serverConnection.withLock { $0 = c }
            closed.subscribe(c.closed)
            sent.subscribe(c.send(Self.flood))
            return .never()
        }
        let client = Recorder<TCPConnection>()
        let clientSubscription = client.subscribe(TCP.connect(host: "127.0.0.1", port: port, on: loop))  // never reads
        XCTAssertTrue(loop.run(until: { sent.terminated && closed.terminated }, timeout: 30))
        let error = try XCTUnwrap(sent.error as? WriteQueueFullError, "\(String(describing: sent.error))")
        XCTAssertEqual(error.policy, .disconnect)
        XCTAssertEqual(error.limit, Self.highWaterMark)
        XCTAssertGreaterThanOrEqual(error.queuedBytes, Self.highWaterMark)
        XCTAssertTrue(error.description.hasPrefix("write queue full: "), error.description)
        XCTAssertTrue(error.description.contains("policy disconnect"), error.description)
        XCTAssertTrue(closed.error is WriteQueueFullError, "the connection closed with the same error")
        let c = serverConnection.value!
        XCTAssertTrue(c.isClosed)
        XCTAssertLessThanOrEqual(c.stream.peakWriteQueueSize, Self.highWaterMark + Self.chunk.count)

        clientSubscription.dispose()
        server.dispose()
        assertAllHandlesClosedAndClose(loop)
    }

    func testPauseSourceGivesUpOnASourceThatCannotPauseAtFourTimesTheMark() throws {
        let loop = try EventLoop()
        let options = TCPOptions(highWaterMark: Self.highWaterMark, backpressure: .pauseSource)
        let serverConnection = Locked<TCPConnection?>(nil)
        let sent = Recorder<Void>()
        let (port, server, _) = startServer(on: loop, options: options) { c in
            serverConnection.withLock { $0 = c }
            sent.subscribe(c.send(Self.flood))
            return .never()
        }
        let client = Recorder<TCPConnection>()
        let clientSubscription = client.subscribe(TCP.connect(host: "127.0.0.1", port: port, on: loop))  // never reads
        XCTAssertTrue(loop.run(until: { sent.terminated }, timeout: 30))
        let error = try XCTUnwrap(sent.error as? WriteQueueFullError, "\(String(describing: sent.error))")
        XCTAssertEqual(error.policy, .pauseSource)
        XCTAssertEqual(error.limit, 4 * Self.highWaterMark)
        XCTAssertLessThanOrEqual(serverConnection.value!.stream.peakWriteQueueSize, 4 * Self.highWaterMark + Self.chunk.count)

        clientSubscription.dispose()
        server.dispose()
        assertAllHandlesClosedAndClose(loop)
    }

    func testPauseSourceStopsReadingTheRelayedConnectionUntilTheSlowPeerCatchesUp() throws {
        // The server relays its second connection's reads to its first: `slow.send(producer.reads)`.
        try assertRelayPausesTheProducerUntilTheSlowPeerReads(highWaterMark: Self.highWaterMark, size: 48 << 20) { slow, producer in
            slow.send(producer.reads).then { slow.shutdown() }
        }
    }
}

import Glibc
import XCTest

@testable import ReactiveUV

/// `StreamConnection.sendDirect`: chunks written from borrowed memory through the stream's
/// sender keep `send`'s order, completion and backpressure.
final class StreamConnectionDirectSendTests: XCTestCase {
    static let highWaterMark = 256 << 10

    func testBorrowedChunksAndPlainWritesArriveInTheOrderTheyWereMadeAndTheSendCompletes() throws {
        let loop = try EventLoop()
        let sent = Recorder<Void>()
        let (port, server, _) = startServer(on: loop) { c in
            sent.subscribe(c.sendDirect { sender in
                // The scratch is reused (overwritten) right after each write: what the
                // kernel did not take must have been copied.
                var scratch: [UInt8] = Array("one,".utf8)
                scratch.withUnsafeBytes { sender.write($0) }
                scratch = Array("XXXX".utf8)
                _ = c.write(Array("two,".utf8)).subscribe()
                scratch = Array("three".utf8)
                scratch.withUnsafeBytes { sender.write($0) }
                sender.complete()
                return Disposable {}
            }.then { c.shutdown() })
            return .never()
        }
        let bytes = Confined<[UInt8]>([])
        let received = Recorder<[UInt8]>()
        let client = Recorder<TCPConnection>()
        let clientSubscription = client.subscribe(TCP.connect(host: "127.0.0.1", port: port, on: loop).doNext { c in
            received.subscribe(c.reads.doNext { bytes.value.append(contentsOf: $0) })
        })
        XCTAssertTrue(loop.run(until: { received.terminated && sent.terminated }, timeout: 30))
        XCTAssertTrue(sent.completed, "\(String(describing: sent.error))")
        XCTAssertEqual(String(decoding: bytes.value, as: UTF8.self), "one,two,three")
        clientSubscription.dispose()
        server.dispose()
        assertAllHandlesClosedAndClose(loop)
    }

    func testAFailedSendEndsItsSourceAndLaterWritesAreIgnored() throws {
        let loop = try EventLoop()
        let sent = Recorder<Void>()
        let disposed = Confined(false)
        let (port, server, _) = startServer(on: loop) { c in
            sent.subscribe(c.sendDirect { sender in
                sender.fail(UVError(code: -EIO, operation: "test source", target: "test"))
                XCTAssertFalse(sender.isActive)
                [UInt8]("late".utf8).withUnsafeBytes { sender.write($0) }
                return Disposable { disposed.value = true }
            })
            return .never()
        }
        let client = Recorder<TCPConnection>()
        let clientSubscription = client.subscribe(TCP.connect(host: "127.0.0.1", port: port, on: loop))
        XCTAssertTrue(loop.run(until: { sent.terminated && disposed.value }, timeout: 30))
        XCTAssertEqual((sent.error as? UVError)?.code, -EIO)
        clientSubscription.dispose()
        server.dispose()
        assertAllHandlesClosedAndClose(loop)
    }

    func testPauseSourceStopsTheReadsTheWriterSubscribedUntilTheSlowPeerCatchesUp() throws {
        // As BackpressureTests' relay, with the relay writing each read chunk itself:
        // without the reads collected while `start` runs, nothing pauses them and the
        // queue passes four times the mark (the connection then closes).
        try assertRelayPausesTheProducerUntilTheSlowPeerReads(highWaterMark: Self.highWaterMark, size: 24 << 20) { slow, producer in
            slow.sendDirect { sender in
                producer.reads.subscribe(
                    next: { bytes in bytes.withUnsafeBytes { sender.write($0) } },
                    error: { sender.fail($0) }, completed: { sender.complete() })
            }.then { slow.shutdown() }
        }
    }
}

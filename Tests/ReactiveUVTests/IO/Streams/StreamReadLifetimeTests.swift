import CSystemShims
import Glibc
import XCTest

@testable import ReactiveUV

/// `UVStream.didRead` calls the stream's reader without retaining it: while a delivery is
/// under way, a reader the subscriber clears from the stream (by disposing itself, closing
/// the connection, or starting another subscription) is parked in `retiredReaders` and
/// released only when the delivery returned. These tests take those paths and check that
/// the parked readers are released afterwards and the stream goes on working.
final class StreamReadLifetimeTests: XCTestCase {
    private final class Box: @unchecked Sendable {
        // Thread-safety: used on the loop thread only (the test runs the loop itself).
        var first: Disposable?
        var second: Disposable?
        var firstValues: [[UInt8]] = []
        var secondValues: [[UInt8]] = []
        weak var firstReader: StreamReader?
        var retiredDuringSink = 0
        var connection: TCPConnection?
    }

    /// A blocking client of the test's server (listening on `port`), which sent `text`.
    private func client(of port: Int, _ errors: Recorder<Void>, sending text: String) -> Int32 {
        XCTAssertNotEqual(port, 0, "listening: \(String(describing: errors.error))")
        let fd = connectBlockingClient(port: port)
        XCTAssertGreaterThanOrEqual(fd, 0)
        if fd >= 0 { writeAll(fd, text) }
        return fd
    }

    func testSubscriberDisposingItselfAndResubscribingInsideItsSink() throws {
        let loop = try EventLoop()
        let box = Box()
        let (port, server, errors) = startServer(on: loop) { connection in
            box.connection = connection
            box.first = connection.reads.subscribe(next: { chunk in
                box.firstValues.append(chunk)
                box.firstReader = connection.stream.reader
                // Ends this subscription (the stream's reader is cleared: parked until the
                // delivery returns) and starts another one (the stream's new reader).
                box.first?.dispose()
                box.second = connection.reads.subscribe(next: { box.secondValues.append($0) })
                box.retiredDuringSink = connection.stream.retiredReaders.count
            })
            return .never()
        }
        let fd = client(of: port, errors, sending: "one")
        XCTAssertTrue(loop.run(until: { box.firstValues.count == 1 }, timeout: 30))
        XCTAssertEqual(box.retiredDuringSink, 1, "the disposed reader was parked during the delivery")
        XCTAssertEqual(box.connection?.stream.retiredReaders.count, 0, "and released after it")
        XCTAssertEqual(box.connection?.stream.deliveryDepth, 0)
        XCTAssertNil(box.firstReader, "the disposed reader is gone once the delivery returned")
        writeAll(fd, "two")
        XCTAssertTrue(loop.run(until: { box.secondValues.count == 1 }, timeout: 30))
        XCTAssertEqual(box.firstValues, [Array("one".utf8)])
        XCTAssertEqual(box.secondValues, [Array("two".utf8)])
        box.second?.dispose()
        box.connection?.close()
        box.connection = nil
        Glibc.close(fd)
        server.dispose()
        assertAllHandlesClosedAndClose(loop)
    }

    func testSubscriberClosingTheConnectionInsideItsSink() throws {
        let loop = try EventLoop()
        let box = Box()
        let recorder = Recorder<[UInt8]>()
        let (port, server, errors) = startServer(on: loop) { connection in
            box.connection = connection
            recorder.subscribe(connection.reads.on(next: { chunk in
                box.firstValues.append(chunk)
                box.firstReader = connection.stream.reader
                connection.close()  // completes the reader from inside its own delivery
                box.retiredDuringSink = connection.stream.retiredReaders.count
            }))
            return .never()
        }
        let fd = client(of: port, errors, sending: "bye")
        XCTAssertTrue(loop.run(until: { recorder.terminated }, timeout: 30))
        // `on(next:)` runs before the value is forwarded: the close completed the
        // subscription first, so the recorder sees only the completion.
        XCTAssertEqual(box.firstValues, [Array("bye".utf8)])
        XCTAssertTrue(recorder.completed)
        XCTAssertEqual(box.retiredDuringSink, 1, "the reader was parked during the delivery")
        XCTAssertEqual(box.connection?.stream.retiredReaders.count, 0, "and released after it")
        XCTAssertNil(box.firstReader, "the closed stream's reader is gone once the delivery returned")
        box.connection = nil
        Glibc.close(fd)
        server.dispose()
        assertAllHandlesClosedAndClose(loop)
    }
}

import CSystemShims
import Glibc
import XCTest

@testable import ReactiveUV

/// The array a read is sent in is refilled by the next read on the thread (``ReadScratch``):
/// a subscriber that keeps its chunks must still see each one as it was read, and one that
/// does not must get every read's own bytes.
final class ReadChunkReuseTests: XCTestCase {
    /// Reads of one length, then shorter, then longer, with different bytes each time.
    static let messages: [[UInt8]] = [
        Array("first message..\n".utf8),
        Array("second message.\n".utf8),
        Array("third message..\n".utf8),
        Array("short one\n".utf8),
        Array(repeating: UInt8(ascii: "x"), count: 199) + [10],
        Array(repeating: UInt8(ascii: "y"), count: 199) + [10],
    ]

    /// Serves one connection on `loop` with `handle` (given the connection's reads), sends
    /// the messages one at a time from a plain socket (each only after the previous one has
    /// arrived, so every message is one read), closes the socket, and returns what the
    /// handler recorded.
    private func serveOneClient<T>(_ handle: @escaping (Signal<[UInt8]>) -> Signal<T>) throws -> Recorder<T> {
        let loop = try EventLoop()
        let recorder = Recorder<T>()
        let (port, server, errors) = startServer(on: loop) { connection in
            recorder.subscribe(handle(connection.reads))
            return .never()
        }
        XCTAssertNotEqual(port, 0, "listening: \(String(describing: errors.error))")
        let fd = connectBlockingClient(port: port)
        XCTAssertGreaterThanOrEqual(fd, 0)
        for (i, message) in Self.messages.enumerated() {
            let written = message.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            XCTAssertEqual(written, message.count)
            XCTAssertTrue(loop.run(until: { recorder.values.count == i + 1 }, timeout: 30), "message \(i) arrived")
        }
        Glibc.close(fd)
        XCTAssertTrue(loop.run(until: { recorder.terminated }, timeout: 30), "reads completed at the client's end")
        server.dispose()
        assertAllHandlesClosedAndClose(loop)
        return recorder
    }

    func testChunksKeptBySubscriberAreNotOverwrittenByLaterReads() throws {
        // The recorder keeps every array it was sent: each later read of the same length
        // would overwrite the last one in place if the reuse ignored that it is shared.
        let recorder = try serveOneClient { $0 }
        XCTAssertNil(recorder.error)
        XCTAssertTrue(recorder.completed)
        XCTAssertEqual(recorder.values, Self.messages)
    }

    func testChunksNotKeptStillCarryEachReadsOwnBytes() throws {
        // Only the text of each chunk is kept, so its array is free to be refilled in place:
        // every read must still be sent with its own bytes and length.
        let recorder = try serveOneClient { $0.map { String(decoding: $0, as: UTF8.self) } }
        XCTAssertNil(recorder.error)
        XCTAssertTrue(recorder.completed)
        XCTAssertEqual(recorder.values, Self.messages.map { String(decoding: $0, as: UTF8.self) })
    }

    func testCapacityOfAReusedChunkStaysNearItsCount() {
        // A spare 64 KiB array is not refilled with a few bytes (a kept chunk would hold
        // 64 KiB); one of a fitting size is.
        let scratch = ReadScratch.current
        let small: [UInt8] = [1, 2, 3]
        scratch.recycle([UInt8](repeating: 1, count: 65536))
        var address: UnsafePointer<UInt8>?
        do {
            let chunk = small.withUnsafeBufferPointer { scratch.chunk($0.baseAddress!, $0.count) }
            XCTAssertEqual(chunk, small)
            XCTAssertLessThanOrEqual(chunk.capacity, 256, "a new array, not the 64 KiB spare")
            address = chunk.withUnsafeBufferPointer { $0.baseAddress }
            scratch.recycle(chunk)
        }
        let other: [UInt8] = [4, 5, 6]
        let again = other.withUnsafeBufferPointer { scratch.chunk($0.baseAddress!, $0.count) }
        XCTAssertEqual(again, other)
        XCTAssertEqual(again.withUnsafeBufferPointer { $0.baseAddress }, address, "the spare refilled, not a new array")
        scratch.recycle([])
    }
}

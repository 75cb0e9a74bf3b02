import CLibUV
import Glibc
import XCTest

@testable import ReactiveUV

/// A file as the source of a `send` (to a socket, to a child's standard input): its reads
/// pause while the peer is slow, so a file of any size goes out with the write queue held
/// near the high-water mark. File reads could not pause: past four times the mark (4 MiB
/// by default) the send failed with `WriteQueueFullError` — and `Subprocess.run(["cat"],
/// input: File.read(path))` of a 10 MiB file killed `cat` and failed (found by probing,
/// 2026-11-27).
final class FileSendBackpressureTests: XCTestCase {
    var directory: TemporaryDirectory!

    override func setUpWithError() throws { directory = try TemporaryDirectory() }
    override func tearDown() { directory.remove() }

    /// `size` bytes that differ from chunk to chunk (a misplaced or repeated chunk shows).
    func payload(_ size: Int) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
            for i in 0..<size { buffer[i] = UInt8(truncatingIfNeeded: i &* 31 &+ i >> 16) }
            count = size
        }
    }

    /// 24 MiB sent from a file to a client that reads nothing for a while, then reads:
    /// every byte arrives in order, the send completes, and the server's write queue never
    /// held more than the mark and one chunk.
    func testAFileSentToASlowPeerPausesItsReadsAndLosesNothing() throws {
        let loop = try EventLoop()
        let highWaterMark = 256 << 10
        let contents = payload(24 << 20)
        let path = directory.file("big.bin")
        writeFile(path, contents)
        let serverConnection = Locked<TCPConnection?>(nil)
        let sent = Recorder<Void>()
        let options = TCPOptions(highWaterMark: highWaterMark, backpressure: .pauseSource)
        let (port, server, _) = startServer(on: loop, options: options) { c in
            serverConnection.withLock { $0 = c }
            sent.subscribe(c.send(File.read(path, on: loop)).then { c.shutdown() })
            return .never()
        }
        let client = Locked<TCPConnection?>(nil)
        let clientSubscription = Recorder<TCPConnection>().subscribe(
            TCP.connect(host: "127.0.0.1", port: port, on: loop).doNext { c in client.withLock { $0 = c } })
        XCTAssertTrue(loop.run(until: { client.value != nil && serverConnection.value != nil }, timeout: 30))
        runLoop(loop, for: 0.3)  // the client reads nothing yet
        XCTAssertFalse(sent.terminated, "\(String(describing: sent.error))")

        let bytes = Confined<[UInt8]>([])
        bytes.value.reserveCapacity(contents.count)
        let received = Recorder<[UInt8]>()
        received.subscribe(client.value!.reads.doNext { bytes.value.append(contentsOf: $0) }.ignoreValues())
        XCTAssertTrue(loop.run(until: { received.terminated && sent.terminated }, timeout: 120))
        XCTAssertNil(sent.error)
        XCTAssertTrue(sent.completed)
        XCTAssertNil(received.error)
        XCTAssertEqual(bytes.value.count, contents.count)
        XCTAssertTrue(bytes.value == contents, "every byte in order")
        XCTAssertLessThanOrEqual(serverConnection.value!.stream.peakWriteQueueSize, highWaterMark + File.defaultChunkSize)

        clientSubscription.dispose()
        server.dispose()
        assertAllHandlesClosedAndClose(loop)
    }

    /// A 10 MiB file as `cat`'s input: `cat` gives every byte back and exits 0. And a file
    /// as the input of a child that exits after one byte: not an error, and the paused
    /// file is closed (no handle or descriptor left when the loop closes).
    func testAFileAsAChildsInputIsReadAsTheChildTakesIt() throws {
        let loop = try EventLoop()
        let contents = payload(10 << 20)
        let path = directory.file("input.bin")
        writeFile(path, contents)
        let environment = ["PATH": "/usr/bin:/bin"]
        let events = Recorder<SubprocessEvent>()
        events.subscribe(Subprocess.run(["cat"], environment: environment, input: File.read(path, on: loop), on: loop))
        XCTAssertTrue(loop.run(until: { events.terminated }, timeout: 120))
        XCTAssertNil(events.error)
        let output = SubprocessTests.bytes(events.values, stdout: true)
        XCTAssertEqual(output.count, contents.count)
        XCTAssertTrue(output == contents, "every byte in order")
        XCTAssertEqual(events.values.last, .exit(SubprocessExit(status: 0)))

        let descriptorsBefore = openDescriptorCount()
        let early = Recorder<SubprocessEvent>()
        early.subscribe(Subprocess.run(["head", "-c", "1"], environment: environment, input: File.read(path, on: loop), on: loop))
        XCTAssertTrue(loop.run(until: { early.terminated }, timeout: 60))
        XCTAssertNil(early.error)
        XCTAssertEqual(SubprocessTests.bytes(early.values, stdout: true), [contents[0]])
        XCTAssertEqual(early.values.last, .exit(SubprocessExit(status: 0)))
        runLoop(loop, for: 0.2)  // the file's close request comes back
        XCTAssertEqual(openDescriptorCount(), descriptorsBefore, "the input file was closed")
        assertAllHandlesClosedAndClose(loop)
    }

    /// This process's open descriptors.
    func openDescriptorCount() -> Int {
        guard let dir = opendir("/proc/self/fd") else { return -1 }
        defer { closedir(dir) }
        var count = 0
        while readdir(dir) != nil { count += 1 }
        return count
    }
}

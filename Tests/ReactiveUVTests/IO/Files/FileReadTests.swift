import CLibUV
import CSystemShims
import Glibc
import XCTest

@testable import ReactiveUV

/// File.read and File.lines: contents equal the file's, errors name code and path,
/// disposal in the middle of a read stops cleanly, main and background loops both work.
final class FileReadTests: XCTestCase {
    var directory: TemporaryDirectory!

    override func setUpWithError() throws { directory = try TemporaryDirectory() }
    override func tearDown() { directory.remove() }

    /// Deterministic bytes, including line breaks, NULs and invalid UTF-8 (a random
    /// block repeated with a varying offset, cheap to make even in a debug build).
    func sampleBytes(_ count: Int) -> [UInt8] {
        var rng = SplitMix64(seed: 42)
        let block = (0..<4099).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        var bytes = [UInt8]()
        bytes.reserveCapacity(count)
        var round = 0
        while bytes.count < count {
            let slice = block[(round % 97)...].prefix(count - bytes.count)
            bytes.append(contentsOf: slice)
            round += 1
        }
        return bytes
    }

    func testReadOfAMultiChunkFileEqualsItsContents() throws {
        let loop = try EventLoop()
        let path = directory.file("data.bin")
        let contents = sampleBytes(5 * 65_536 + 12_345)
        writeFile(path, contents)

        let recorder = EventRecorder<[UInt8]>(loop: loop)
        _ = recorder.subscribe(File.read(path, on: loop))
        XCTAssertTrue(loop.run(until: { recorder.terminated }, timeout: 60))

        XCTAssertEqual(recorder.events.last, .completed)
        let chunks = recorder.values
        XCTAssertEqual(chunks.count, 6, "64 KiB chunks")
        XCTAssertTrue(chunks.dropLast().allSatisfy { $0.count == 65_536 })
        XCTAssertTrue(chunks.flatMap { $0 } == contents, "chunks joined equal the file")
        XCTAssertTrue(recorder.allOnLoopThread)
        assertLoopCleanAndClose(loop)
    }

    func testReadWithASmallChunkSizeAndOfAnEmptyFile() throws {
        let loop = try EventLoop()
        let path = directory.file("small.txt")
        writeFile(path, "hello, world")
        let small = EventRecorder<[UInt8]>()
        _ = small.subscribe(File.read(path, chunkSize: 5, on: loop))
        let emptyPath = directory.file("empty")
        writeFile(emptyPath, "")
        let empty = EventRecorder<[UInt8]>()
        _ = empty.subscribe(File.read(emptyPath, on: loop))
        XCTAssertTrue(loop.run(until: { small.terminated && empty.terminated }, timeout: 60))
        XCTAssertEqual(small.events, [.next(Array("hello".utf8)), .next(Array(", wor".utf8)), .next(Array("ld".utf8)), .completed])
        XCTAssertEqual(empty.events, [.completed])
        assertLoopCleanAndClose(loop)
    }

    func testLinesOfAMultiChunkFileEqualItsLines() throws {
        let loop = try EventLoop()
        let path = directory.file("lines.txt")
        var expected: [String] = []
        var text = ""
        for i in 0..<60_000 {
            let line = "\(i) " + String(repeating: "x", count: i % 37) + (i % 1000 == 0 ? "é€" : "")
            expected.append(line)
            text += line + (i % 3 == 0 ? "\r\n" : "\n")
        }
        text += "last line without a break"
        expected.append("last line without a break")
        writeFile(path, text)
        XCTAssertGreaterThan(text.utf8.count, 4 * TailFollower.chunkSize, "several chunks")

        let recorder = EventRecorder<String>(loop: loop)
        _ = recorder.subscribe(File.lines(path, on: loop))
        XCTAssertTrue(loop.run(until: { recorder.terminated }, timeout: 60))
        XCTAssertEqual(recorder.events.last, .completed)
        XCTAssertEqual(recorder.values.count, expected.count)
        XCTAssertTrue(recorder.values == expected, "File.lines equals the file's lines")
        assertLoopCleanAndClose(loop)
    }

    func testLinesFailsOnALineOverTheLimit() throws {
        let loop = try EventLoop()
        let path = directory.file("long.txt")
        writeFile(path, "short\n" + String(repeating: "y", count: 100) + "\nnever\n")
        let recorder = EventRecorder<String>()
        _ = recorder.subscribe(File.lines(path, maxLength: 50, on: loop))
        XCTAssertTrue(loop.run(until: { recorder.terminated }, timeout: 60))
        XCTAssertEqual(recorder.events, [.next("short"), .error(LineError.lineTooLong(maxLength: 50))])
        assertLoopCleanAndClose(loop)
    }

    func testReadOfAMissingFileFailsWithENOENTNamingThePath() throws {
        let loop = try EventLoop()
        let path = directory.file("missing.txt")
        let recorder = EventRecorder<[UInt8]>()
        _ = recorder.subscribe(File.read(path, on: loop))
        XCTAssertTrue(loop.run(until: { recorder.terminated }, timeout: 60))
        XCTAssertEqual(recorder.count, 1)
        let error = try XCTUnwrap(recorder.error as? UVError)
        XCTAssertEqual(error, UVError.noSuchFile)
        XCTAssertEqual(error.name, "ENOENT")
        XCTAssertEqual(error.operation, "open")
        XCTAssertEqual(error.target, path)
        XCTAssertTrue(error.description.contains("ENOENT") && error.description.contains(path), error.description)
        assertLoopCleanAndClose(loop)
    }

    func testReadOfADirectoryFailsWithEISDIRAndBadArgumentsFailWithoutTrapping() throws {
        let loop = try EventLoop()
        let directoryRead = EventRecorder<[UInt8]>()
        _ = directoryRead.subscribe(File.read(directory.path, on: loop))
        let zeroChunk = EventRecorder<[UInt8]>()
        _ = zeroChunk.subscribe(File.read(directory.file("x"), chunkSize: 0, on: loop))
        let nul = EventRecorder<String>()
        _ = nul.subscribe(File.lines("bad\u{0}path", on: loop))
        XCTAssertTrue(loop.run(until: { directoryRead.terminated && zeroChunk.terminated && nul.terminated }, timeout: 60))
        let error = try XCTUnwrap(directoryRead.error as? UVError)
        XCTAssertEqual(error.name, "EISDIR")
        XCTAssertEqual(error.operation, "read")
        XCTAssertEqual(error.target, directory.path)
        XCTAssertTrue(zeroChunk.error is SignalError)
        XCTAssertEqual((nul.error as? UVError)?.name, "EINVAL")
        assertLoopCleanAndClose(loop)
    }

    func testDisposingAfterTheFirstChunkStopsTheReadAndClosesTheFile() throws {
        let loop = try EventLoop()
        let path = directory.file("big.bin")
        writeFile(path, sampleBytes(16 << 20))
        let recorder = EventRecorder<[UInt8]>()
        let subscription = SerialDisposable()
        subscription.inner = File.read(path, on: loop).subscribe(next: { chunk in
            recorder.record(.next(chunk))
            subscription.dispose()  // from inside the chunk callback, on the loop thread
        }, error: { recorder.record(.error($0)) }, completed: { recorder.record(.completed) })
        XCTAssertTrue(loop.run(until: { recorder.count >= 1 }, timeout: 60))
        // Let anything that would (wrongly) follow arrive.
        _ = loop.run(until: { false }, timeout: 0.2)
        XCTAssertEqual(recorder.count, 1, "one chunk, then nothing: no more chunks, no completion")
        assertLoopCleanAndClose(loop)
    }

    func testDisposingFromAnotherThreadWhileAReadIsInFlight() throws {
        let loop = try EventLoop()
        let path = directory.file("big.bin")
        writeFile(path, sampleBytes(16 << 20))
        let recorder = EventRecorder<[UInt8]>()
        let subscription = recorder.subscribe(File.read(path, on: loop))
        // The first chunk arrived and the next read request is in flight (the loop is
        // not running while the other thread disposes).
        XCTAssertTrue(loop.run(until: { recorder.count >= 1 }, timeout: 60))
        TestThread { subscription.dispose() }.join()
        let seen = recorder.count
        assertLoopCleanAndClose(loop)
        XCTAssertEqual(recorder.count, seen, "nothing after dispose()")
        XCTAssertFalse(recorder.terminated)
    }

    func testReadOnTheMainLoopAndOnABackgroundLoop() throws {
        let path = directory.file("both.txt")
        writeFile(path, (0..<20_000).map { "line \($0)\n" }.joined())
        let expected = (0..<20_000).map { "line \($0)" }

        // Main loop: subscribed on the main thread without naming a loop.
        let before = mainLoopIOResources()
        let main = EventRecorder<String>(loop: .main)
        _ = main.subscribe(File.lines(path))
        XCTAssertTrue(runMainLoop(timeout: 60) { main.terminated })
        XCTAssertEqual(main.events.last, .completed)
        XCTAssertTrue(main.values == expected)
        XCTAssertTrue(main.allOnLoopThread, "events arrive on the main thread")
        XCTAssertTrue(runMainLoop(timeout: 60) { mainLoopIOResources() == before })

        // A background loop, subscribed from this (another) thread.
        let background = LoopPool.shared.next()
        let other = EventRecorder<String>(loop: background)
        _ = other.subscribe(File.lines(path, on: background))
        XCTAssertTrue(other.wait(timeout: 60) { $0.last?.isTerminating == true })
        XCTAssertEqual(other.events.last, .completed)
        XCTAssertTrue(other.values == expected)
        XCTAssertTrue(other.allOnLoopThread, "events arrive on the background loop's thread")
    }

    func testSubscribingOnAClosedLoopFailsInsteadOfHanging() throws {
        let loop = try EventLoop()
        try loop.close()
        let recorder = EventRecorder<[UInt8]>()
        _ = recorder.subscribe(File.read(directory.file("x"), on: loop))
        XCTAssertEqual((recorder.error as? UVError)?.name, "EINVAL")
    }
}

import CLibUV
import Glibc
import XCTest

@testable import ReactiveUV

/// `File.tailChunks`: the same follower as `File.tail`, delivering whole lines as bytes.
final class FileTailChunksTests: XCTestCase {
    var directory: TemporaryDirectory!

    override func setUpWithError() throws { directory = try TemporaryDirectory() }
    override func tearDown() { directory.remove() }

    func numbered(_ range: Range<Int>) -> String { range.map { "\($0)\n" }.joined() }

    /// Everything received so far, as text; every chunk must end with a line break.
    func text(_ recorder: EventRecorder<[UInt8]>) -> String {
        recorder.values.map { String(decoding: $0, as: UTF8.self) }.joined()
    }

    func testChunksHoldWholeLinesThroughAPartialLineAndARotation() throws {
        let loop = try EventLoop()
        let path = directory.file("app.log")
        let writer = open(path, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        writeAll(writer, numbered(0..<3) + "3-part")
        let recorder = EventRecorder<[UInt8]>(loop: loop)
        let subscription = recorder.subscribe(
            File.tailChunks(path, from: .beginning, pollInterval: 0.05, rotationQuietPeriod: 0.2, on: loop))
        XCTAssertTrue(loop.run(until: { self.text(recorder) == self.numbered(0..<3) }, timeout: 60))

        writeAll(writer, "ial\n")
        XCTAssertEqual(rename(path, path + ".1"), 0)
        writeAll(writer, numbered(4..<6) + "6-unfinished")
        close(writer)
        append(path, numbered(7..<10))
        let expected = numbered(0..<3) + "3-partial\n" + numbered(4..<6) + "6-unfinished\n" + numbered(7..<10)
        XCTAssertTrue(loop.run(until: { self.text(recorder) == expected }, timeout: 60), text(recorder))
        XCTAssertTrue(recorder.values.allSatisfy { $0.last == 10 }, "every chunk ends at a line break")
        subscription.dispose()
        assertLoopCleanAndClose(loop)
    }

    func testALineOverTheLimitFails() throws {
        let loop = try EventLoop()
        let path = directory.file("long.log")
        append(path, "short\n" + String(repeating: "x", count: 100) + "\n")
        let recorder = EventRecorder<[UInt8]>(loop: loop)
        let subscription = recorder.subscribe(File.tailChunks(path, from: .beginning, maxLineLength: 50, on: loop))
        XCTAssertTrue(loop.run(until: { recorder.terminated }, timeout: 60))
        XCTAssertEqual(recorder.events.last.flatMap { $0.error as? LineError }, .lineTooLong(maxLength: 50))
        subscription.dispose()
        assertLoopCleanAndClose(loop)
    }

    /// Lines of 1 to 120 bytes, so that lines straddle the boundaries of the 256 KiB reads.
    func uneven(_ range: Range<Int>) -> String {
        range.map { "\($0) " + String(repeating: "x", count: ($0 &* 7919) % 113) + "\n" }.joined()
    }

    func testCatchingUpOnAFileOfManyReadsDeliversEveryByteOnceInOrder() throws {
        let loop = try EventLoop()
        let path = directory.file("big.log")
        // About 2.5 MB: ten full reads, each delivered while the next one is under way.
        let first = uneven(0..<40_000)
        writeFile(path, first)
        let recorder = EventRecorder<[UInt8]>(loop: loop)
        let subscription = recorder.subscribe(File.tailChunks(path, from: .beginning, pollInterval: 0.05, on: loop))
        // Appends while the catch-up runs are read too, once, after what was there.
        XCTAssertTrue(loop.run(until: { recorder.valueCount > 0 }, timeout: 60))
        let more = uneven(40_000..<50_000)
        append(path, more)
        XCTAssertTrue(loop.run(until: { self.text(recorder).utf8.count >= (first + more).utf8.count }, timeout: 60))
        XCTAssertEqual(text(recorder), first + more)
        XCTAssertTrue(recorder.values.allSatisfy { $0.last == 10 }, "every chunk ends at a line break")
        XCTAssertGreaterThan(first.utf8.count, 8 * TailFollower.chunkSize, "several full reads")
        subscription.dispose()
        assertLoopCleanAndClose(loop)
    }

    func testALineOverTheLimitFoundWhileTheNextReadIsUnderWay() throws {
        let loop = try EventLoop()
        let path = directory.file("long-later.log")
        // The long line sits past the first full reads, so when its chunk is checked the
        // read of the chunk after it is already in flight: the error must wait for that
        // read before the file is closed (FileRequest asserts one request at a time).
        let before = uneven(0..<20_000)
        writeFile(path, before + String(repeating: "y", count: 300) + "\n" + uneven(20_000..<30_000))
        let recorder = EventRecorder<[UInt8]>(loop: loop)
        let subscription = recorder.subscribe(File.tailChunks(path, from: .beginning, maxLineLength: 200, on: loop))
        XCTAssertTrue(loop.run(until: { recorder.terminated }, timeout: 60))
        XCTAssertEqual(recorder.events.last.flatMap { $0.error as? LineError }, .lineTooLong(maxLength: 200))
        let received = text(recorder)
        XCTAssertTrue(before.hasPrefix(received), "only lines before the long one")
        XCTAssertGreaterThan(received.utf8.count, TailFollower.chunkSize, "the failing chunk came after full reads")
        subscription.dispose()
        assertLoopCleanAndClose(loop)
    }
}

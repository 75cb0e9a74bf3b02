import CLibUV
import Glibc
import XCTest

@testable import ReactiveUV

/// `File.tailChunks`: the same follower as `File.tail`, delivering whole lines as bytes.
/// ``FileTailChunksPoolReadTests`` runs them all again with every read on libuv's pool.
class FileTailChunksTests: XCTestCase {
    var directory: TemporaryDirectory!

    /// Whether reads of cached data happen on the loop thread (the default).
    class var readsCachedDataOnLoop: Bool { true }

    /// `File.tailChunks`, or with ``readsCachedDataOnLoop`` off, the same follower with
    /// every read on the pool.
    func chunksSignal(
        _ path: String, from start: TailStart = .lastLines(10), pollInterval: Double = 0.2,
        rotationQuietPeriod: Double = 1.0, maxLineLength: Int = LineBuffer.defaultMaxLength, on loop: EventLoop? = nil
    ) -> Signal<[UInt8]> {
        if Self.readsCachedDataOnLoop {
            return File.tailChunks(path, from: start, pollInterval: pollInterval, rotationQuietPeriod: rotationQuietPeriod,
                                   maxLineLength: maxLineLength, on: loop)
        }
        return File.tailChunks(path, from: start, options: poolReadOptions(pollInterval, rotationQuietPeriod, maxLineLength),
                               notices: nil, on: loop)
    }

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
            chunksSignal(path, from: .beginning, pollInterval: 0.05, rotationQuietPeriod: 0.2, on: loop))
        XCTAssertTrue(loop.run(until: { self.text(recorder) == self.numbered(0..<3) }, timeout: 60))

        writeAll(writer, "ial\n")
        XCTAssertEqual(rename(path, path + ".1"), 0)
        writeAll(writer, numbered(4..<6) + "6-unfinished")
        close(writer)
        append(path, numbered(7..<10))
        // The old file's lines in order, and the new file's; the two files' chunks may
        // interleave (the new file is read at once, the old one until it has been quiet).
        let old = ["0", "1", "2", "3-partial", "4", "5", "6-unfinished"]
        let new = ["7", "8", "9"]
        func lines() -> [String] { text(recorder).split(separator: "\n").map(String.init) }
        XCTAssertTrue(loop.run(until: { lines().count >= 10 }, timeout: 60), text(recorder))
        XCTAssertEqual(lines().filter { !new.contains($0) }, old)
        XCTAssertEqual(lines().filter { new.contains($0) }, new)
        XCTAssertTrue(recorder.values.allSatisfy { $0.last == 10 }, "every chunk ends at a line break")
        subscription.dispose()
        assertLoopCleanAndClose(loop)
    }

    func testALineOverTheLimitFails() throws {
        let loop = try EventLoop()
        let path = directory.file("long.log")
        append(path, "short\n" + String(repeating: "x", count: 100) + "\n")
        let recorder = EventRecorder<[UInt8]>(loop: loop)
        let subscription = recorder.subscribe(chunksSignal(path, from: .beginning, maxLineLength: 50, on: loop))
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
        let subscription = recorder.subscribe(chunksSignal(path, from: .beginning, pollInterval: 0.05, on: loop))
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

    func testALineOverTheLimitPastTheFirstReads() throws {
        let loop = try EventLoop()
        let path = directory.file("long-later.log")
        // The long line sits past the first full reads: what came before it arrives, then
        // the error, and the file is closed (a chunk is checked before the read after it
        // starts, so no read is in flight then; File.tail's version of this test covers
        // an error with a read in flight).
        let before = uneven(0..<20_000)
        writeFile(path, before + String(repeating: "y", count: 300) + "\n" + uneven(20_000..<30_000))
        let recorder = EventRecorder<[UInt8]>(loop: loop)
        let subscription = recorder.subscribe(chunksSignal(path, from: .beginning, maxLineLength: 200, on: loop))
        XCTAssertTrue(loop.run(until: { recorder.terminated }, timeout: 60))
        XCTAssertEqual(recorder.events.last.flatMap { $0.error as? LineError }, .lineTooLong(maxLength: 200))
        let received = text(recorder)
        XCTAssertTrue(before.hasPrefix(received), "only lines before the long one")
        XCTAssertGreaterThan(received.utf8.count, TailFollower.chunkSize, "the failing chunk came after full reads")
        subscription.dispose()
        assertLoopCleanAndClose(loop)
    }

    func testStartPositionsPastTheFirstReads() throws {
        let loop = try EventLoop()
        let path = directory.file("positions.log")
        let all = (0..<40_000).map { "\($0) " + String(repeating: "x", count: ($0 &* 7919) % 113) + "\n" }
        writeFile(path, all.joined())
        // `tail -n +30001`: the lines to skip run through several whole reads.
        let fromLine = EventRecorder<[UInt8]>(loop: loop)
        let fromLineSubscription = fromLine.subscribe(chunksSignal(path, from: .line(30_001), on: loop))
        // The last 35,000 lines: counted back through several reads.
        let last = EventRecorder<[UInt8]>(loop: loop)
        let lastSubscription = last.subscribe(chunksSignal(path, from: .lastLines(35_000), on: loop))
        let expectedFromLine = all[30_000...].joined()
        let expectedLast = all[5_000...].joined()
        XCTAssertTrue(loop.run(until: {
            self.text(fromLine).utf8.count >= expectedFromLine.utf8.count
                && self.text(last).utf8.count >= expectedLast.utf8.count
        }, timeout: 60))
        XCTAssertEqual(text(fromLine), expectedFromLine)
        XCTAssertEqual(text(last), expectedLast)
        fromLineSubscription.dispose()
        lastSubscription.dispose()
        assertLoopCleanAndClose(loop)
    }

    func testALineLongerThanSeveralReads() throws {
        let loop = try EventLoop()
        let path = directory.file("wide.log")
        // 600,000 bytes without a break: three reads carry it on before its break comes.
        let wide = String(repeating: "w", count: 600_000)
        writeFile(path, "before\n" + wide)
        let recorder = EventRecorder<[UInt8]>(loop: loop)
        let subscription = recorder.subscribe(chunksSignal(path, from: .beginning, pollInterval: 0.05, on: loop))
        XCTAssertTrue(loop.run(until: { self.text(recorder) == "before\n" }, timeout: 60))
        _ = loop.run(until: { false }, timeout: 0.2)
        XCTAssertEqual(text(recorder), "before\n", "the unfinished line is held")
        append(path, "-end\nafter\n")
        let expected = "before\n" + wide + "-end\nafter\n"
        XCTAssertTrue(loop.run(until: { self.text(recorder).utf8.count >= expected.utf8.count }, timeout: 60))
        XCTAssertEqual(text(recorder), expected)
        subscription.dispose()
        assertLoopCleanAndClose(loop)
    }

    func testTruncationDropsTheUnfinishedLineAndRereadsFromTheStart() throws {
        let loop = try EventLoop()
        let path = directory.file("cut.log")
        writeFile(path, "a\nb-unfinished")
        let recorder = EventRecorder<[UInt8]>(loop: loop)
        let subscription = recorder.subscribe(chunksSignal(path, from: .beginning, pollInterval: 0.05, on: loop))
        XCTAssertTrue(loop.run(until: { self.text(recorder) == "a\n" }, timeout: 60))
        _ = loop.run(until: { false }, timeout: 0.2)
        XCTAssertEqual(truncate(path, 0), 0)
        append(path, "c\n")
        XCTAssertTrue(loop.run(until: { self.text(recorder).utf8.count >= 4 }, timeout: 60))
        _ = loop.run(until: { false }, timeout: 0.2)
        XCTAssertEqual(text(recorder), "a\nc\n")
        subscription.dispose()
        assertLoopCleanAndClose(loop)
    }

    func testAFileTruncatedAndWrittenPastThePositionBetweenTwoLooksIsReadFromItsStart() throws {
        let loop = try EventLoop()
        let path = directory.file("rewritten.log")
        writeFile(path, "old-0\nold-1\n")
        let recorder = EventRecorder<[UInt8]>(loop: loop)
        let subscription = recorder.subscribe(chunksSignal(path, from: .beginning, pollInterval: 0.05, on: loop))
        XCTAssertTrue(loop.run(until: { self.text(recorder) == "old-0\nold-1\n" }, timeout: 60))
        _ = loop.run(until: { false }, timeout: 0.2)  // the reader is idle at the end
        // Both while the loop is not running: its next look finds the file longer than what
        // was read and starting with other bytes. Read on from byte 12 it gave the tail of
        // the new first line ("r than the old one") before the new content from its start.
        XCTAssertEqual(truncate(path, 0), 0)
        append(path, "new-0 longer than the old one\nnew-1\n")
        let expected = "old-0\nold-1\nnew-0 longer than the old one\nnew-1\n"
        XCTAssertTrue(loop.run(until: { self.text(recorder).utf8.count >= expected.utf8.count }, timeout: 60))
        _ = loop.run(until: { false }, timeout: 0.2)
        XCTAssertEqual(text(recorder), expected)
        subscription.dispose()
        assertLoopCleanAndClose(loop)
    }

    func testAFileNotInMemoryIsReadAsWellAsOneThatIs() throws {
        let loop = try EventLoop()
        let path = directory.file("cold.log")
        let first = uneven(0..<40_000)
        writeFile(path, first)
        // Dropped from the page cache where the kernel takes the advice: the reads that
        // would wait go to the pool, the kernel's readahead brings later parts back, and
        // reads of those happen on the loop thread; the bytes arrive in order either way.
        let fd = open(path, O_RDONLY)
        XCTAssertEqual(fsync(fd), 0)
        _ = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)
        close(fd)
        let recorder = EventRecorder<[UInt8]>(loop: loop)
        let subscription = recorder.subscribe(chunksSignal(path, from: .beginning, pollInterval: 0.05, on: loop))
        XCTAssertTrue(loop.run(until: { self.text(recorder).utf8.count >= first.utf8.count }, timeout: 60))
        append(path, uneven(40_000..<40_100))
        let expected = first + uneven(40_000..<40_100)
        XCTAssertTrue(loop.run(until: { self.text(recorder).utf8.count >= expected.utf8.count }, timeout: 60))
        XCTAssertEqual(text(recorder), expected)
        subscription.dispose()
        assertLoopCleanAndClose(loop)
    }
}

/// Every ``FileTailChunksTests`` test again, with every read on libuv's pool.
final class FileTailChunksPoolReadTests: FileTailChunksTests {
    override class var readsCachedDataOnLoop: Bool { false }

    // Linux's XCTest runs only the test methods a class declares itself, so each one is
    // named again here (a new test in FileTailChunksTests belongs here too).
    override func testChunksHoldWholeLinesThroughAPartialLineAndARotation() throws { try super.testChunksHoldWholeLinesThroughAPartialLineAndARotation() }
    override func testALineOverTheLimitFails() throws { try super.testALineOverTheLimitFails() }
    override func testCatchingUpOnAFileOfManyReadsDeliversEveryByteOnceInOrder() throws { try super.testCatchingUpOnAFileOfManyReadsDeliversEveryByteOnceInOrder() }
    override func testALineOverTheLimitPastTheFirstReads() throws { try super.testALineOverTheLimitPastTheFirstReads() }
    override func testStartPositionsPastTheFirstReads() throws { try super.testStartPositionsPastTheFirstReads() }
    override func testALineLongerThanSeveralReads() throws { try super.testALineLongerThanSeveralReads() }
    override func testTruncationDropsTheUnfinishedLineAndRereadsFromTheStart() throws { try super.testTruncationDropsTheUnfinishedLineAndRereadsFromTheStart() }
    override func testAFileNotInMemoryIsReadAsWellAsOneThatIs() throws { try super.testAFileNotInMemoryIsReadAsWellAsOneThatIs() }
    override func testAFileTruncatedAndWrittenPastThePositionBetweenTwoLooksIsReadFromItsStart() throws { try super.testAFileTruncatedAndWrittenPastThePositionBetweenTwoLooksIsReadFromItsStart() }
}

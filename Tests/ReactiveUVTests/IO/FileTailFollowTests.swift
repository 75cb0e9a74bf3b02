import CLibUV
import CSystemShims
import Glibc
import XCTest

@testable import ReactiveUV

/// `File.follow`: files followed by identity through rotations faster than a throttled
/// subscriber reads, a file created right after subscription, copy-truncate losses counted
/// and named, resumption from the checkpoint store (including a file rotated away while
/// stopped), and the `uv_fs_poll` fallback. Real files in a fresh directory, the real loop;
/// every test ends with all handles closed.
final class FileTailFollowTests: XCTestCase {
    var directory: TemporaryDirectory!

    override func setUpWithError() throws { directory = try TemporaryDirectory() }
    override func tearDown() { directory.remove() }

    /// Chunks and notices of one follow, recorded on the loop thread.
    final class FollowRecorder: @unchecked Sendable {
        // Thread-safety: loop-thread only (the test thread runs the loop).
        var chunks: [TailChunk] = []
        var notices: [TailNotice] = []
        var error: (any Error)?
        var lineCount = 0
        /// Microseconds slept per line delivered: a deliberately slow subscriber.
        var throttlePerLine: UInt32 = 0

        func record(_ chunk: TailChunk) {
            chunks.append(chunk)
            var lines = 0
            for byte in chunk.bytes where byte == 10 { lines += 1 }
            lineCount += lines
            if throttlePerLine > 0 { usleep(throttlePerLine * UInt32(lines)) }
        }

        /// Every line's number (`"<n> ..."`), in delivery order, with its file.
        var numberedLines: [(number: Int, identity: FileIdentity, offset: Int64)] {
            var result: [(Int, FileIdentity, Int64)] = []
            for chunk in chunks {
                var start = 0
                let bytes = chunk.bytes
                for (i, byte) in bytes.enumerated() where byte == 10 {
                    let line = String(decoding: bytes[start..<i], as: UTF8.self)
                    result.append((lineNumber(line) ?? -1, chunk.identity, chunk.offset + Int64(start)))
                    start = i + 1
                }
            }
            return result
        }

        var lostBytes: Int64 { notices.reduce(0) { $0 + $1.lostBytes } }
    }

    func follow(
        _ path: String, from start: TailStart = .beginning, store: TailCheckpointStore? = nil,
        options: TailOptions = FileTailFollowTests.quickOptions, on loop: EventLoop
    ) -> (FollowRecorder, Disposable) {
        let recorder = FollowRecorder()
        let subscription = File.follow(path, from: start, checkpoints: store, options: options, notices: {
            recorder.notices.append($0)
        }, on: loop).subscribe(next: { recorder.record($0) }, error: { recorder.error = $0 })
        return (recorder, subscription)
    }

    static var quickOptions: TailOptions {
        var options = TailOptions()
        options.pollInterval = 0.05
        options.rotationQuietPeriod = 0.3
        return options
    }

    // MARK: - Rotation faster than the subscriber reads

    /// A writer appends numbered lines steadily and rotates by rename every 0.2 s (to
    /// `app.log.1`, `app.log.2`, ...; a few lines still go to the old descriptor after each
    /// rename) while the subscriber sleeps 150 µs per line — a fraction of the writer's
    /// rate, so reading lags several rotations behind. Every line arrives exactly once,
    /// each file's lines in order at increasing offsets.
    func testAThrottledSubscriberLosesNothingThroughRenamesEveryFifthOfASecond() throws {
        let loop = try EventLoop()
        let path = directory.file("app.log")
        let total = 40_000
        let (recorder, subscription) = follow(path, on: loop)
        recorder.throttlePerLine = 150
        let rotations = Locked(0)
        let finished = Latch()
        let writer = TestThread {
            defer { finished.countDown() }
            var fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0o644)
            var lastRotation = csys_monotonic_ns()
            var i = 0
            while i < total {
                // About 10,000 lines/s in bursts of 50.
                var batch = ""
                for _ in 0..<50 where i < total {
                    batch += "\(i) " + String(repeating: "x", count: i % 23) + "\n"
                    i += 1
                }
                writeAll(fd, batch)
                usleep(5_000)
                if csys_monotonic_ns() - lastRotation >= 200_000_000 && i < total {
                    let k = rotations.withLock { $0 += 1; return $0 }
                    XCTAssertEqual(rename(path, path + ".\(k)"), 0)
                    writeAll(fd, "\(i) after the rename\n")  // to the old file
                    i += 1
                    close(fd)
                    fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0o644)
                    lastRotation = csys_monotonic_ns()
                }
            }
            close(fd)
        }
        let done = loop.run(until: { recorder.lineCount >= total || recorder.error != nil }, timeout: 240)
        XCTAssertTrue(finished.wait(timeout: 60))
        writer.join()
        // One more look at every file: nothing may follow (no duplicates after the end).
        recorder.throttlePerLine = 0
        append(path, "\(total) marker\n")
        XCTAssertTrue(loop.run(until: { recorder.lineCount >= total + 1 || recorder.error != nil }, timeout: 60))
        subscription.dispose()
        assertLoopCleanAndClose(loop)

        XCTAssertTrue(done, "delivered \(recorder.lineCount) of \(total)")
        XCTAssertNil(recorder.error)
        XCTAssertGreaterThanOrEqual(rotations.value, 5, "the writer rotated several times")
        let lines = recorder.numberedLines
        XCTAssertEqual(lines.count, total + 1, "no line twice")
        let missing = Set(0...total).subtracting(lines.map(\.number))
        XCTAssertTrue(missing.isEmpty, "lost \(missing.count) lines, from \(String(describing: missing.min()))")
        // Within each file: increasing numbers at increasing offsets.
        var lastByFile: [FileIdentity: (Int, Int64)] = [:]
        for line in lines {
            if let (number, offset) = lastByFile[line.identity] {
                XCTAssertGreaterThan(line.number, number, "in order within \(line.identity)")
                XCTAssertGreaterThan(line.offset, offset)
            }
            lastByFile[line.identity] = (line.number, line.offset)
        }
        XCTAssertEqual(lastByFile.count, rotations.value + 1, "one identity per file")
        XCTAssertEqual(recorder.lostBytes, 0)
    }

    // MARK: - Start

    /// The file appears just after `subscribe` returns (before the loop ran at all): it is
    /// new, so read from its first line even with `.end`.
    func testAFileCreatedRightAfterSubscriptionIsReadFromItsFirstLine() throws {
        let loop = try EventLoop()
        let path = directory.file("late.log")
        let (recorder, subscription) = follow(path, from: .end, on: loop)
        writeFile(path, (0..<40).map { "\($0)\n" }.joined())
        XCTAssertTrue(loop.run(until: { recorder.lineCount >= 40 || recorder.error != nil }, timeout: 60))
        append(path, "40\n")
        XCTAssertTrue(loop.run(until: { recorder.lineCount >= 41 }, timeout: 60))
        subscription.dispose()
        assertLoopCleanAndClose(loop)
        XCTAssertEqual(recorder.numberedLines.map(\.number), Array(0...40))
        XCTAssertEqual(recorder.notices.first, .missing(path: path))
        XCTAssertTrue(recorder.notices.contains { if case .appeared = $0 { return true } else { return false } })
    }

    /// The file exists at `subscribe`: `.end` starts after what it holds then, decided
    /// synchronously, so a line appended right after `subscribe` returns is delivered.
    func testTheEndIsTakenAtSubscriptionNotWhenTheLoopGetsThere() throws {
        let loop = try EventLoop()
        let path = directory.file("end.log")
        writeFile(path, "old 1\nold 2\n")
        let (recorder, subscription) = follow(path, from: .end, on: loop)
        append(path, "0 new\n")
        XCTAssertTrue(loop.run(until: { recorder.lineCount >= 1 }, timeout: 60))
        append(path, "1 new\n")
        XCTAssertTrue(loop.run(until: { recorder.lineCount >= 2 }, timeout: 60))
        subscription.dispose()
        assertLoopCleanAndClose(loop)
        XCTAssertEqual(recorder.numberedLines.map(\.number), [0, 1])
        XCTAssertEqual(recorder.chunks.first?.offset, 12, "tagged with its byte offset")
    }

    /// `-n 1` on a file whose last line has no break yet: that line is sent at once (the
    /// one chunk without `\n`), and what completes it comes next.
    func testAnUnfinishedLastLineCountsAsALineWhenAskedFor() throws {
        let loop = try EventLoop()
        let path = directory.file("partial.log")
        writeFile(path, "first\nsecond\nthird, unfinished")
        var options = FileTailFollowTests.quickOptions
        options.sendsUnfinishedLastLineAtStart = true
        let (recorder, subscription) = follow(path, from: .lastLines(1), options: options, on: loop)
        XCTAssertTrue(loop.run(until: { recorder.chunks.count >= 1 }, timeout: 60))
        append(path, " now done\nfourth\n")
        XCTAssertTrue(loop.run(until: { recorder.lineCount >= 2 }, timeout: 60))
        subscription.dispose()
        assertLoopCleanAndClose(loop)
        let text = recorder.chunks.map { String(decoding: $0.bytes, as: UTF8.self) }.joined()
        XCTAssertEqual(text, "third, unfinished now done\nfourth\n")
        XCTAssertEqual(recorder.chunks.first.map { String(decoding: $0.bytes, as: UTF8.self) }, "third, unfinished")
    }

    // MARK: - Truncation

    /// A file is cut (copy-truncate) while the tail is still catching up on it: the bytes
    /// it had not read are counted and named — a `.truncated` notice and a `.lost` with the
    /// exact byte range from the first unread line to the size the file had — and the new
    /// contents are read from byte 0.
    func testBytesCutByATruncationBeforeTheyWereReadAreCountedAndNamed() throws {
        let loop = try EventLoop()
        let path = directory.file("copytruncate.log")
        let contents = (0..<100_000).map { "\($0) " + String(repeating: "y", count: 20) + "\n" }.joined()
        writeFile(path, contents)
        let size = Int64(contents.utf8.count)
        let recorder = FollowRecorder()
        var cutAfter: Int64?
        let subscription = File.follow(path, from: .beginning, options: FileTailFollowTests.quickOptions, notices: {
            recorder.notices.append($0)
        }, on: loop).subscribe(next: { chunk in
            recorder.record(chunk)
            if cutAfter == nil {
                // The subscriber is busy with the first chunk when the file is cut.
                cutAfter = chunk.endOffset
                XCTAssertEqual(truncate(path, 0), 0)
                append(path, "200000 new\n200001 new\n")
            }
        }, error: { recorder.error = $0 })
        XCTAssertTrue(loop.run(until: { recorder.numberedLines.contains { $0.number == 200_001 } || recorder.error != nil },
                               timeout: 60))
        subscription.dispose()
        assertLoopCleanAndClose(loop)
        let identity = recorder.chunks[0].identity
        let readUpTo = try XCTUnwrap(cutAfter)
        XCTAssertLessThan(readUpTo, size, "the tail was still catching up")
        XCTAssertTrue(recorder.notices.contains { if case .truncated(path, identity, _) = $0 { return true } else { return false } },
                      "\(recorder.notices)")
        XCTAssertTrue(recorder.notices.contains(.lost(
            path: path, identity: identity, range: TailByteRange(readUpTo, size), reason: .truncatedBeforeRead)),
            "\(recorder.notices)")
        XCTAssertEqual(recorder.lostBytes, size - readUpTo)
        let numbers = recorder.numberedLines.map(\.number)
        XCTAssertEqual(Array(numbers.suffix(2)), [200_000, 200_001])
        XCTAssertEqual(Array(numbers.dropLast(2)), Array(0..<numbers.count - 2), "the lines before the cut, in order")
    }
}

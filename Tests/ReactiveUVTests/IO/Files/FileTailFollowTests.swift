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
        try assertAThrottledSubscriberLosesNothingThroughRenames(following: directory.file("app.log"), writing: directory.file("app.log"))
    }

    /// The same through a symbolic link, as Kubernetes' `/var/log/containers/<pod>.log` links
    /// to `/var/log/pods/<pod>/<container>/0.log`, which the kubelet rotates by rename in
    /// its own directory: the follower must see the files of the link's target directory.
    func testAThrottledSubscriberLosesNothingThroughRenamesBehindASymbolicLink() throws {
        let containers = directory.file("containers"), pods = directory.file("pods")
        XCTAssertEqual(mkdir(containers, 0o755), 0)
        XCTAssertEqual(mkdir(pods, 0o755), 0)
        XCTAssertEqual(symlink(pods + "/0.log", containers + "/app.log"), 0)
        try assertAThrottledSubscriberLosesNothingThroughRenames(following: containers + "/app.log", writing: pods + "/0.log")
    }

    /// Writes 40,000 numbered lines to `written`, renamed away every 0.2 s, while a
    /// subscriber of `followed` sleeps 150 µs per line; checks every line once, in order.
    func assertAThrottledSubscriberLosesNothingThroughRenames(following followed: String, writing path: String) throws {
        let loop = try EventLoop()
        let total = 40_000
        let (recorder, subscription) = follow(followed, on: loop)
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

    /// A `current` link beside the files it names, moved to the next file by renaming a new
    /// link over it (as `ln -sfn` does): the rename names the link, not the file the
    /// follower now watches for, and the follower still takes the new file at once; appends
    /// to the file the link names are read at once too. The poll interval here is a
    /// minute, so only the watch can see either.
    func testALinkRetargetedBesideItsFilesIsFollowedByItsEvents() throws {
        let loop = try EventLoop()
        let path = directory.file("current")
        writeFile(directory.file("app-1.log"), "0\n")
        XCTAssertEqual(symlink("app-1.log", path), 0)
        var options = FileTailFollowTests.quickOptions
        options.pollInterval = 60
        let (recorder, subscription) = follow(path, options: options, on: loop)
        XCTAssertTrue(loop.run(until: { recorder.lineCount >= 1 || recorder.error != nil }, timeout: 30))
        append(directory.file("app-1.log"), "1\n")
        XCTAssertTrue(loop.run(until: { recorder.lineCount >= 2 || recorder.error != nil }, timeout: 30), "an append to the target")
        writeFile(directory.file("app-2.log"), "2\n")
        XCTAssertEqual(symlink("app-2.log", directory.file("current.new")), 0)
        XCTAssertEqual(rename(directory.file("current.new"), path), 0)
        XCTAssertTrue(loop.run(until: { recorder.lineCount >= 3 || recorder.error != nil }, timeout: 30), "the retarget: \(recorder.notices)")
        append(directory.file("app-2.log"), "3\n")
        XCTAssertTrue(loop.run(until: { recorder.lineCount >= 4 || recorder.error != nil }, timeout: 30), "an append to the new target")
        subscription.dispose()
        assertLoopCleanAndClose(loop)
        XCTAssertNil(recorder.error)
        XCTAssertEqual(recorder.numberedLines.map(\.number), [0, 1, 2, 3])
        XCTAssertTrue(recorder.notices.contains { if case .replaced = $0 { return true } else { return false } }, "\(recorder.notices)")
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

extension FileTailFollowTests {
    /// copytruncate while the tail is still catching up: the lines it had not read are read
    /// from the copy (`app.log.1`, found by its first bytes), so nothing is lost; the copy
    /// is not also taken for a missed rotated file (no line twice). The store's record of
    /// the copy names the file and content it copies (what logcast names its lines by).
    func testCopyTruncateWhileCatchingUpReadsTheRestFromTheCopy() throws {
        let loop = try EventLoop()
        let path = directory.file("app.log")
        let contents = (0..<100_000).map { "\($0) " + String(repeating: "z", count: 20) + "\n" }.joined()
        writeFile(path, contents)
        let store = try TailCheckpointStore(directory: directory.file("state"))
        let recorder = FollowRecorder()
        var cut = false
        let subscription = File.follow(path, from: .beginning, checkpoints: store, options: FileTailFollowTests.quickOptions, notices: {
            recorder.notices.append($0)
        }, on: loop).subscribe(next: { chunk in
            recorder.record(chunk)
            if !cut {
                cut = true
                writeFile(path + ".1", contents)  // logrotate's copy ...
                XCTAssertEqual(truncate(path, 0), 0)  // ... and the truncation
                append(path, "100000 new\n100001 new\n")
            }
        }, error: { recorder.error = $0 })
        XCTAssertTrue(loop.run(until: { recorder.lineCount >= 100_002 || recorder.error != nil }, timeout: 60))
        // One more line after a few polls: nothing more may come from the copy.
        _ = loop.run(until: { false }, timeout: 0.3)
        append(path, "100002 new\n")
        XCTAssertTrue(loop.run(until: { recorder.lineCount >= 100_003 }, timeout: 60))
        subscription.dispose()
        assertLoopCleanAndClose(loop)
        let numbers = recorder.numberedLines.map(\.number)
        XCTAssertEqual(numbers.count, 100_003, "no line twice")
        XCTAssertTrue(numbers.sorted() == Array(0...100_002), "every line")
        XCTAssertEqual(recorder.lostBytes, 0, "\(recorder.notices)")
        let copy = try XCTUnwrap(recorder.notices.lazy.compactMap { notice -> FileIdentity? in
            if case .resumed(path + ".1", let identity, _) = notice { return identity } else { return nil }
        }.first, "\(recorder.notices)")
        var info = stat()
        XCTAssertEqual(stat(path, &info), 0)
        XCTAssertEqual(store.copyOrigin(of: copy), TailCopyOrigin(device: UInt64(info.st_dev), inode: UInt64(info.st_ino), truncations: 0))
        XCTAssertEqual(store.copyOrigin(of: try XCTUnwrap(recorder.chunks.last?.identity)), nil)
    }
}

extension FileTailFollowTests {
    /// copytruncate inside the first delivery, and the writer goes on past the position the
    /// tail had read to before the next read: the change event that came while the reader
    /// was busy gets its next read checked (otherwise it read on at the old offset in the new
    /// content — a fragment of a line, then new lines twice, and the copy resumed at an
    /// offset from the wrong content). Every line once, none garbled, nothing lost.
    func testCopyTruncateWrittenPastThePositionDuringADeliveryIsCaughtAtTheNextRead() throws {
        let loop = try EventLoop()
        let path = directory.file("app.log")
        func lines(_ range: Range<Int>) -> String {
            range.map { "\($0) " + String(repeating: "z", count: $0 % 23) + "\n" }.joined()
        }
        let old = 20_000, new = 3_000
        writeFile(path, lines(0..<old))
        let recorder = FollowRecorder()
        var cut = false
        let subscription = File.follow(path, from: .beginning, options: FileTailFollowTests.quickOptions, notices: {
            recorder.notices.append($0)
        }, on: loop).subscribe(next: { chunk in
            recorder.record(chunk)
            if !cut {
                cut = true
                writeFile(path + ".1", lines(0..<old))  // logrotate's copy ...
                XCTAssertEqual(truncate(path, 0), 0)  // ... the truncation, and more than was read
                append(path, lines(old..<(old + new)))
            }
        }, error: { recorder.error = $0 })
        XCTAssertTrue(loop.run(until: { recorder.lineCount >= old + new || recorder.error != nil }, timeout: 60))
        _ = loop.run(until: { false }, timeout: 0.3)
        subscription.dispose()
        assertLoopCleanAndClose(loop)
        XCTAssertNil(recorder.error)
        var garbled = 0
        for chunk in recorder.chunks {
            for line in chunk.bytes.split(separator: 10) {
                let text = String(decoding: line, as: UTF8.self)
                guard let n = lineNumber(text), text == "\(n) " + String(repeating: "z", count: n % 23) else {
                    garbled += 1
                    continue
                }
            }
        }
        XCTAssertEqual(garbled, 0, "lines that are not a whole line of the writer's")
        let numbers = recorder.numberedLines.map(\.number).filter { $0 >= 0 }
        XCTAssertEqual(numbers.count, Set(numbers).count, "no line twice")
        let missing = Set(0..<(old + new)).subtracting(numbers)
        XCTAssertEqual(missing.count, 0, "lines missing, the first: \(missing.sorted().prefix(10))")
        XCTAssertEqual(recorder.lostBytes, 0, "\(recorder.notices)")
    }
}

extension FileTailFollowTests {
    /// More files waiting than `maxOpenFiles` allows: the oldest is given up, and exactly
    /// its unread bytes are reported lost (`fellBehind`), from the first unread line to its end.
    func testAReaderGivenUpBeyondTheOpenFileLimitReportsItsUnreadBytes() throws {
        let loop = try EventLoop()
        let path = directory.file("app.log")
        let old = (0..<100_000).map { "\($0) old\n" }.joined()
        writeFile(path, old)
        var options = FileTailFollowTests.quickOptions
        options.maxOpenFiles = 1
        let (recorder, subscription) = follow(path, options: options, on: loop)
        // Rotated before the tail could read much of it (the loop has not run yet).
        XCTAssertEqual(rename(path, path + ".1"), 0)
        writeFile(path, "0 new\n1 new\n")
        XCTAssertTrue(loop.run(until: {
            recorder.numberedLines.filter { $0.identity != recorder.chunks.first?.identity }.count >= 2
                && recorder.notices.contains { if case .lost = $0 { return true } else { return false } }
        }, timeout: 60), "\(recorder.notices)")
        subscription.dispose()
        assertLoopCleanAndClose(loop)
        guard let lost = recorder.notices.first(where: { if case .lost = $0 { return true } else { return false } }),
            case .lost(_, let identity, let range, let reason) = lost
        else { return XCTFail("no loss reported") }
        XCTAssertEqual(reason, .fellBehind)
        XCTAssertEqual(range.upperBound, Int64(old.utf8.count), "to the old file's end")
        let readOfOld = recorder.chunks.filter { $0.identity == identity }.reduce(Int64(0)) { $0 + Int64($1.bytes.count) }
        XCTAssertEqual(range.lowerBound, readOfOld, "from the first byte not delivered")
        XCTAssertLessThan(readOfOld, Int64(old.utf8.count), "the old file was given up before its end")
    }

    /// A rotated file already read to its end (only waiting out the quiet period) when the
    /// open-file limit closes it has lost nothing: no `lost` notice (it got one with an
    /// empty range, 75 of 75 such notices in a probe at the default limit).
    func testAFileReadToItsEndAndClosedByTheOpenFileLimitIsNotReportedLost() throws {
        let loop = try EventLoop()
        let path = directory.file("app.log")
        writeFile(path, "0\n1\n")
        var options = FileTailFollowTests.quickOptions
        options.maxOpenFiles = 1
        options.rotationQuietPeriod = 30  // the rotated file stays open until the limit closes it
        let (recorder, subscription) = follow(path, options: options, on: loop)
        XCTAssertTrue(loop.run(until: { recorder.lineCount >= 2 }, timeout: 60))
        XCTAssertEqual(rename(path, path + ".1"), 0)
        writeFile(path, "2\n")
        XCTAssertTrue(loop.run(until: { recorder.lineCount >= 3 }, timeout: 60))
        append(path, "3\n")
        XCTAssertTrue(loop.run(until: { recorder.lineCount >= 4 }, timeout: 60))
        subscription.dispose()
        assertLoopCleanAndClose(loop)
        XCTAssertEqual(recorder.numberedLines.map(\.number), [0, 1, 2, 3])
        XCTAssertFalse(recorder.notices.contains { if case .lost = $0 { return true } else { return false } },
                       "\(recorder.notices)")
    }
}

/// Resumption: in process through a `TailCheckpointStore`, and across a SIGKILL of the
/// `ruv-tail` example run with `--state` (a rename rotation while it was down), plus the
/// `uv_fs_poll` fallback.
final class FileTailResumeTests: XCTestCase {
    var directory: TemporaryDirectory!

    override func setUpWithError() throws { directory = try TemporaryDirectory() }
    override func tearDown() { directory.remove() }

    /// Follows `path` with `store` into `recorder`, acknowledging each chunk as it arrives
    /// (a consumer done with a line once it has it); an error fails the test.
    func followAcknowledging(
        _ path: String, from start: TailStart, store: TailCheckpointStore, options: TailOptions = FileTailFollowTests.quickOptions,
        into recorder: FileTailFollowTests.FollowRecorder, on loop: EventLoop, inspect: ((TailChunk) -> Void)? = nil
    ) -> Disposable {
        File.follow(path, from: start, checkpoints: store, options: options, notices: {
            recorder.notices.append($0)
        }, on: loop).subscribe(next: { chunk in
            inspect?(chunk)  // (before the acknowledgement: what the store knew as it came)
            recorder.record(chunk)
            store.acknowledge(chunk.identity, through: chunk.endOffset)
        }, error: { XCTFail("\($0)") })
    }

    /// A tail acknowledges part of a file and stops; while it is stopped the file is renamed
    /// to `app.log.1`, gets more lines, and a new `app.log` starts. The resumed tail reads
    /// `app.log.1` from the acknowledged offset (found by identity among the siblings),
    /// then the new file from its start: every unacknowledged line once, nothing else.
    func testResumingFindsAFileRotatedAwayWhileStoppedAndReadsItBeforeTheNewOne() throws {
        try assertResumingFindsAFileRotatedAwayWhileStopped(following: directory.file("app.log"), writing: directory.file("app.log"))
    }

    /// The same through a symbolic link to a file in another directory (Kubernetes'
    /// `/var/log/containers` links): the rotated file is found beside the link's target.
    /// It was looked for beside the link, and reported lost.
    func testResumingThroughASymbolicLinkFindsTheTargetRotatedAwayWhileStopped() throws {
        let containers = directory.file("containers"), pods = directory.file("pods")
        XCTAssertEqual(mkdir(containers, 0o755), 0)
        XCTAssertEqual(mkdir(pods, 0o755), 0)
        XCTAssertEqual(symlink("../pods/0.log", containers + "/app.log"), 0)
        // Notices name the target's directory as resolved (the temporary directory may be
        // reached through a link itself).
        let resolvedPods = try XCTUnwrap(realpath(pods, nil).map { pointer in defer { free(pointer) }; return String(cString: pointer) })
        try assertResumingFindsAFileRotatedAwayWhileStopped(following: containers + "/app.log", writing: resolvedPods + "/0.log")
    }

    /// A tail acknowledges every chunk through a rename rotation, runs past the quiet period
    /// (the rotated file is finished and, fully acknowledged, forgotten by the store), and is
    /// started again at once — within a second of the rotated file's last write. At the next
    /// rotation that file was taken for one missed while the loop was busy and read again
    /// from its start (lines 0–9 twice); it was in the directory when the tail started, not
    /// at the path, and is left alone.
    func testARestartSoonAfterARotationDoesNotReadTheFinishedRotatedFileAgain() throws {
        let state = directory.file("state")
        let path = directory.file("app.log")
        writeFile(path, (0..<10).map { "\($0)\n" }.joined())
        var options = FileTailFollowTests.quickOptions
        options.rotationQuietPeriod = 0.2

        let loop = try EventLoop()
        let recorder = FileTailFollowTests.FollowRecorder()
        func follow(_ store: TailCheckpointStore) -> Disposable {
            followAcknowledging(path, from: .beginning, store: store, options: options, into: recorder, on: loop)
        }
        let firstStore = try TailCheckpointStore(directory: state)
        let first = follow(firstStore)
        XCTAssertTrue(loop.run(until: { recorder.lineCount >= 10 }, timeout: 60))
        XCTAssertEqual(rename(path, path + ".1"), 0)
        writeFile(path, (10..<15).map { "\($0)\n" }.joined())
        XCTAssertTrue(loop.run(until: { recorder.lineCount >= 15 }, timeout: 60))
        _ = loop.run(until: { false }, timeout: 0.5)  // past the quiet period: app.log.1 is finished
        try firstStore.save()
        first.dispose()

        let second = follow(try TailCheckpointStore(directory: state))
        _ = loop.run(until: { false }, timeout: 0.1)
        XCTAssertEqual(rename(path, path + ".2"), 0)
        writeFile(path, (15..<20).map { "\($0)\n" }.joined())
        XCTAssertTrue(loop.run(until: { recorder.lineCount >= 20 }, timeout: 60))
        _ = loop.run(until: { false }, timeout: 0.5)  // anything read twice would come now
        second.dispose()
        assertLoopCleanAndClose(loop)
        XCTAssertEqual(recorder.numberedLines.map(\.number), Array(0..<20), "\(recorder.notices)")
        XCTAssertEqual(recorder.lostBytes, 0)
    }

    /// The file at the path is deleted while followed (its record, done, is dropped: the
    /// store holds no file of the path), and while no tail runs a new file is written there.
    /// Started again with `-n 10`, the tail reads the new file from its start, as any file
    /// that appeared while the tail was down; it applied the start position (the first 20
    /// lines skipped, no notice), the store no longer remembering the path.
    func testAFileMadeWhileStoppedAfterTheStoreForgotEveryFileOfThePathIsReadFromItsStart() throws {
        let state = directory.file("state")
        let path = directory.file("app.log")
        writeFile(path, (0..<20).map { "\($0)\n" }.joined())
        var options = FileTailFollowTests.quickOptions
        options.rotationQuietPeriod = 0.2

        let loop = try EventLoop()
        let recorder = FileTailFollowTests.FollowRecorder()
        func follow(_ store: TailCheckpointStore) -> Disposable {
            followAcknowledging(path, from: .lastLines(10), store: store, options: options, into: recorder, on: loop)
        }
        let firstStore = try TailCheckpointStore(directory: state)
        let first = follow(firstStore)
        XCTAssertTrue(loop.run(until: { recorder.lineCount >= 10 }, timeout: 60))
        XCTAssertEqual(unlink(path), 0)
        XCTAssertTrue(loop.run(until: { firstStore.checkpoints.isEmpty }, timeout: 60), "the deleted file's record is dropped")
        try firstStore.save()
        first.dispose()

        writeFile(path, (20..<50).map { "\($0)\n" }.joined())
        let second = follow(try TailCheckpointStore(directory: state))
        XCTAssertTrue(loop.run(until: { recorder.lineCount >= 40 }, timeout: 60), "\(recorder.numberedLines.map(\.number))")
        second.dispose()
        assertLoopCleanAndClose(loop)
        XCTAssertEqual(recorder.numberedLines.map(\.number), Array(10..<50), "\(recorder.notices)")
    }

    /// A file read and acknowledged, then emptied while no tail runs; a tail started while
    /// it is still empty reads what is written into it and acknowledges it; a third start,
    /// nothing new written, delivers nothing. The record stayed under the old content's
    /// fingerprint (it matched the empty file only), so the third start took the file for
    /// an unknown one: lines 100–199 again, and a false "deleted before read" notice.
    func testAFileEmptiedWhileStoppedAndWrittenUnderTheNextTailIsNotReadAgainAtTheThird() throws {
        let state = directory.file("state")
        let path = directory.file("app.log")
        writeFile(path, (0..<100).map { "\($0) " + String(repeating: "o", count: 10) + "\n" }.joined())
        let loop = try EventLoop()
        let recorder = FileTailFollowTests.FollowRecorder()
        func session(until lines: Int, writing: (() -> Void)? = nil) throws {
            let store = try TailCheckpointStore(directory: state)
            let subscription = followAcknowledging(path, from: .beginning, store: store, into: recorder, on: loop)
            _ = loop.run(until: { false }, timeout: 0.1)
            writing?()
            XCTAssertTrue(loop.run(until: { recorder.lineCount >= lines }, timeout: 60))
            _ = loop.run(until: { false }, timeout: 0.3)  // anything read again would come now
            try store.save()
            subscription.dispose()
        }
        try session(until: 100)
        XCTAssertEqual(truncate(path, 0), 0)
        try session(until: 100) { append(path, (100..<200).map { "\($0) new\n" }.joined()) }
        XCTAssertEqual(recorder.lineCount, 200)
        try session(until: 200)
        assertLoopCleanAndClose(loop)
        XCTAssertEqual(recorder.numberedLines.map(\.number), Array(0..<200), "\(recorder.notices)")
        XCTAssertFalse(recorder.notices.contains { if case .lost(_, _, _, .deletedBeforeRead) = $0 { return true } else { return false } },
                       "\(recorder.notices)")
    }

    /// Follows `followed` (which names `path`) with a store, acknowledges 6 of 10 lines and
    /// stops; renames `path` away, appends to it, starts a new `path`; then checks that a
    /// tail started again reads the rotated file from the position, then the new one.
    func assertResumingFindsAFileRotatedAwayWhileStopped(following followed: String, writing path: String) throws {
        let state = directory.file("state")
        writeFile(path, (0..<10).map { "\($0)\n" }.joined())

        let loop = try EventLoop()
        let store = try TailCheckpointStore(directory: state)
        let first = FileTailFollowTests.FollowRecorder()
        var firstSubscription: Disposable? = File.follow(followed, from: .beginning, checkpoints: store, on: loop)
            .subscribe(next: { chunk in first.record(chunk) })
        XCTAssertTrue(loop.run(until: { first.lineCount >= 10 }, timeout: 60))
        // Acknowledge through line 5 only ("0\n".."5\n" are 12 bytes).
        store.acknowledge(first.chunks[0].identity, through: 12)
        try store.save()
        firstSubscription?.dispose()
        firstSubscription = nil
        assertLoopCleanAndClose(loop)

        // While stopped: rotation by rename, the writer's last lines to the old file, a new file.
        XCTAssertEqual(rename(path, path + ".1"), 0)
        append(path + ".1", "10\n11\n")
        writeFile(path, "12\n13\n")

        let again = try EventLoop()
        let resumedStore = try TailCheckpointStore(directory: state)
        let second = FileTailFollowTests.FollowRecorder()
        let secondSubscription = File.follow(followed, from: .end, checkpoints: resumedStore, notices: {
            second.notices.append($0)
        }, on: again).subscribe(next: { second.record($0) }, error: { second.error = $0 })
        XCTAssertTrue(again.run(until: { second.lineCount >= 8 || second.error != nil }, timeout: 60), "\(second.notices)")
        append(path, "14\n")
        XCTAssertTrue(again.run(until: { second.lineCount >= 9 }, timeout: 60))
        secondSubscription.dispose()
        assertLoopCleanAndClose(again)
        XCTAssertEqual(second.numberedLines.map(\.number), Array(6...14), "the rotated file first, then the new one")
        XCTAssertEqual(second.chunks.first?.offset, 12)
        XCTAssertTrue(second.notices.contains(.resumed(path: path + ".1", identity: first.chunks[0].identity, offset: 12)),
                      "\(second.notices)")
    }

    /// A file cut below its acknowledged position while no tail ran: reported lost from
    /// its new end to that position, read again from its start, and the truncation counted.
    func testAFileCutBelowItsPositionWhileStoppedIsReadFromItsStartAndCounted() throws {
        let path = directory.file("cut.log")
        let state = directory.file("state")
        writeFile(path, (0..<10).map { "\($0)\n" }.joined())
        let loop = try EventLoop()
        let store = try TailCheckpointStore(directory: state)
        let first = FileTailFollowTests.FollowRecorder()
        let firstSubscription = File.follow(path, from: .beginning, checkpoints: store, on: loop)
            .subscribe(next: { first.record($0) })
        XCTAssertTrue(loop.run(until: { first.lineCount >= 10 }, timeout: 60))
        store.acknowledge(first.chunks[0].identity, through: 12)  // "0\n".."5\n"
        try store.save()
        firstSubscription.dispose()
        assertLoopCleanAndClose(loop)

        XCTAssertEqual(truncate(path, 4), 0)  // "0\n1\n" left
        let again = try EventLoop()
        let resumedStore = try TailCheckpointStore(directory: state)
        let second = FileTailFollowTests.FollowRecorder()
        let secondSubscription = File.follow(path, from: .end, checkpoints: resumedStore, notices: {
            second.notices.append($0)
        }, on: again).subscribe(next: { second.record($0) })
        XCTAssertTrue(again.run(until: { second.lineCount >= 2 }, timeout: 60))
        secondSubscription.dispose()
        assertLoopCleanAndClose(again)
        XCTAssertEqual(second.numberedLines.map(\.number), [0, 1])
        XCTAssertTrue(second.notices.contains {
            if case .lost(path, _, TailByteRange(4, 12), .truncatedWhileStopped) = $0 { return true } else { return false }
        }, "\(second.notices)")
        XCTAssertEqual(resumedStore.truncations(for: second.chunks[0].identity), 1)
        XCTAssertEqual(resumedStore.offset(for: second.chunks[0].identity), 0)
    }

    /// A file truncated in place (copytruncate) and written again while followed, its new
    /// lines acknowledged: a tail started again knows the file by its new first bytes and
    /// resumes it where it was acknowledged (it read the new content again from 0, as a
    /// file it had never seen, and said the old record's file was gone).
    func testResumingAFileTruncatedWhileFollowedGoesOnFromItsNewContentsPosition() throws {
        let path = directory.file("cut.log")
        let state = directory.file("state")
        writeFile(path, (0..<10).map { "a\($0)\n" }.joined())
        let loop = try EventLoop()
        let store = try TailCheckpointStore(directory: state)
        let first = FileTailFollowTests.FollowRecorder()
        let firstSubscription = File.follow(path, from: .beginning, checkpoints: store, options: FileTailFollowTests.quickOptions, notices: {
            first.notices.append($0)
        }, on: loop).subscribe(next: { first.record($0) }, error: { first.error = $0 })
        XCTAssertTrue(loop.run(until: { first.lineCount >= 10 }, timeout: 60))
        _ = loop.run(until: { false }, timeout: 0.2)
        XCTAssertEqual(truncate(path, 0), 0)
        append(path, (0..<10).map { "b\($0)\n" }.joined())
        XCTAssertTrue(loop.run(until: { first.lineCount >= 20 }, timeout: 60), "\(first.notices)")
        let last = try XCTUnwrap(first.chunks.last)
        store.acknowledge(last.identity, through: last.endOffset)
        try store.save()
        firstSubscription.dispose()
        assertLoopCleanAndClose(loop)
        XCTAssertTrue(first.notices.contains { if case .truncated = $0 { return true } else { return false } }, "\(first.notices)")

        append(path, "b10\n")
        let again = try EventLoop()
        let second = FileTailFollowTests.FollowRecorder()
        let resumedStore = try TailCheckpointStore(directory: state)
        let secondSubscription = File.follow(path, from: .end, checkpoints: resumedStore, options: FileTailFollowTests.quickOptions, notices: {
            second.notices.append($0)
        }, on: again).subscribe(next: { second.record($0) }, error: { second.error = $0 })
        XCTAssertTrue(again.run(until: { second.lineCount >= 1 || second.error != nil }, timeout: 60))
        _ = again.run(until: { false }, timeout: 0.3)
        secondSubscription.dispose()
        assertLoopCleanAndClose(again)
        let text = second.chunks.map { String(decoding: $0.bytes, as: UTF8.self) }.joined()
        XCTAssertEqual(text, "b10\n", "only the line after the acknowledged position; notices: \(second.notices)")
        // The record is the file's now under its new identity, and nothing was said lost.
        let resumedIdentity = try XCTUnwrap(second.chunks.first?.identity)
        XCTAssertEqual(Array(resumedIdentity.fingerprint.prefix(3)), Array("b0\n".utf8))
        XCTAssertEqual(second.notices, [.resumed(path: path, identity: resumedIdentity, offset: last.endOffset)])
        XCTAssertEqual(resumedStore.truncations(for: resumedIdentity), 1)
        try resumedStore.save()
        let records = try TailCheckpointStore(directory: state).checkpoints
        XCTAssertEqual(records.map(\.identity), [resumedIdentity])
        XCTAssertEqual(records.first?.content, nil)
    }

    /// A file that was empty when the tail first opened it (a log made by its writer, or by
    /// logrotate's `create`, before the first line), then truncated and written again past
    /// the acknowledged position while no tail ran: a tail started again reads the new
    /// content from its start. The store used to know such a file by the fingerprint taken
    /// at that first open, which was empty and so matched whatever the inode held later:
    /// the tail resumed the new content at the old position (its first lines lost, a
    /// fragment of a line delivered).
    func testAFileFirstSeenEmptyAndRewrittenWhileStoppedIsReadFromItsStart() throws {
        let path = directory.file("young.log")
        let state = directory.file("state")
        writeFile(path, "")
        let loop = try EventLoop()
        let store = try TailCheckpointStore(directory: state)
        let first = FileTailFollowTests.FollowRecorder()
        let firstSubscription = File.follow(path, from: .beginning, checkpoints: store, options: FileTailFollowTests.quickOptions, on: loop)
            .subscribe(next: { first.record($0) }, error: { first.error = $0 })
        append(path, (0..<10).map { "\($0) a\n" }.joined())
        XCTAssertTrue(loop.run(until: { first.lineCount >= 10 || first.error != nil }, timeout: 60))
        _ = loop.run(until: { false }, timeout: 0.2)
        let last = try XCTUnwrap(first.chunks.last)
        XCTAssertEqual(last.endOffset, 40)
        store.acknowledge(last.identity, through: last.endOffset)
        try store.save()
        firstSubscription.dispose()
        assertLoopCleanAndClose(loop)

        // Cut and written again, longer than the position (40 falls inside line 6).
        let (second, resumedStore) = try rewriteWhileStoppedAndFollowAgain(path, state: state, text: "bbb")
        // The old content is gone (what it held past the position, if anything, unread),
        // and the file that took its inode counts as truncated once.
        XCTAssertTrue(second.notices.contains {
            if case .lost(path, _, TailByteRange(40, nil), .deletedBeforeRead) = $0 { return true } else { return false }
        }, "\(second.notices)")
        let identity = try XCTUnwrap(second.chunks.first?.identity)
        XCTAssertEqual(resumedStore.truncations(for: identity), 1)
    }

    /// The same file, its position acknowledged and saved from inside the delivery of its
    /// first lines (as `ruv-tail --state` and logcast's edge may) and the process gone right
    /// after: the saved record already holds those first bytes. The store learned them only
    /// at the reader's next end-of-file check, after the delivery, so that save still held
    /// the empty fingerprint and the rewritten file was resumed at the old position.
    func testAPositionSavedFromInsideTheFirstDeliveryIsSavedWithTheFilesFirstBytes() throws {
        let path = directory.file("young.log")
        let state = directory.file("state")
        writeFile(path, "")
        let loop = try EventLoop()
        let store = try TailCheckpointStore(directory: state)
        let first = followSavingInsideADelivery(path, store: store, on: loop) { _ in true }
        append(path, (0..<10).map { "\($0) a\n" }.joined())
        // (Usually one chunk of all ten lines; a read racing the write may take fewer.)
        XCTAssertTrue(loop.run(until: { !first.chunks.isEmpty || first.error != nil }, timeout: 60))
        assertLoopCleanAndClose(loop)
        XCTAssertNil(first.error)
        let chunk = try XCTUnwrap(first.chunks.first)
        XCTAssertEqual(first.chunks.count, 1)
        let saved = try XCTUnwrap(try TailCheckpointStore(directory: state).checkpoints.first)
        XCTAssertEqual(saved.offset, chunk.endOffset)
        XCTAssertEqual(saved.identity.fingerprint, chunk.bytes)

        _ = try rewriteWhileStoppedAndFollowAgain(path, state: state, text: "bbb")
    }

    /// A file truncated while followed, the position of its new content's first lines
    /// acknowledged and saved from inside their delivery and the process gone right after,
    /// then written again with other lines while no tail ran: the saved record holds the
    /// new content's first bytes, so the tail started again does not take the third
    /// content for the second (it resumed it at the second's position: the store had
    /// saved "truncated, nothing of the new content read yet", which matches any bytes).
    func testAPositionSavedInsideTheFirstDeliveryAfterATruncationIsSavedWithTheNewFirstBytes() throws {
        let path = directory.file("cut.log")
        let state = directory.file("state")
        writeFile(path, (0..<10).map { "\($0) a\n" }.joined())
        let loop = try EventLoop()
        let store = try TailCheckpointStore(directory: state)
        let first = followSavingInsideADelivery(path, store: store, on: loop) { recorder in
            recorder.notices.contains { if case .truncated = $0 { return true } else { return false } }
        }
        XCTAssertTrue(loop.run(until: { first.lineCount >= 10 || first.error != nil }, timeout: 60))
        _ = loop.run(until: { false }, timeout: 0.2)
        // Cut and written longer than before while the loop does not look: its first read,
        // at the old position, finds bytes and the truncation, and the new content is read
        // from 0 and delivered before any end-of-file check.
        XCTAssertEqual(truncate(path, 0), 0)
        append(path, (0..<10).map { "\($0) bbbb\n" }.joined())
        XCTAssertTrue(loop.run(until: { first.lineCount > 10 || first.error != nil }, timeout: 60), "\(first.notices)")
        assertLoopCleanAndClose(loop)
        XCTAssertNil(first.error)
        let saved = try XCTUnwrap(try TailCheckpointStore(directory: state).checkpoints.first)
        let chunk = try XCTUnwrap(first.chunks.last)
        XCTAssertEqual(chunk.offset, 0)
        XCTAssertEqual(saved.offset, chunk.endOffset)
        XCTAssertEqual(saved.content, Array(chunk.bytes.prefix(FileIdentity.fingerprintLength)))

        _ = try rewriteWhileStoppedAndFollowAgain(path, state: state, text: "ccc")
    }

    /// Follows `path` from its start with `store`; the first delivery after which `saveNow`
    /// holds acknowledges its chunk, saves the store and disposes the follow from inside the
    /// delivery (a process gone right after saving).
    func followSavingInsideADelivery(
        _ path: String, store: TailCheckpointStore, on loop: EventLoop,
        when saveNow: @escaping (FileTailFollowTests.FollowRecorder) -> Bool
    ) -> FileTailFollowTests.FollowRecorder {
        let recorder = FileTailFollowTests.FollowRecorder()
        let subscription = SerialDisposable()
        subscription.inner = File.follow(path, from: .beginning, checkpoints: store, options: FileTailFollowTests.quickOptions, notices: {
            recorder.notices.append($0)
        }, on: loop).subscribe(next: { chunk in
            recorder.record(chunk)
            guard saveNow(recorder) else { return }
            store.acknowledge(chunk.identity, through: chunk.endOffset)
            do { try store.save() } catch { recorder.error = error }
            subscription.dispose()  // gone before the reader looks at the file again
        }, error: { recorder.error = $0 })
        return recorder
    }

    /// Cuts `path` to nothing and writes 20 numbered lines (`"<n> <text>"`) while no tail
    /// runs, then follows it again from the positions saved in `state` and checks that all
    /// 20 are read, from the start, once.
    func rewriteWhileStoppedAndFollowAgain(
        _ path: String, state: String, text: String, file: StaticString = #filePath, line: UInt = #line
    ) throws -> (FileTailFollowTests.FollowRecorder, TailCheckpointStore) {
        XCTAssertEqual(truncate(path, 0), 0, file: file, line: line)
        append(path, (0..<20).map { "\($0) \(text)\n" }.joined())
        let loop = try EventLoop()
        let store = try TailCheckpointStore(directory: state)
        let recorder = FileTailFollowTests.FollowRecorder()
        let subscription = File.follow(path, from: .end, checkpoints: store, options: FileTailFollowTests.quickOptions, notices: {
            recorder.notices.append($0)
        }, on: loop).subscribe(next: { recorder.record($0) }, error: { recorder.error = $0 })
        XCTAssertTrue(loop.run(until: { recorder.lineCount >= 20 || recorder.error != nil }, timeout: 60), file: file, line: line)
        _ = loop.run(until: { false }, timeout: 0.2)
        subscription.dispose()
        assertLoopCleanAndClose(loop)
        XCTAssertNil(recorder.error, file: file, line: line)
        XCTAssertEqual(recorder.numberedLines.map(\.number), Array(0..<20), "notices: \(recorder.notices)", file: file, line: line)
        return (recorder, store)
    }

    /// A file the store remembers is gone when the tail starts again: its unacknowledged
    /// rest is reported lost from the acknowledged offset on.
    func testAFileDeletedWhileStoppedIsReportedLost() throws {
        let path = directory.file("gone.log")
        let state = directory.file("state")
        writeFile(path, "0\n1\n2\n")
        let store = try TailCheckpointStore(directory: state)
        var info = stat()
        XCTAssertEqual(stat(path, &info), 0)
        let identity = FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino), fingerprint: Array("0\n1\n2\n".utf8))
        store.register(identity, path: path, offset: 0)
        store.acknowledge(identity, through: 2)
        try store.save()
        XCTAssertEqual(unlink(path), 0)
        let loop = try EventLoop()
        let recorder = FileTailFollowTests.FollowRecorder()
        let subscription = File.follow(path, checkpoints: try TailCheckpointStore(directory: state), notices: {
            recorder.notices.append($0)
        }, on: loop).subscribe(next: { recorder.record($0) })
        writeFile(path, "3\n")
        XCTAssertTrue(loop.run(until: { recorder.lineCount >= 1 }, timeout: 60))
        subscription.dispose()
        assertLoopCleanAndClose(loop)
        XCTAssertTrue(recorder.notices.contains(.lost(
            path: path, identity: identity, range: TailByteRange(2, nil), reason: .deletedBeforeRead)), "\(recorder.notices)")
        XCTAssertEqual(recorder.numberedLines.map(\.number), [3])
    }

    /// `usePolling` (as on a network file system): `uv_fs_poll` instead of inotify, said in
    /// a notice; appends, a rename rotation and a truncation are all followed.
    func testThePollingFallbackFollowsAppendsRotationAndTruncation() throws {
        let loop = try EventLoop()
        let path = directory.file("polled.log")
        writeFile(path, "0\n1\n")
        var options = FileTailFollowTests.quickOptions
        options.usePolling = true
        let recorder = FileTailFollowTests.FollowRecorder()
        let subscription = File.follow(path, from: .beginning, options: options, notices: {
            recorder.notices.append($0)
        }, on: loop).subscribe(next: { recorder.record($0) }, error: { recorder.error = $0 })
        XCTAssertTrue(loop.run(until: { recorder.lineCount >= 2 }, timeout: 60))
        append(path, "2\n")
        XCTAssertTrue(loop.run(until: { recorder.lineCount >= 3 }, timeout: 60))
        XCTAssertEqual(rename(path, path + ".1"), 0)
        append(path + ".1", "3\n")
        writeFile(path, "4\n")
        XCTAssertTrue(loop.run(until: { recorder.lineCount >= 5 }, timeout: 60))
        XCTAssertEqual(truncate(path, 0), 0)
        append(path, "5\n")
        XCTAssertTrue(loop.run(until: { recorder.lineCount >= 6 || recorder.error != nil }, timeout: 60))
        subscription.dispose()
        assertLoopCleanAndClose(loop)
        XCTAssertNil(recorder.error)
        XCTAssertEqual(recorder.notices.first, .polling(path: path, reason: "polling was asked for"))
        XCTAssertEqual(recorder.numberedLines.map(\.number).sorted(), Array(0...5))
        XCTAssertTrue(recorder.notices.contains { if case .replaced = $0 { return true } else { return false } },
                      "\(recorder.notices)")
        XCTAssertTrue(recorder.notices.contains { if case .truncated = $0 { return true } else { return false } },
                      "\(recorder.notices)")
    }

    // MARK: - SIGKILL and restart

    /// The `ruv-tail` example, built next to the test bundle.
    static var ruvTail: String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        var path = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        if let slash = path.lastIndex(of: "/") { path = String(path[..<slash]) }
        let candidate = path + "/ruv-tail"
        return access(candidate, X_OK) == 0 ? candidate : nil
    }

    /// Starts `command` with `/bin/sh -c` (which `exec`s it, so the pid is the program's).
    func spawn(_ command: String) -> pid_t {
        var pid: pid_t = 0
        let words: [String] = ["/bin/sh", "-c", command]
        var argv: [UnsafeMutablePointer<CChar>?] = words.map { word in word.withCString { strdup($0) } }
        argv.append(nil)
        defer { argv.forEach { free($0) } }
        XCTAssertEqual(posix_spawn(&pid, "/bin/sh", nil, nil, argv, environ), 0)
        return pid
    }

    /// The numbers of the lines in `path` (a partial last line is not counted).
    func printedNumbers(_ path: String) -> [Int] {
        guard let file = fopen(path, "r") else { return [] }
        defer { fclose(file) }
        var numbers: [Int] = []
        var line: UnsafeMutablePointer<CChar>?
        var capacity = 0
        while getline(&line, &capacity, file) > 0 {
            let text = String(cString: line!)
            if text.hasSuffix("\n"), let n = lineNumber(text) { numbers.append(n) }
        }
        free(line)
        return numbers
    }

    /// Waits (bounded) until `condition` holds, checking every 10 ms.
    func waitFor(_ seconds: Double = 120, _ condition: () -> Bool) -> Bool {
        let deadline = csys_monotonic_ns() + UInt64(seconds * 1e9)
        while csys_monotonic_ns() < deadline {
            if condition() { return true }
            usleep(10_000)
        }
        return condition()
    }

    /// `ruv-tail --state DIR` follows a file written at about 20,000 lines/s; it is killed
    /// with SIGKILL, the file is rotated by rename while it is down (the writer goes on
    /// into the new file), and it is started again 2 s later with the same state. Every
    /// line written is printed; the only lines printed twice are the last ones the killed
    /// process printed after its last save (`--save-interval`), each at most twice.
    func testKilledWithSIGKILLAndRestartedAfterARotationLosesNothing() throws {
        guard let ruvTail = Self.ruvTail else { throw XCTSkip("ruv-tail is not built next to the tests") }
        let path = directory.file("app.log")
        let state = directory.file("state")
        let out = directory.file("out.txt")
        let command = "exec '\(ruvTail)' -n +1 --state '\(state)' '\(path)' >> '\(out)' 2>> '\(directory.file("err.txt"))'"
        let total = 100_000
        let written = Locked(0)
        let rotateNow = Locked(false)
        let rotated = Latch()
        let finished = Latch()
        writeFile(path, "")
        let writer = TestThread {
            defer { finished.countDown() }
            var fd = open(path, O_WRONLY | O_APPEND)
            var i = 0
            while i < total {
                var batch = ""
                for _ in 0..<100 where i < total {
                    batch += "\(i) line of the writer\n"
                    i += 1
                }
                writeAll(fd, batch)
                written.withLock { $0 = i }
                usleep(5_000)  // ~20,000 lines/s
                if rotateNow.withLock({ let r = $0; $0 = false; return r }) {
                    XCTAssertEqual(rename(path, path + ".1"), 0)
                    writeAll(fd, "\(i) after the rename\n")
                    i += 1
                    close(fd)
                    fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0o644)
                    rotated.countDown()
                }
            }
            close(fd)
        }
        var pid = spawn(command)
        XCTAssertTrue(waitFor { self.printedNumbers(out).count >= 20_000 }, "the first run printed lines")
        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        let firstRun = printedNumbers(out)
        rotateNow.withLock { $0 = true }
        XCTAssertTrue(rotated.wait(timeout: 60))
        // Down for 2 s (the writer goes on meanwhile), measured by what it wrote.
        let writtenAtKill = written.value
        XCTAssertTrue(waitFor { written.value >= min(total, writtenAtKill + 40_000) || written.value >= total })
        pid = spawn(command)
        XCTAssertTrue(finished.wait(timeout: 120))
        writer.join()
        XCTAssertTrue(waitFor { Set(self.printedNumbers(out)).count >= total }, "every line printed")
        kill(pid, SIGTERM)
        waitpid(pid, &status, 0)

        let printed = printedNumbers(out)
        let missing = Set(0..<total).subtracting(printed)
        XCTAssertTrue(missing.isEmpty, "lost \(missing.count), from \(String(describing: missing.min()))")
        var seen: [Int: Int] = [:]
        for n in printed { seen[n, default: 0] += 1 }
        let duplicates = seen.filter { $0.value > 1 }
        XCTAssertTrue(duplicates.allSatisfy { $0.value == 2 }, "no line more than twice")
        // The duplicates are the killed run's last lines: a suffix of what it printed.
        let suffix = Set(firstRun.suffix(duplicates.count))
        XCTAssertEqual(Set(duplicates.keys), suffix, "only lines printed after the last save come again")
        XCTAssertLessThan(duplicates.count, firstRun.count)
    }

    /// Reads a whole small file (empty when missing).
    func contents(_ path: String) -> String {
        guard let file = fopen(path, "r") else { return "" }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = fread(&buffer, 1, buffer.count, file)
            if n <= 0 { break }
            bytes += buffer[0..<n]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `ruv-tail` as a `tail -F` user expects: `--help`; `-n 1` on a file whose last line
    /// has no break prints that line; truncation, removal and reappearance are said on
    /// standard error while the lines go on on standard output; SIGTERM exits 0.
    func testRuvTailPrintsAnUnfinishedLastLineAndItsNoticesOnStandardError() throws {
        guard let ruvTail = Self.ruvTail else { throw XCTSkip("ruv-tail is not built next to the tests") }
        let path = directory.file("f.log")
        let out = directory.file("out")
        let err = directory.file("err")
        var status: Int32 = 0
        let help = spawn("exec '\(ruvTail)' --help > '\(out)'")
        waitpid(help, &status, 0)
        XCTAssertEqual(status, 0)
        XCTAssertTrue(contents(out).hasPrefix("usage: ruv-tail"), contents(out))

        writeFile(path, "a\nb")
        let pid = spawn("exec '\(ruvTail)' -n 1 '\(path)' > '\(out)' 2> '\(err)'")
        XCTAssertTrue(waitFor { self.contents(out) == "b" }, "the unfinished last line: \(contents(out))")
        append(path, "c\n")
        XCTAssertTrue(waitFor { self.contents(out) == "bc\n" }, contents(out))
        XCTAssertEqual(truncate(path, 0), 0)
        append(path, "x\n")
        XCTAssertTrue(waitFor { self.contents(out) == "bc\nx\n" && self.contents(err).contains("file truncated") },
                      contents(out) + contents(err))
        XCTAssertEqual(unlink(path), 0)
        XCTAssertTrue(waitFor { self.contents(err).contains("is missing") }, contents(err))
        writeFile(path, "y\n")
        XCTAssertTrue(waitFor { self.contents(out) == "bc\nx\ny\n" && self.contents(err).contains("has appeared") },
                      contents(out) + contents(err))
        kill(pid, SIGTERM)
        waitpid(pid, &status, 0)
        XCTAssertEqual(status, 0, "SIGTERM: exit 0")
    }

    /// `ruv-tail --max-line-bytes 50`: a 100-byte line stops it with exit 1 and the error on
    /// standard error, after the line before it; with `--skip-long-lines` the line is left
    /// out, its bytes named on standard error, and the lines after it go on (SIGTERM: 0).
    /// A limit that is not a positive number is a bad command line (exit 2).
    func testRuvTailStopsAtALineOverItsLimitOrSkipsItWhenAsked() throws {
        guard let ruvTail = Self.ruvTail else { throw XCTSkip("ruv-tail is not built next to the tests") }
        let long = String(repeating: "x", count: 100)
        var status: Int32 = 0

        let bad = spawn("exec '\(ruvTail)' --max-line-bytes 0 '\(directory.file("any.log"))' 2> /dev/null")
        waitpid(bad, &status, 0)
        XCTAssertEqual(status >> 8, 2, "a limit of 0: a bad command line")

        let strictPath = directory.file("strict.log")
        let strictOut = directory.file("strict.out")
        let strictErr = directory.file("strict.err")
        writeFile(strictPath, "before\n\(long)\nafter\n")
        let strict = spawn("exec '\(ruvTail)' -n +1 --max-line-bytes 50 '\(strictPath)' > '\(strictOut)' 2> '\(strictErr)'")
        XCTAssertTrue(waitFor { waitpid(strict, &status, WNOHANG) == strict }, "ruv-tail did not stop at the long line")
        XCTAssertEqual(status >> 8, 1, "a line over the limit: exit 1")
        XCTAssertEqual(contents(strictOut), "before\n")
        XCTAssertTrue(contents(strictErr).contains("line longer than the limit of 50 bytes"), contents(strictErr))

        let path = directory.file("skip.log")
        let out = directory.file("skip.out")
        let err = directory.file("skip.err")
        writeFile(path, "before\n\(long)\nafter\n")
        let pid = spawn("exec '\(ruvTail)' -n +1 --max-line-bytes=50 --skip-long-lines '\(path)' > '\(out)' 2> '\(err)'")
        XCTAssertTrue(waitFor { self.contents(out) == "before\nafter\n" }, contents(out) + contents(err))
        // The line's bytes (7 to 108, its break included) are named as lost.
        XCTAssertTrue(waitFor { self.contents(err).contains("bytes 7..<108 lost: a line was longer than the limit") },
                      contents(err))
        append(path, "\(long)\(long)\nlast\n")
        XCTAssertTrue(waitFor { self.contents(out) == "before\nafter\nlast\n" }, contents(out) + contents(err))
        kill(pid, SIGTERM)
        waitpid(pid, &status, 0)
        XCTAssertEqual(status, 0, "SIGTERM: exit 0")
    }
}

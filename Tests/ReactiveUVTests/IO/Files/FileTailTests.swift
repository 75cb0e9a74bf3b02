import CLibUV
import CSystemShims
import Glibc
import XCTest

@testable import ReactiveUV

/// File.tail: start positions, partial lines, waiting for a file or directory, errors,
/// truncation, rotation by rename, disposal in the middle of a read, main and background
/// loops. Each test with its own loop ends with every handle closed and the loop closed.
/// ``FileTailPoolReadTests`` runs them all again with every read on libuv's pool.
class FileTailTests: XCTestCase {
    var directory: TemporaryDirectory!

    override func setUpWithError() throws { directory = try TemporaryDirectory() }
    override func tearDown() { directory.remove() }

    /// Whether reads of cached data happen on the loop thread (the default); the pool-read
    /// subclass turns it off, so the same tests cover reads on libuv's pool.
    class var readsCachedDataOnLoop: Bool { true }

    /// `File.tail`, or with ``readsCachedDataOnLoop`` off, the same follower with every
    /// read on the pool.
    func tailSignal(
        _ path: String, from start: TailStart = .lastLines(10), pollInterval: Double = 0.2,
        rotationQuietPeriod: Double = 1.0, maxLineLength: Int = LineBuffer.defaultMaxLength, on loop: EventLoop? = nil
    ) -> Signal<String> {
        if Self.readsCachedDataOnLoop {
            return File.tail(path, from: start, pollInterval: pollInterval, rotationQuietPeriod: rotationQuietPeriod,
                             maxLineLength: maxLineLength, on: loop)
        }
        return File.tail(path, from: start, options: poolReadOptions(pollInterval, rotationQuietPeriod, maxLineLength),
                         notices: nil, on: loop)
    }

    /// A tail with short timings, so the tests spend little time waiting for polls.
    func tail(_ path: String, from start: TailStart, on loop: EventLoop) -> (EventRecorder<String>, Disposable) {
        let recorder = EventRecorder<String>(loop: loop)
        let signal = tailSignal(path, from: start, pollInterval: 0.05, rotationQuietPeriod: 0.2, on: loop)
        return (recorder, recorder.subscribe(signal))
    }

    /// Runs `loop` until `recorder` has `count` values (or terminated); bounded.
    @discardableResult
    func run(_ loop: EventLoop, until recorder: EventRecorder<String>, has count: Int) -> Bool {
        loop.run(until: { recorder.valueCount >= count || recorder.terminated }, timeout: 60)
    }

    func numbered(_ range: Range<Int>) -> String { range.map { "\($0)\n" }.joined() }
    func strings(_ range: Range<Int>) -> [String] { range.map(String.init) }

    /// For a tail that starts at the end: appends `sync-k` lines until one arrives, so the
    /// test knows the tail has found its start before it appends what it checks. (A line
    /// appended before the tail opened the file is, rightly, skipped as "already there".)
    func synchronize(_ loop: EventLoop, _ path: String, _ recorder: EventRecorder<String>) {
        var k = 0
        while recorder.valueCount == 0 && k < 600 && !recorder.terminated {
            append(path, "sync-\(k)\n")
            k += 1
            _ = loop.run(until: { recorder.valueCount > 0 }, timeout: 0.1)
        }
        XCTAssertGreaterThan(recorder.valueCount, 0, "the tail never started following")
    }

    // MARK: - Start positions

    func testStartAtTheEndSendsOnlyLinesAppendedLater() throws {
        let loop = try EventLoop()
        let path = directory.file("end.log")
        writeFile(path, numbered(0..<10))
        let (recorder, subscription) = tail(path, from: .end, on: loop)
        synchronize(loop, path, recorder)
        append(path, numbered(10..<13))
        XCTAssertTrue(loop.run(until: { recorder.values.last == "12" }, timeout: 60))
        let values = recorder.values
        let syncCount = values.prefix { $0.hasPrefix("sync-") }.count
        XCTAssertGreaterThan(syncCount, 0, "nothing from before the start: the first line is a sync line")
        XCTAssertEqual(Array(values.dropFirst(syncCount)), ["10", "11", "12"])
        subscription.dispose()
        assertLoopCleanAndClose(loop)
    }

    func testLastThreeLinesOfATenLineFileThenAppendedLines() throws {
        let loop = try EventLoop()
        let path = directory.file("last.log")
        writeFile(path, numbered(0..<10))
        let (recorder, subscription) = tail(path, from: .lastLines(3), on: loop)
        XCTAssertTrue(run(loop, until: recorder, has: 3))
        append(path, numbered(10..<12))
        XCTAssertTrue(run(loop, until: recorder, has: 5))
        XCTAssertEqual(recorder.values, ["7", "8", "9", "10", "11"])
        subscription.dispose()
        assertLoopCleanAndClose(loop)
    }

    func testLastLinesOfABigFileAndMoreLinesThanTheFileHas() throws {
        let loop = try EventLoop()
        // More than one backward chunk (256 KiB) of lines to count back through.
        let big = directory.file("big.log")
        writeFile(big, numbered(0..<100_000))
        let (many, manySubscription) = tail(big, from: .lastLines(70_000), on: loop)
        let small = directory.file("small.log")
        writeFile(small, numbered(0..<4) + "partial")
        let (all, allSubscription) = tail(small, from: .lastLines(50), on: loop)
        XCTAssertTrue(run(loop, until: many, has: 70_000))
        XCTAssertTrue(run(loop, until: all, has: 4))
        append(small, " line\n")
        XCTAssertTrue(run(loop, until: all, has: 5))
        XCTAssertTrue(many.values == strings(30_000..<100_000))
        XCTAssertEqual(all.values, ["0", "1", "2", "3", "partial line"])
        manySubscription.dispose()
        allSubscription.dispose()
        assertLoopCleanAndClose(loop)
    }

    func testFromLineKLikePlusK() throws {
        let loop = try EventLoop()
        let path = directory.file("plus.log")
        writeFile(path, numbered(0..<10))
        // `tail -n +4`: from the fourth line, which is "3".
        let (recorder, subscription) = tail(path, from: .line(4), on: loop)
        XCTAssertTrue(run(loop, until: recorder, has: 7))
        append(path, numbered(10..<11))
        XCTAssertTrue(run(loop, until: recorder, has: 8))
        XCTAssertEqual(recorder.values, strings(3..<11))
        subscription.dispose()

        // A K beyond the end skips the lines still missing as they are appended.
        let short = directory.file("short.log")
        writeFile(short, numbered(0..<2))
        let (beyond, beyondSubscription) = tail(short, from: .line(5), on: loop)
        _ = loop.run(until: { false }, timeout: 0.2)
        append(short, numbered(2..<6))
        XCTAssertTrue(run(loop, until: beyond, has: 2))
        XCTAssertEqual(beyond.values, ["4", "5"])
        beyondSubscription.dispose()
        assertLoopCleanAndClose(loop)
    }

    func testFromTheBeginning() throws {
        let loop = try EventLoop()
        let path = directory.file("begin.log")
        writeFile(path, numbered(0..<10))
        let (recorder, subscription) = tail(path, from: .beginning, on: loop)
        XCTAssertTrue(run(loop, until: recorder, has: 10))
        append(path, numbered(10..<20))
        XCTAssertTrue(run(loop, until: recorder, has: 20))
        XCTAssertEqual(recorder.values, strings(0..<20))
        XCTAssertTrue(recorder.allOnLoopThread)
        subscription.dispose()
        assertLoopCleanAndClose(loop)
    }

    func testFromTheBeginningOfAFileOfManyReads() throws {
        let loop = try EventLoop()
        let path = directory.file("many.log")
        // About 3.4 MB: many full reads, each one's lines sent while the next is read.
        writeFile(path, numbered(0..<500_000))
        let (recorder, subscription) = tail(path, from: .beginning, on: loop)
        XCTAssertTrue(run(loop, until: recorder, has: 500_000))
        append(path, numbered(500_000..<500_010))
        XCTAssertTrue(run(loop, until: recorder, has: 500_010))
        XCTAssertTrue(recorder.values == strings(0..<500_010), "every line once, in order")
        subscription.dispose()
        assertLoopCleanAndClose(loop)
    }

    func testALineOverTheLimitFoundWhileTheNextReadIsUnderWay() throws {
        let loop = try EventLoop()
        let path = directory.file("long-later.log")
        // The long line sits past the first full reads, so when it is reached the read of
        // the chunk after it is already in flight (lines are sent while the next chunk is
        // read): the error must wait for that read before the file is closed (FileRequest
        // asserts one request at a time).
        writeFile(path, numbered(0..<100_000) + String(repeating: "y", count: 300) + "\n" + numbered(0..<50_000))
        let recorder = EventRecorder<String>(loop: loop)
        let subscription = recorder.subscribe(tailSignal(path, from: .beginning, maxLineLength: 200, on: loop))
        XCTAssertTrue(loop.run(until: { recorder.terminated }, timeout: 60))
        XCTAssertEqual(recorder.events.last.flatMap { $0.error as? LineError }, .lineTooLong(maxLength: 200))
        XCTAssertTrue(recorder.values == strings(0..<100_000), "every line before the long one, then the error")
        subscription.dispose()
        assertLoopCleanAndClose(loop)
    }

    func testAPartialLineIsHeldUntilItsBreakArrives() throws {
        let loop = try EventLoop()
        let path = directory.file("partial.log")
        writeFile(path, "a\nb")
        let (recorder, subscription) = tail(path, from: .beginning, on: loop)
        XCTAssertTrue(run(loop, until: recorder, has: 1))
        // Several polls pass; the unfinished "b" must not be sent.
        _ = loop.run(until: { recorder.valueCount > 1 }, timeout: 0.3)
        XCTAssertEqual(recorder.values, ["a"])
        append(path, "c\nd")
        XCTAssertTrue(run(loop, until: recorder, has: 2))
        _ = loop.run(until: { recorder.valueCount > 2 }, timeout: 0.2)
        XCTAssertEqual(recorder.values, ["a", "bc"])
        subscription.dispose()
        assertLoopCleanAndClose(loop)
    }

    // MARK: - Waiting and errors

    func testAMissingFileIsWaitedForAndReadFromItsStart() throws {
        let loop = try EventLoop()
        let path = directory.file("later.log")
        // The default start (last 10 lines) applies only to a file that exists at the start.
        let recorder = EventRecorder<String>(loop: loop)
        let subscription = recorder.subscribe(tailSignal(path, pollInterval: 0.05, on: loop))
        _ = loop.run(until: { recorder.count > 0 }, timeout: 0.3)
        XCTAssertEqual(recorder.count, 0, "nothing while the file is missing: no error")
        writeFile(path, numbered(0..<25))
        XCTAssertTrue(run(loop, until: recorder, has: 25))
        XCTAssertEqual(recorder.values, strings(0..<25))
        subscription.dispose()
        assertLoopCleanAndClose(loop)
    }

    func testAMissingDirectoryIsWaitedForToo() throws {
        let loop = try EventLoop()
        let parent = directory.file("a")
        let path = parent + "/b/app.log"
        let (recorder, subscription) = tail(path, from: .lastLines(10), on: loop)
        _ = loop.run(until: { recorder.count > 0 }, timeout: 0.3)
        XCTAssertEqual(recorder.count, 0, "a missing directory is waited for, not an error")
        XCTAssertEqual(mkdir(parent, 0o755), 0)
        XCTAssertEqual(mkdir(parent + "/b", 0o755), 0)
        _ = loop.run(until: { recorder.count > 0 }, timeout: 0.2)
        append(path, numbered(0..<3))
        XCTAssertTrue(run(loop, until: recorder, has: 3))
        append(path, numbered(3..<5))
        XCTAssertTrue(run(loop, until: recorder, has: 5))
        XCTAssertEqual(recorder.values, strings(0..<5))
        subscription.dispose()
        assertLoopCleanAndClose(loop)
    }

    func testAPathThroughAFileFailsWithENOTDIRNamingThePath() throws {
        let loop = try EventLoop()
        let file = directory.file("plain")
        writeFile(file, "x\n")
        let path = file + "/app.log"
        let (recorder, _) = tail(path, from: .end, on: loop)
        XCTAssertTrue(loop.run(until: { recorder.terminated }, timeout: 60))
        let error = try XCTUnwrap(recorder.error as? UVError)
        XCTAssertEqual(error.name, "ENOTDIR")
        XCTAssertEqual(error.target, path)
        XCTAssertEqual(recorder.count, 1)
        assertLoopCleanAndClose(loop)
    }

    /// A directory at the path is waited on (`tail -F`), not an error: a file that takes
    /// its place is read from its start. (FileTailUnfollowableTests covers FIFOs, sockets,
    /// devices and unreadable files, at the start and mid-stream.)
    func testADirectoryIsWaitedOnNotAnError() throws {
        let loop = try EventLoop()
        let path = directory.file("dir.log")
        XCTAssertEqual(mkdir(path, 0o755), 0)
        let (recorder, subscription) = tail(path, from: .end, on: loop)
        _ = loop.run(until: { recorder.terminated }, timeout: 0.3)
        XCTAssertFalse(recorder.terminated, "\(String(describing: recorder.error))")
        XCTAssertEqual(rmdir(path), 0)
        writeFile(path, "x\n")
        XCTAssertTrue(loop.run(until: { recorder.count >= 1 }, timeout: 60))
        XCTAssertEqual(recorder.events, [.next("x")])
        subscription.dispose()
        assertLoopCleanAndClose(loop)
    }

    func testExtremeStartPositionsDoNotTrap() throws {
        let loop = try EventLoop()
        let path = directory.file("extreme.log")
        writeFile(path, numbered(0..<3))
        let starts: [TailStart] = [.line(Int.min), .line(Int.max), .lastLines(Int.min), .lastLines(Int.max), .line(0)]
        let tails = starts.map { tail(path, from: $0, on: loop) }
        XCTAssertTrue(loop.run(until: {
            tails[0].0.valueCount == 3 && tails[3].0.valueCount == 3 && tails[4].0.valueCount == 3
        }, timeout: 60))
        _ = loop.run(until: { false }, timeout: 0.1)
        XCTAssertEqual(tails.map { $0.0.values.count }, [3, 0, 0, 3, 3])
        tails.forEach { $0.1.dispose() }
        assertLoopCleanAndClose(loop)
    }

    func testBadArgumentsFailWithoutTrapping() {
        let poll = EventRecorder<String>()
        _ = poll.subscribe(File.tail("x", pollInterval: 0))
        let quiet = EventRecorder<String>()
        _ = quiet.subscribe(File.tail("x", rotationQuietPeriod: -.infinity))
        let nul = EventRecorder<String>()
        _ = nul.subscribe(File.tail("a\u{0}b"))
        XCTAssertTrue(poll.error is SignalError)
        XCTAssertTrue(quiet.error is SignalError)
        XCTAssertEqual((nul.error as? UVError)?.name, "EINVAL")
    }

    // MARK: - Truncation and rotation

    func testTruncationRereadsFromTheStart() throws {
        let loop = try EventLoop()
        let path = directory.file("trunc.log")
        writeFile(path, numbered(0..<50))
        let (recorder, subscription) = tail(path, from: .beginning, on: loop)
        XCTAssertTrue(run(loop, until: recorder, has: 50))
        append(path, "unfinished")
        _ = loop.run(until: { false }, timeout: 0.15)
        XCTAssertEqual(truncate(path, 0), 0)
        append(path, "after-1\nafter-2\n")
        XCTAssertTrue(run(loop, until: recorder, has: 52))
        XCTAssertEqual(Array(recorder.values.dropFirst(50)), ["after-1", "after-2"], "the unfinished line before the cut is dropped")
        subscription.dispose()
        assertLoopCleanAndClose(loop)
    }

    func testRotationByRenameKeepsReadingTheOldFileThenFollowsTheNewOne() throws {
        let loop = try EventLoop()
        let path = directory.file("app.log")
        let writer = open(path, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        writeAll(writer, numbered(0..<3))
        let (recorder, subscription) = tail(path, from: .beginning, on: loop)
        XCTAssertTrue(run(loop, until: recorder, has: 3))

        XCTAssertEqual(rename(path, path + ".1"), 0)
        // The writer has not reopened yet: these go to the renamed file.
        writeAll(writer, numbered(3..<5))
        _ = loop.run(until: { recorder.valueCount >= 5 }, timeout: 0.1)
        writeAll(writer, numbered(5..<7) + "7-unfinished")
        close(writer)
        // The writer reopens the path: a new file.
        append(path, numbered(8..<12))
        XCTAssertTrue(run(loop, until: recorder, has: 12))
        // The new file is read at once, the old one to its end: each file's lines in order,
        // the two files' lines interleaved as they were read.
        let values = recorder.values
        XCTAssertEqual(values.filter { !strings(8..<12).contains($0) }, strings(0..<7) + ["7-unfinished"])
        XCTAssertEqual(values.filter { strings(8..<12).contains($0) }, strings(8..<12))
        subscription.dispose()
        assertLoopCleanAndClose(loop)
    }

    func testLinesWrittenToTheOldFileAfterTheNewOneAppearedAreNotLost() throws {
        // Two writers: one has already reopened the path (the new file exists and has a
        // line) while the other still writes to the renamed file. `tail -F` would switch at
        // once and lose the late lines; we finish the old file only once it has been quiet.
        let loop = try EventLoop()
        let path = directory.file("two.log")
        let old = open(path, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        writeAll(old, "old-0\n")
        let recorder = EventRecorder<String>(loop: loop)
        let subscription = recorder.subscribe(
            tailSignal(path, from: .beginning, pollInterval: 0.05, rotationQuietPeriod: 4, on: loop))
        XCTAssertTrue(run(loop, until: recorder, has: 1))
        XCTAssertEqual(rename(path, path + ".1"), 0)
        append(path, "new-0\n")
        _ = loop.run(until: { false }, timeout: 0.2)  // the tail sees the new file meanwhile
        writeAll(old, "old-1\nold-2\n")
        close(old)
        XCTAssertTrue(run(loop, until: recorder, has: 4))
        // Each file's lines in order; the new file's line need not wait for the old file.
        XCTAssertEqual(recorder.values.filter { $0.hasPrefix("old") }, ["old-0", "old-1", "old-2"])
        XCTAssertEqual(recorder.values.filter { $0.hasPrefix("new") }, ["new-0"])
        subscription.dispose()
        assertLoopCleanAndClose(loop)
    }

    func testRotationByRemovalAndRecreation() throws {
        let loop = try EventLoop()
        let path = directory.file("gone.log")
        writeFile(path, numbered(0..<2))
        let (recorder, subscription) = tail(path, from: .beginning, on: loop)
        XCTAssertTrue(run(loop, until: recorder, has: 2))
        XCTAssertEqual(unlink(path), 0)
        _ = loop.run(until: { false }, timeout: 0.15)
        writeFile(path, numbered(2..<4))
        XCTAssertTrue(run(loop, until: recorder, has: 4))
        XCTAssertEqual(recorder.values, strings(0..<4))
        subscription.dispose()
        assertLoopCleanAndClose(loop)
    }

    // MARK: - Disposal

    func testDisposingDuringTheFirstReadOfABigFile() throws {
        let loop = try EventLoop()
        let path = directory.file("huge.log")
        writeFile(path, numbered(0..<1_500_000))
        let recorder = EventRecorder<String>()
        let subscription = SerialDisposable()
        subscription.inner = tailSignal(path, from: .beginning, on: loop).subscribe(next: { line in
            recorder.record(.next(line))
            subscription.dispose()  // inside the first chunk's line loop
        }, error: { recorder.record(.error($0)) })
        XCTAssertTrue(loop.run(until: { recorder.count >= 1 }, timeout: 60))
        _ = loop.run(until: { false }, timeout: 0.2)
        XCTAssertEqual(recorder.events, [.next("0")], "no more lines after disposal")
        assertLoopCleanAndClose(loop)
    }

    func testDisposingFromAnotherThreadWhileAReadIsInFlight() throws {
        let loop = try EventLoop()
        let path = directory.file("huge.log")
        writeFile(path, numbered(0..<1_500_000))
        let (recorder, subscription) = tail(path, from: .beginning, on: loop)
        XCTAssertTrue(run(loop, until: recorder, has: 1))
        TestThread { subscription.dispose() }.join()
        let seen = recorder.count
        assertLoopCleanAndClose(loop)
        XCTAssertEqual(recorder.count, seen, "nothing after dispose()")
        XCTAssertLessThan(seen, 1_500_000)
        XCTAssertTrue(recorder.values == strings(0..<seen), "what arrived is in order")
    }

    // MARK: - Loops

    func testTailOnTheMainLoopAndOnABackgroundLoop() throws {
        let path = directory.file("loops.log")
        writeFile(path, numbered(0..<5))

        let before = mainLoopIOResources()
        let main = EventRecorder<String>(loop: .main)
        let mainSubscription = main.subscribe(tailSignal(path, from: .beginning, pollInterval: 0.05))
        XCTAssertTrue(runMainLoop(timeout: 60) { main.valueCount >= 5 })

        let background = LoopPool.shared.next()
        let other = EventRecorder<String>(loop: background)
        let otherSubscription = other.subscribe(tailSignal(path, from: .beginning, pollInterval: 0.05, on: background))
        XCTAssertTrue(other.wait { $0.count >= 5 })

        append(path, numbered(5..<8))
        XCTAssertTrue(runMainLoop(timeout: 60) { main.valueCount >= 8 })
        XCTAssertTrue(other.wait { $0.count >= 8 })
        XCTAssertEqual(main.values, strings(0..<8))
        XCTAssertEqual(other.values, strings(0..<8))
        XCTAssertTrue(main.allOnLoopThread)
        XCTAssertTrue(other.allOnLoopThread)

        mainSubscription.dispose()
        otherSubscription.dispose()  // from this thread: hops to the background loop
        XCTAssertTrue(runMainLoop(timeout: 60) { mainLoopIOResources() == before })
        XCTAssertTrue(waitUntilNoIOResources(on: background), "the background tail closed its handles")
    }
}

/// Every ``FileTailTests`` test again, with every read on libuv's pool (as on a file
/// system that cannot promise reads that never wait, or for data not in the page cache):
/// the pool's read-ahead, its cancellation and its errors.
/// ``TailOptions`` with every read on libuv's pool (the tests of that path).
func poolReadOptions(_ pollInterval: Double, _ rotationQuietPeriod: Double, _ maxLineLength: Int) -> TailOptions {
    var options = File.options(pollInterval, rotationQuietPeriod, maxLineLength)
    options.readsCachedDataOnLoop = false
    return options
}

final class FileTailPoolReadTests: FileTailTests {
    override class var readsCachedDataOnLoop: Bool { false }

    // Linux's XCTest runs only the test methods a class declares itself, so each one is
    // named again here (a new test in FileTailTests belongs here too).
    override func testStartAtTheEndSendsOnlyLinesAppendedLater() throws { try super.testStartAtTheEndSendsOnlyLinesAppendedLater() }
    override func testLastThreeLinesOfATenLineFileThenAppendedLines() throws { try super.testLastThreeLinesOfATenLineFileThenAppendedLines() }
    override func testLastLinesOfABigFileAndMoreLinesThanTheFileHas() throws { try super.testLastLinesOfABigFileAndMoreLinesThanTheFileHas() }
    override func testFromLineKLikePlusK() throws { try super.testFromLineKLikePlusK() }
    override func testFromTheBeginning() throws { try super.testFromTheBeginning() }
    override func testFromTheBeginningOfAFileOfManyReads() throws { try super.testFromTheBeginningOfAFileOfManyReads() }
    override func testALineOverTheLimitFoundWhileTheNextReadIsUnderWay() throws { try super.testALineOverTheLimitFoundWhileTheNextReadIsUnderWay() }
    override func testAPartialLineIsHeldUntilItsBreakArrives() throws { try super.testAPartialLineIsHeldUntilItsBreakArrives() }
    override func testAMissingFileIsWaitedForAndReadFromItsStart() throws { try super.testAMissingFileIsWaitedForAndReadFromItsStart() }
    override func testAMissingDirectoryIsWaitedForToo() throws { try super.testAMissingDirectoryIsWaitedForToo() }
    override func testAPathThroughAFileFailsWithENOTDIRNamingThePath() throws { try super.testAPathThroughAFileFailsWithENOTDIRNamingThePath() }
    override func testADirectoryIsWaitedOnNotAnError() throws { try super.testADirectoryIsWaitedOnNotAnError() }
    override func testExtremeStartPositionsDoNotTrap() throws { try super.testExtremeStartPositionsDoNotTrap() }
    override func testTruncationRereadsFromTheStart() throws { try super.testTruncationRereadsFromTheStart() }
    override func testRotationByRenameKeepsReadingTheOldFileThenFollowsTheNewOne() throws { try super.testRotationByRenameKeepsReadingTheOldFileThenFollowsTheNewOne() }
    override func testLinesWrittenToTheOldFileAfterTheNewOneAppearedAreNotLost() throws { try super.testLinesWrittenToTheOldFileAfterTheNewOneAppearedAreNotLost() }
    override func testRotationByRemovalAndRecreation() throws { try super.testRotationByRemovalAndRecreation() }
    override func testDisposingDuringTheFirstReadOfABigFile() throws { try super.testDisposingDuringTheFirstReadOfABigFile() }
    override func testDisposingFromAnotherThreadWhileAReadIsInFlight() throws { try super.testDisposingFromAnotherThreadWhileAReadIsInFlight() }
    override func testTailOnTheMainLoopAndOnABackgroundLoop() throws { try super.testTailOnTheMainLoopAndOnABackgroundLoop() }
}

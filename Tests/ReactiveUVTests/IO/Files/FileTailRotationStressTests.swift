import CLibUV
import CSystemShims
import Glibc
import XCTest

@testable import ReactiveUV

/// The `tail -F` acceptance test: a writer appends 200,000 numbered lines at full speed
/// while the file is rotated three times by rename (with lines written to the old
/// descriptor after each rename, before the writer reopens the path) and truncated once
/// in place (copy-truncate style); the tail must deliver every line exactly once, in order.
/// ``FileTailRotationStressPoolReadTests`` runs it again with every read on libuv's pool.
class FileTailRotationStressTests: XCTestCase {
    var directory: TemporaryDirectory!

    /// Whether reads of cached data happen on the loop thread (the default).
    class var readsCachedDataOnLoop: Bool { true }

    override func setUpWithError() throws { directory = try TemporaryDirectory() }
    override func tearDown() { directory.remove() }

    func testEveryLineExactlyOnceThroughThreeRenamesAndACopyTruncate() throws {
        let total = 200_000
        let rotations: Set<Int> = [40_000, 90_000, 140_000]
        let linesToOldFileAfterRename = 7
        let truncation = 170_000

        let loop = try EventLoop()
        let path = directory.file("app.log")
        let recorder = EventRecorder<String>(loop: loop)
        let subscription = recorder.subscribe(
            Self.readsCachedDataOnLoop
                ? File.tail(path, from: .beginning, pollInterval: 0.1, rotationQuietPeriod: 0.3, on: loop)
                : File.tail(path, from: .beginning, options: poolReadOptions(0.1, 0.3, LineBuffer.defaultMaxLength),
                            notices: nil, on: loop))
        let failure = Locked<String?>(nil)
        let finished = Latch()

        // The coordination a real deployment has implicitly: rotations are rare. Before a
        // rename the writer waits until the tail has delivered a line of the current file
        // (a file renamed away before any reader opened it is lost to every tailer); before
        // the truncation it waits until everything written so far has been delivered
        // (lines written between a copy and a truncation are lost to every reader).
        let writer = TestThread {
            defer { finished.countDown() }
            func waitDelivered(_ count: Int, _ why: String) -> Bool {
                if recorder.wait(timeout: 60, until: { $0.count >= count }) { return true }
                failure.withLock { $0 = "timed out waiting for \(count) lines (\(why)); have \(recorder.count)" }
                return false
            }
            var fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0o644)
            var batch: [UInt8] = []
            batch.reserveCapacity(1 << 17)
            var batchLimit = 1
            func flush() {
                batch.withUnsafeBytes { writeAll(fd, $0) }
                batch.removeAll(keepingCapacity: true)
            }
            func line(_ i: Int) -> String { "\(i) " + String(repeating: "abcdefghij", count: i % 9) + "\n" }

            var firstLineOfCurrentFile = 0
            var i = 0
            while i < total {
                if rotations.contains(i) {
                    flush()
                    guard waitDelivered(firstLineOfCurrentFile + 1, "before rename at \(i)") else { return }
                    XCTAssertEqual(rename(path, path + ".1"), 0)
                    // The writer has not noticed yet: these lines go to the renamed file.
                    for _ in 0..<linesToOldFileAfterRename {
                        writeAll(fd, line(i))
                        i += 1
                    }
                    close(fd)
                    fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0o644)
                    firstLineOfCurrentFile = i
                }
                if i == truncation {
                    flush()
                    guard waitDelivered(i, "before truncation") else { return }
                    XCTAssertEqual(truncate(path, 0), 0)
                    // O_APPEND: the next write lands at the new end, offset 0.
                    writeAll(fd, line(i))
                    i += 1
                    guard waitDelivered(i, "after truncation") else { return }
                }
                batch.append(contentsOf: line(i).utf8)
                i += 1
                // Writes of every size from one line to ~64 KiB.
                if batch.count >= batchLimit {
                    flush()
                    batchLimit = batchLimit >= 65_536 ? 1 : batchLimit * 3
                }
            }
            flush()
            close(fd)
        }

        let done = loop.run(until: {
            recorder.count >= total || recorder.terminated || failure.value != nil
        }, timeout: 180)
        if finished.wait(timeout: 180) { writer.join() }
        XCTAssertNil(failure.value)
        XCTAssertTrue(done, "delivered \(recorder.count) of \(total)")
        // A few more polls: nothing may follow (no duplicates after the end).
        _ = loop.run(until: { false }, timeout: 0.5)
        subscription.dispose()
        assertLoopCleanAndClose(loop)

        let events = recorder.events
        XCTAssertFalse(events.contains { $0.isTerminating }, "no error: \(String(describing: recorder.error))")
        let numbers = events.compactMap { $0.value.flatMap(lineNumber) }
        XCTAssertEqual(numbers.count, events.count, "every line parses")
        XCTAssertEqual(numbers.count, total)
        XCTAssertTrue(numbers.sorted() == Array(0..<total), "every line exactly once")
        // Each file's lines in order (the files' lines interleave: a new file is read at
        // once, the renamed one to its end). File k holds the lines from its first line
        // to the 7 written to it after its rename.
        let files = [0..<40_007, 40_007..<90_007, 90_007..<140_007, 140_007..<total]
        for file in files {
            let inFile = numbers.filter { file.contains($0) }
            if inFile != Array(file) {
                let firstBad = zip(inFile, file).first { $0 != $1 }
                XCTFail("file \(file) out of sequence at \(String(describing: firstBad))")
            }
        }
        // The lines themselves are intact, not just their numbers.
        let byNumber = Dictionary(recorder.values.map { (lineNumber($0) ?? -1, $0) }, uniquingKeysWith: { a, _ in a })
        for probe in [0, 39_999, 40_003, 90_006, 140_010, 169_999, 170_000, 199_999] {
            XCTAssertEqual(byNumber[probe], "\(probe) " + String(repeating: "abcdefghij", count: probe % 9))
        }
    }
}

/// The acceptance test again, with every read on libuv's pool.
final class FileTailRotationStressPoolReadTests: FileTailRotationStressTests {
    override class var readsCachedDataOnLoop: Bool { false }

    // Linux's XCTest runs only the test methods a class declares itself, so each one is
    // named again here (a new test in FileTailRotationStressTests belongs here too).
    override func testEveryLineExactlyOnceThroughThreeRenamesAndACopyTruncate() throws { try super.testEveryLineExactlyOnceThroughThreeRenamesAndACopyTruncate() }
}

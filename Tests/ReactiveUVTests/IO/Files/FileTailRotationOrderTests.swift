import CLibUV
import CSystemShims
import Glibc
import XCTest

@testable import ReactiveUV

/// The rotation order guarantee (issue 32): across any number of rotations, however fast,
/// every line of a file comes before any line of the file that replaced it at the path.
///
/// A writer rotates faster than the reader reads: it writes each file in one `write()`
/// right after creating it (so an inotify-driven reader may open it while it is still
/// empty), renames it to `.1` (the older ones moving to `.2`, `.3`), creates the next, three
/// times in quick succession, and repeats that many times. Every line carries a sequence
/// number; since each file is complete before the next one exists, the only correct
/// delivery is every number exactly once, in order. Run with inotify and with polling
/// (where files created and rotated between two polls are found among the siblings).
final class FileTailRotationOrderTests: XCTestCase {
    var directory: TemporaryDirectory!

    override func setUpWithError() throws { directory = try TemporaryDirectory() }
    override func tearDown() { directory.remove() }

    func testEveryFileBeforeItsSuccessorThroughQuickRotationsWithInotify() throws {
        try checkOrderThroughQuickRotations(polling: false, rounds: 40)
    }

    func testEveryFileBeforeItsSuccessorThroughQuickRotationsWhenPolling() throws {
        try checkOrderThroughQuickRotations(polling: true, rounds: 25)
    }

    func testEveryFileBeforeItsSuccessorThroughQuickRotationsWithPoolReads() throws {
        var options = TailOptions()
        options.readsCachedDataOnLoop = false
        try checkOrderThroughQuickRotations(polling: false, rounds: 25, options: options)
    }

    private func checkOrderThroughQuickRotations(polling: Bool, rounds: Int, options base: TailOptions = TailOptions()) throws {
        let loop = try EventLoop()
        let path = directory.file("rot.log")
        var options = base
        options.usePolling = polling
        options.pollInterval = 0.05
        options.rotationQuietPeriod = 0.5

        // Lines of a few dozen bytes; files from one line to ~150 KiB (more than one read).
        @Sendable func lines(_ range: Range<Int>) -> [UInt8] {
            var bytes: [UInt8] = []
            for i in range {
                bytes += Array("\(i) \(String(repeating: "x", count: 10 + i % 50))\n".utf8)
            }
            return bytes
        }
        var sizes = SystemRandomNumberGenerator()
        var plannedFiles: [Range<Int>] = []
        var next = 0
        for _ in 0..<(1 + rounds * 3) {
            let count = Int.random(in: 1...2000, using: &sizes)
            plannedFiles.append(next..<(next + count))
            next += count
        }
        let total = next
        let files = plannedFiles

        writeFile(path, lines(files[0]))
        let recorder = EventRecorder<String>(loop: loop)
        let subscription = recorder.subscribe(File.tail(path, from: .beginning, options: options, notices: nil, on: loop))
        let failure = Locked<String?>(nil)
        let finished = Latch()

        let writer = TestThread {
            defer { finished.countDown() }
            var written = files[0].count
            for round in 0..<rounds {
                // Everything so far delivered: the rotated files can go (each was read to
                // its end), so the directory holds at most three of them.
                guard recorder.wait(timeout: 120, until: { $0.count >= written }) else {
                    failure.withLock { $0 = "round \(round): timed out with \(recorder.valueCount) of \(written) lines" }
                    return
                }
                for k in 1...3 { unlink(path + ".\(k)") }
                for k in 1...3 {
                    _ = rename(path + ".2", path + ".3")
                    _ = rename(path + ".1", path + ".2")
                    guard rename(path, path + ".1") == 0 else {
                        failure.withLock { $0 = "rename failed: \(errno)" }
                        return
                    }
                    // Created, then written in one write(): a reader may open it empty.
                    let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
                    guard fd >= 0 else {
                        failure.withLock { $0 = "create failed: \(errno)" }
                        return
                    }
                    let file = files[1 + round * 3 + (k - 1)]
                    lines(file).withUnsafeBytes { writeAll(fd, $0) }
                    close(fd)
                    written += file.count
                }
            }
        }

        let done = loop.run(until: {
            recorder.valueCount >= total || recorder.terminated || failure.value != nil
        }, timeout: 300)
        if finished.wait(timeout: 300) { writer.join() }
        XCTAssertNil(failure.value)
        XCTAssertTrue(done, "delivered \(recorder.valueCount) of \(total)")
        // A few more polls: nothing may follow (no line twice).
        _ = loop.run(until: { false }, timeout: 0.3)
        subscription.dispose()
        assertLoopCleanAndClose(loop)

        XCTAssertNil(recorder.error)
        let numbers = recorder.values.map { lineNumber($0) ?? -1 }
        XCTAssertEqual(numbers.count, total)
        if numbers != Array(0..<total) {
            let at = numbers.indices.first { numbers[$0] != $0 } ?? min(numbers.count, total)
            let fileOf = { (n: Int) in files.firstIndex { $0.contains(n) } ?? -1 }
            let got = at < numbers.count ? numbers[at] : -1
            XCTFail("out of order at delivery \(at): line \(got) (file \(fileOf(got))) where \(at) (file \(fileOf(at))) belongs; sizes \(files.map(\.count).prefix(12))…")
        }
    }
}

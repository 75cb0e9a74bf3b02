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
}

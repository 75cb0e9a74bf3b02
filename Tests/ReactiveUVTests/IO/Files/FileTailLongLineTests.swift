import Glibc
import XCTest

@testable import ReactiveUV

/// `TailOptions.longLines = .skip`: a line over the limit is left out, named by a `lost`
/// notice, and reading goes on after it — in one read, across several reads, at a file's
/// end, with pool reads. Real files, the real loop.
final class FileTailLongLineTests: XCTestCase {
    var directory: TemporaryDirectory!

    override func setUpWithError() throws { directory = try TemporaryDirectory() }
    override func tearDown() { directory.remove() }

    func skipping(limit: Int, onLoop: Bool = true) -> TailOptions {
        var options = FileTailFollowTests.quickOptions
        options.maxLineLength = limit
        options.longLines = .skip
        options.readsCachedDataOnLoop = onLoop
        return options
    }

    /// Lines over the limit among others in one read (the first line of the read, one in
    /// the middle, two in a row, one with `\r\n` just at the limit kept): each is left out
    /// with its exact byte range, every other line arrives once, in order.
    func testLinesOverTheLimitInOneReadAreLeftOutAndNamed() throws {
        for onLoop in [true, false] {
            let path = directory.file("long-\(onLoop).log")
            let long = String(repeating: "x", count: 150)
            let text = long + "\n0\n1\n" + long + "\n2\n" + long + "\n" + long + "\n3 " + String(repeating: "y", count: 98) + "\r\n4\n"
            writeFile(path, text)
            let loop = try EventLoop()
            let (recorder, subscription) = follow(path, options: skipping(limit: 100, onLoop: onLoop), on: loop)
            XCTAssertTrue(loop.run(until: { recorder.lineCount >= 5 || recorder.error != nil }, timeout: 60), "\(recorder.notices)")
            subscription.dispose()
            assertLoopCleanAndClose(loop)
            XCTAssertNil(recorder.error)
            XCTAssertEqual(recorder.numberedLines.map(\.number), [0, 1, 2, 3, 4])
            XCTAssertEqual(recorder.lostRanges, [TailByteRange(0, 151), TailByteRange(155, 306), TailByteRange(308, 459), TailByteRange(459, 610)])
            // Each chunk is the file's own bytes at its offset.
            let bytes = Array(text.utf8)
            for chunk in recorder.chunks {
                XCTAssertEqual(chunk.bytes, Array(bytes[Int(chunk.offset)..<Int(chunk.endOffset)]))
            }
        }
    }

    /// A line over the limit written in pieces, each read on its own: what is read of it is
    /// dropped as it comes (never held), and it is named once its break arrives; the line
    /// after it starts the next chunk, so acknowledging that chunk moves a checkpoint over
    /// the long line.
    func testALineOverTheLimitReadInPiecesIsDroppedAsItComes() throws {
        let path = directory.file("pieces.log")
        writeFile(path, "0\n1\n" + String(repeating: "x", count: 80))
        let loop = try EventLoop()
        let (recorder, subscription) = follow(path, options: skipping(limit: 100), on: loop)
        XCTAssertTrue(loop.run(until: { recorder.lineCount >= 2 }, timeout: 60))
        for _ in 0..<3 {
            append(path, String(repeating: "x", count: 80))
            _ = loop.run(until: { false }, timeout: 0.2)
            XCTAssertTrue(recorder.notices.isEmpty, "not named before its end: \(recorder.notices)")
        }
        append(path, "x\n2\n")
        XCTAssertTrue(loop.run(until: { recorder.lineCount >= 3 || recorder.error != nil }, timeout: 60))
        subscription.dispose()
        assertLoopCleanAndClose(loop)
        XCTAssertNil(recorder.error)
        XCTAssertEqual(recorder.numberedLines.map(\.number), [0, 1, 2])
        XCTAssertEqual(recorder.lostRanges, [TailByteRange(4, 326)])
        XCTAssertEqual(recorder.chunks.last?.offset, 326)
        XCTAssertEqual(recorder.chunks.last?.bytes, Array("2\n".utf8))
    }

    /// A file rotated away in the middle of a line over the limit: at the file's end what
    /// was dropped of it is named, and the new file is read as usual.
    func testALineOverTheLimitAtTheEndOfARotatedFileIsNamedThere() throws {
        let path = directory.file("app.log")
        writeFile(path, "0\n" + String(repeating: "x", count: 300))
        let loop = try EventLoop()
        let (recorder, subscription) = follow(path, options: skipping(limit: 100), on: loop)
        XCTAssertTrue(loop.run(until: { recorder.lineCount >= 1 }, timeout: 60))
        XCTAssertEqual(rename(path, path + ".1"), 0)
        writeFile(path, "1\n")
        XCTAssertTrue(loop.run(until: { recorder.lineCount >= 2 && !recorder.lostRanges.isEmpty }, timeout: 60), "\(recorder.notices)")
        subscription.dispose()
        assertLoopCleanAndClose(loop)
        XCTAssertEqual(recorder.numberedLines.map(\.number), [0, 1])
        XCTAssertEqual(recorder.lostRanges, [TailByteRange(2, 302)])
    }

    func follow(_ path: String, options: TailOptions, on loop: EventLoop) -> (FileTailFollowTests.FollowRecorder, Disposable) {
        let recorder = FileTailFollowTests.FollowRecorder()
        let subscription = File.follow(path, from: .beginning, options: options, notices: {
            recorder.notices.append($0)
        }, on: loop).subscribe(next: { recorder.record($0) }, error: { recorder.error = $0 })
        return (recorder, subscription)
    }
}

extension FileTailFollowTests.FollowRecorder {
    /// The ranges of the lines left out for being over the limit, in notice order.
    var lostRanges: [TailByteRange] {
        notices.compactMap { if case .lost(_, _, let range, .lineTooLong) = $0 { return range } else { return nil } }
    }
}

import CLibUV
import Glibc
import XCTest

@testable import ReactiveUV

/// `FileRequest`'s array read: the `pread` into a new array on libuv's pool that
/// `File.tail`/`tailChunks` use, with a carried prefix and the split at the last line break.
final class FileRequestTests: XCTestCase {
    var directory: TemporaryDirectory!

    override func setUpWithError() throws { directory = try TemporaryDirectory() }
    override func tearDown() { directory.remove() }

    /// Runs one array read to its completion and returns what it gave.
    func read(
        _ loop: EventLoop, _ fd: Int32, count: Int, at offset: Int64, after prefix: String, split: Bool
    ) -> (count: Int, bytes: String, partial: String?)? {
        let request = FileRequest(loop: loop)
        var result: ArrayReadResult?
        request.read(fd, count: count, at: offset, after: Array(prefix.utf8), splittingAtLastLineBreak: split) {
            result = $0
        }
        XCTAssertTrue(request.inFlight)
        guard loop.run(until: { result != nil }, timeout: 60), let result else { return nil }
        XCTAssertFalse(request.inFlight)
        return (result.count, String(decoding: result.bytes, as: UTF8.self),
                result.partialLine.map { String(decoding: $0, as: UTF8.self) })
    }

    func testReadsAfterThePrefixAndSplitsAtTheLastLineBreak() throws {
        let loop = try EventLoop()
        let path = directory.file("r.log")
        writeFile(path, "ab\ncd\nef")
        let fd = open(path, O_RDONLY)
        defer { close(fd) }

        let split = read(loop, fd, count: 100, at: 0, after: "xy", split: true)
        XCTAssertEqual(split?.count, 8, "bytes read, not counting the prefix")
        XCTAssertEqual(split?.bytes, "xyab\ncd\n")
        XCTAssertEqual(split?.partial, "ef")

        let plain = read(loop, fd, count: 100, at: 0, after: "xy", split: false)
        XCTAssertEqual(plain?.bytes, "xyab\ncd\nef")
        XCTAssertNil(plain?.partial)

        let endsAtBreak = read(loop, fd, count: 6, at: 0, after: "", split: true)
        XCTAssertEqual(endsAtBreak?.bytes, "ab\ncd\n")
        XCTAssertEqual(endsAtBreak?.partial, "", "a break at the very end leaves an empty partial line")

        // No break among the new bytes: no split, everything is one unfinished line (the
        // prefix is part of it).
        let noBreak = read(loop, fd, count: 2, at: 6, after: "zz", split: true)
        XCTAssertEqual(noBreak?.count, 2)
        XCTAssertEqual(noBreak?.bytes, "zzef")
        XCTAssertNil(noBreak?.partial)

        let atEnd = read(loop, fd, count: 100, at: 8, after: "carried", split: true)
        XCTAssertEqual(atEnd?.count, 0)
        XCTAssertEqual(atEnd?.bytes, "carried", "the prefix comes back at end of file")
        XCTAssertNil(atEnd?.partial)
        assertLoopCleanAndClose(loop)
    }

    func testASmallSplitReadDoesNotKeepTheStorageOfAFullOne() throws {
        let loop = try EventLoop()
        let path = directory.file("small.log")
        writeFile(path, "one\ntwo\nthr")
        let fd = open(path, O_RDONLY)
        defer { close(fd) }
        let request = FileRequest(loop: loop)
        var result: ArrayReadResult?
        request.read(fd, count: 256 * 1024, at: 0, after: [], splittingAtLastLineBreak: true) { result = $0 }
        XCTAssertTrue(loop.run(until: { result != nil }, timeout: 60))
        XCTAssertEqual(result?.bytes, Array("one\ntwo\n".utf8))
        // Sent on and perhaps kept: sized to its bytes, not to the 256 KiB it was read into.
        XCTAssertLessThan(result?.bytes.capacity ?? .max, 1024)
        assertLoopCleanAndClose(loop)
    }

    func testAFailedReadGivesTheCodeAndThePrefixBack() throws {
        let loop = try EventLoop()
        let path = directory.file("w.log")
        writeFile(path, "data\n")
        let writeOnly = open(path, O_WRONLY)
        defer { close(writeOnly) }
        let failed = read(loop, writeOnly, count: 10, at: 0, after: "kept", split: true)
        XCTAssertEqual(failed?.count, Int(UV_EBADF.rawValue), "libuv's code: a negated errno")
        XCTAssertEqual(failed?.bytes, "kept")
        XCTAssertNil(failed?.partial)
        assertLoopCleanAndClose(loop)
    }
}

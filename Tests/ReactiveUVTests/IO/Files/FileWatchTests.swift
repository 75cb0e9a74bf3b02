import CLibUV
import Glibc
import XCTest

@testable import ReactiveUV

/// File.watch: a write and a rename of a watched file, entries of a watched directory,
/// a missing path.
final class FileWatchTests: XCTestCase {
    var directory: TemporaryDirectory!

    override func setUpWithError() throws { directory = try TemporaryDirectory() }
    override func tearDown() { directory.remove() }

    func testAWatchedFileReportsAWriteAndARename() throws {
        let loop = try EventLoop()
        let path = directory.file("watched.txt")
        writeFile(path, "start\n")
        let recorder = EventRecorder<FileChange>(loop: loop)
        let subscription = recorder.subscribe(File.watch(path, on: loop))
        // Subscribed on the loop's thread: the watch is active now.
        append(path, "more\n")
        XCTAssertTrue(loop.run(until: { recorder.values.contains { $0.kind.contains(.change) } }, timeout: 60))
        XCTAssertEqual(rename(path, path + ".moved"), 0)
        XCTAssertTrue(loop.run(until: { recorder.values.contains { $0.kind.contains(.rename) } }, timeout: 60))
        let changes = recorder.values
        XCTAssertTrue(changes.allSatisfy { $0.path == path && $0.filename == "watched.txt" }, "\(changes)")
        XCTAssertLessThan(
            changes.firstIndex { $0.kind.contains(.change) }!, changes.firstIndex { $0.kind.contains(.rename) }!,
            "the write is reported before the rename")
        XCTAssertTrue(recorder.allOnLoopThread)
        XCTAssertFalse(recorder.terminated)
        subscription.dispose()
        assertLoopCleanAndClose(loop)
    }

    func testAWatchedDirectoryReportsItsEntriesByName() throws {
        let loop = try EventLoop()
        let recorder = EventRecorder<FileChange>()
        let subscription = recorder.subscribe(File.watch(directory.path, on: loop))
        writeFile(directory.file("new.txt"), "x\n")
        XCTAssertTrue(loop.run(until: {
            recorder.values.contains { $0.filename == "new.txt" && $0.kind.contains(.rename) }
        }, timeout: 60))
        subscription.dispose()
        // After disposal nothing more arrives, even though the directory keeps changing.
        let seen = recorder.count
        writeFile(directory.file("later.txt"), "y\n")
        _ = loop.run(until: { false }, timeout: 0.1)
        XCTAssertEqual(recorder.count, seen)
        assertLoopCleanAndClose(loop)
    }

    func testWatchingAMissingPathFailsWithENOENT() throws {
        let loop = try EventLoop()
        let path = directory.file("nothing-here")
        let recorder = EventRecorder<FileChange>()
        _ = recorder.subscribe(File.watch(path, on: loop))
        XCTAssertTrue(loop.run(until: { recorder.terminated }, timeout: 60))
        let error = try XCTUnwrap(recorder.error as? UVError)
        XCTAssertEqual(error, UVError.noSuchFile)
        XCTAssertEqual(error.operation, "watch")
        XCTAssertEqual(error.target, path)
        assertLoopCleanAndClose(loop)
    }

    func testWatchFromAnotherThreadOnABackgroundLoop() throws {
        let path = directory.file("bg.txt")
        writeFile(path, "")
        let loop = LoopPool.shared.next()
        let recorder = EventRecorder<FileChange>(loop: loop)
        let subscription = recorder.subscribe(File.watch(path, on: loop))
        // Subscribed from another thread: the watch starts when the loop gets to it, so
        // keep writing until a change is seen.
        var writes = 0
        while !recorder.wait(timeout: 0.1, until: { !$0.isEmpty }) && writes < 600 {
            append(path, "x\n")
            writes += 1
        }
        XCTAssertFalse(recorder.values.isEmpty)
        XCTAssertTrue(recorder.allOnLoopThread)
        subscription.dispose()
        XCTAssertTrue(waitUntilNoIOResources(on: loop))
    }
}

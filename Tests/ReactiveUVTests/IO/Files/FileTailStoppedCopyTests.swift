import Foundation
import Glibc
import XCTest

@testable import ReactiveUV

/// copytruncate while no tail runs: logrotate copies `app.log` to `app.log.1` and cuts
/// `app.log` in place. The lines the tail had not acknowledged are in the copy, from the
/// acknowledged offset on; a tail started again reads them from there before the cut file,
/// as a tail that was running does. They were reported lost ("deleted before read", or
/// "truncated while stopped") and never read.
extension FileTailResumeTests {
    /// Lines `range`, one per line, numbered.
    private func lines(_ range: Range<Int>) -> String { range.map { "\($0) copy\n" }.joined() }

    /// Follows `path` from its start, acknowledging every chunk (after `inspect` saw it
    /// with the store), until `count` lines came; saves the store and stops.
    private func session(
        _ path: String, state: String, until count: Int, whenRunning: (() -> Void)? = nil,
        inspect: ((TailChunk, TailCheckpointStore) -> Void)? = nil
    ) throws -> FileTailFollowTests.FollowRecorder {
        let loop = try EventLoop()
        let store = try TailCheckpointStore(directory: state)
        let recorder = FileTailFollowTests.FollowRecorder()
        let subscription = followAcknowledging(
            path, from: .beginning, store: store, into: recorder, on: loop, inspect: inspect.map { inspect in { inspect($0, store) } })
        whenRunning?()
        XCTAssertTrue(loop.run(until: { recorder.lineCount >= count }, timeout: 60), "\(recorder.notices)")
        _ = loop.run(until: { false }, timeout: 0.2)  // anything more (read twice) would come now
        try store.save()
        subscription.dispose()
        assertLoopCleanAndClose(loop)
        return recorder
    }

    /// What copytruncate does: a copy with everything the file holds, then the cut.
    private func copyTruncate(_ path: String) throws {
        try FileManager.default.copyItem(atPath: path, toPath: path + ".1")
        XCTAssertEqual(truncate(path, 0), 0)
    }

    /// Stopped after lines 0–9, the file grew to 19, was copied and cut, and its writer went
    /// on with 20–24 (new first bytes: the store no longer knows the file at the path). The
    /// tail started again reads 10–19 from the copy, then 20–24: each line once, nothing
    /// lost. It reported lines 10–19 "deleted before read", from 40 to an unknown end.
    /// A third start reads only what came after.
    func testACopyTruncateWhileStoppedIsReadOnFromTheCopyWhenTheFileWasWrittenAgain() throws {
        let path = directory.file("app.log"), state = directory.file("state")
        writeFile(path, lines(0..<10))
        let first = try session(path, state: state, until: 10)
        XCTAssertEqual(first.numberedLines.map(\.number), Array(0..<10))

        append(path, lines(10..<20))
        try copyTruncate(path)
        append(path, lines(20..<25))
        // The copy's record names the file it copies, as the first tail knew it.
        let original = try XCTUnwrap(first.chunks.first?.identity)
        var origins: [TailCopyOrigin?] = []
        let second = try session(path, state: state, until: 15, inspect: { chunk, store in origins.append(store.copyOrigin(of: chunk.identity)) })
        XCTAssertEqual(origins.first, TailCopyOrigin(device: original.device, inode: original.inode, truncations: 0))
        XCTAssertEqual(origins.last, .some(nil), "the cut file's own lines are no copy's")
        XCTAssertEqual(second.numberedLines.map(\.number), Array(10..<25), "\(second.notices)")
        XCTAssertFalse(second.notices.contains { if case .lost = $0 { return true } else { return false } }, "\(second.notices)")
        let copyIdentity = try XCTUnwrap(second.chunks.first?.identity)
        XCTAssertTrue(second.notices.contains(.resumed(path: path + ".1", identity: copyIdentity, offset: 10 * 7)),
                      "\(second.notices)")

        append(path, lines(25..<30))
        let third = try session(path, state: state, until: 5)
        XCTAssertEqual(third.numberedLines.map(\.number), Array(25..<30), "\(third.notices)")
        XCTAssertEqual(third.lostBytes, 0)
    }

    /// The same with the file still empty when the tail starts (cut, not written yet): the
    /// copy is read from the position, the file at the path is said to be truncated (not
    /// lost: nothing is), and what its writer appends next follows. The truncation is
    /// counted. It reported the cut file lost from 0 to 70 and never read 10–19.
    func testACopyTruncateWhileStoppedIsReadOnFromTheCopyWhenTheFileIsStillEmpty() throws {
        let path = directory.file("app.log"), state = directory.file("state")
        writeFile(path, lines(0..<10))
        _ = try session(path, state: state, until: 10)

        append(path, lines(10..<20))
        try copyTruncate(path)
        var info = stat()
        XCTAssertEqual(stat(path, &info), 0)
        let second = try session(path, state: state, until: 15) { append(path, self.lines(20..<25)) }
        XCTAssertEqual(second.numberedLines.map(\.number), Array(10..<25), "\(second.notices)")
        XCTAssertEqual(second.lostBytes, 0, "\(second.notices)")
        XCTAssertTrue(second.notices.contains {
            if case .truncated(path, let identity, 70) = $0 { return identity.inode == UInt64(info.st_ino) } else { return false }
        }, "\(second.notices)")
        XCTAssertTrue(second.notices.contains { if case .resumed(path + ".1", _, 70) = $0 { return true } else { return false } },
                      "\(second.notices)")
        let current = try XCTUnwrap(second.chunks.last?.identity)
        XCTAssertEqual(try TailCheckpointStore(directory: state).truncations(for: current), 1)
    }

    /// A copy that is not the copy: a sibling named like the path but starting with other
    /// bytes (another log, an older rotation) is not read, and the cut file's unread rest
    /// is reported lost as before.
    func testASiblingWithOtherFirstBytesIsNotTakenForTheCopy() throws {
        let path = directory.file("app.log"), state = directory.file("state")
        writeFile(path, lines(0..<10))
        _ = try session(path, state: state, until: 10)

        append(path, lines(10..<20))
        writeFile(path + ".1", lines(100..<120))
        XCTAssertEqual(truncate(path, 0), 0)
        let second = try session(path, state: state, until: 5) { append(path, self.lines(20..<25)) }
        XCTAssertEqual(second.numberedLines.map(\.number), Array(20..<25), "\(second.notices)")
        XCTAssertTrue(second.notices.contains {
            if case .lost(path, _, _, .truncatedWhileStopped) = $0 { return true } else { return false }
        }, "\(second.notices)")
    }
}

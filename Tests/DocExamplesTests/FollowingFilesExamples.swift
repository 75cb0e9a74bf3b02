import XCTest

import ReactiveUV

// FollowingFiles.md's example: `File.follow` with a checkpoint store, lines taken out of
// each `TailChunk`, positions acknowledged and saved, and a restart that resumes.

/// FollowingFiles.md, "Lines from chunks, and resuming": prints every line of the files that
/// live at `path`, acknowledges each chunk once its lines are handled, and saves the
/// positions every second. A restart with the same state directory resumes after the last
/// saved position.
func followWithCheckpoints(path: String, stateDirectory: String, print: @escaping (String) -> Void) throws -> Disposable {
    let store = try TailCheckpointStore(directory: stateDirectory)
    let following = File.follow(path, from: .beginning, checkpoints: store, notices: { print("notice: \($0)") })
        .subscribeNext { chunk in
            // One or more whole lines, each ending with "\n", bytes exactly as in the file.
            for line in chunk.bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).dropLast() {
                print(String(decoding: line, as: UTF8.self))
            }
            store.acknowledge(chunk.identity, through: chunk.endOffset)   // handled: resume after it
        }
    let saving = Signal<SchedulerTime>.interval(1, on: Scheduler.main).subscribeNext { _ in try? store.save() }
    return Disposable {
        following.dispose()
        saving.dispose()
        try? store.save()                                             // and once at the end
    }
}

final class FollowingFilesExampleTests: XCTestCase {
    func testLinesComeOutOfChunksInOrderAndARestartResumesAfterTheSavedPosition() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("app.log")
        let state = directory.file("state")
        append(path, "one\n\nthree\n")
        let before = MainLoopHoldings.now

        let first = Printed()
        var running = try followWithCheckpoints(path: path, stateDirectory: state, print: first.print)
        XCTAssertTrue(runMainLoop { first.lines.count >= 3 })
        append(path, "four\n")
        XCTAssertTrue(runMainLoop { first.lines.count >= 4 })
        XCTAssertEqual(first.lines, ["one", "", "three", "four"], "an empty line is a line")
        running.dispose()
        assertMainLoopHandlesClosed(since: before)

        // Written while nothing follows the file: the restart reads only these.
        append(path, "five\nsix\n")
        let second = Printed()
        running = try followWithCheckpoints(path: path, stateDirectory: state, print: second.print)
        XCTAssertTrue(runMainLoop { second.lines.filter { !$0.hasPrefix("notice: ") }.count >= 2 })
        append(path, "seven\n")
        XCTAssertTrue(runMainLoop { second.lines.filter { !$0.hasPrefix("notice: ") }.count >= 3 })
        XCTAssertEqual(second.lines.filter { !$0.hasPrefix("notice: ") }, ["five", "six", "seven"])
        running.dispose()
        assertMainLoopHandlesClosed(since: before)
    }

    func testARotationIsToldAsANoticeAndTheNewFilesLinesFollow() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("app.log")
        append(path, "old 1\n")
        let before = MainLoopHoldings.now
        let printed = Printed()
        let running = try followWithCheckpoints(path: path, stateDirectory: directory.file("state"), print: printed.print)
        XCTAssertTrue(runMainLoop { printed.lines.contains("old 1") })
        XCTAssertEqual(rename(path, directory.file("app.log.1")), 0)
        append(path, "new 1\n")
        XCTAssertTrue(runMainLoop { printed.lines.contains("new 1") })
        let lines = printed.lines.filter { !$0.hasPrefix("notice: ") }
        XCTAssertEqual(lines, ["old 1", "new 1"])
        XCTAssertTrue(printed.lines.contains { $0.hasPrefix("notice: ") && $0.contains("app.log") }, "\(printed.lines)")
        running.dispose()
        assertMainLoopHandlesClosed(since: before)
    }
}

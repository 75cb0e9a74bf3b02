import Foundation
import Glibc
import XCTest

/// Issue 31, section 6, with the real daemon and real files: a quoted FILE pattern
/// (`*`, `**`) follows every file it matches as files appear and go away, each file's
/// lines exactly once, rotated siblings not followed twice, within `--glob-max-files`.
final class LogcastGlobTests: LogcastProcessTestCase {

    /// A client taking every line, once the daemon has answered it (so it is being fed:
    /// lines read from now on reach it).
    func attachedClient(_ p: LogcastProcess) throws -> LineClient {
        let c = try LineClient(port: p.port)
        let reply = c.command("STATS", reply: "STATS").last ?? ""
        XCTAssertTrue(reply.hasPrefix("STATS "), "STATS answered, got '\(reply)'")
        return c
    }

    /// Reads lines into `seen` until it holds `line` (bounded); whether it did.
    @discardableResult
    func read(_ c: LineClient, into seen: inout [String], until line: String, timeout: Double = 60) -> Bool {
        if seen.contains(line) { return true }
        let got = c.readLines(timeout: timeout) { $0.last == line }
        seen += got
        return got.last == line
    }

    /// The numbered lines `prefix-from ... prefix-(to-1)`.
    func numbered(_ prefix: String, _ range: Range<Int>) -> [String] { range.map { "\(prefix)-\($0)" } }

    /// The lines of `seen` that came from `path`, without the `path: ` tag, in order.
    func lines(of path: String, in seen: [String]) -> [String] {
        let tag = path + ": "
        return seen.filter { $0.hasPrefix(tag) }.map { String($0.dropFirst(tag.count)) }
    }

    /// Files created after the start, in the pattern's directory (`*`) and in new
    /// subdirectories at several depths (`**`), are all followed from their first line:
    /// each file's numbered lines arrive exactly once, in order, the ones written before the
    /// file was found and after.
    func testFilesCreatedLaterUnderStarAndDoubleStarAreFollowed() throws {
        mkdir(dir + "/flat", 0o755)
        mkdir(dir + "/tree", 0o755)
        let p = try start([dir + "/flat/*.log", dir + "/tree/**/*.log", "--listen", "127.0.0.1:0"])
        let c = try attachedClient(p)
        let files = [
            dir + "/flat/one.log", dir + "/flat/two.log",
            dir + "/tree/top.log", dir + "/tree/a/mid.log", dir + "/tree/a/b/c/deep.log",
        ]
        XCTAssertEqual(mkdir(dir + "/tree/a", 0o755), 0)
        XCTAssertEqual(mkdir(dir + "/tree/a/b", 0o755), 0)
        XCTAssertEqual(mkdir(dir + "/tree/a/b/c", 0o755), 0)
        // Not matched: another extension, and a hidden directory under `**`.
        XCTAssertEqual(mkdir(dir + "/tree/.hidden", 0o755), 0)
        appendLines(dir + "/flat/one.txt", ["not-matched"])
        appendLines(dir + "/tree/.hidden/x.log", ["not-matched"])
        for (i, file) in files.enumerated() { appendLines(file, numbered("f\(i)", 0..<100)) }
        var seen: [String] = []
        for (i, file) in files.enumerated() {
            XCTAssertTrue(read(c, into: &seen, until: "\(file): f\(i)-99"), "the first lines of \(file) never came")
        }
        // Now followed: what is appended comes too.
        for (i, file) in files.enumerated() { appendLines(file, numbered("f\(i)", 100..<250)) }
        for (i, file) in files.enumerated() {
            XCTAssertTrue(read(c, into: &seen, until: "\(file): f\(i)-249"), "the appended lines of \(file) never came")
        }
        for (i, file) in files.enumerated() {
            XCTAssertEqual(lines(of: file, in: seen), numbered("f\(i)", 0..<250), "\(file): every line once, in order")
        }
        XCTAssertFalse(seen.contains { $0.contains("not-matched") }, "only matching files are followed")
        XCTAssertEqual(seen.count, 5 * 250, "no other line")
        XCTAssertFalse(p.errors.contains("error"), "no error: \(p.errors)")
    }

    /// A followed file that is deleted while lines are still unread is read to its last
    /// line, then its follow ends (said in the log, no error); the other files go on, and a
    /// new file at the same name later is followed from its start.
    func testDeletedFileIsReadToItsEndThenNoLongerFollowed() throws {
        // A queue this client cannot fill: no line dropped for a slow test client.
        let p = try start([dir + "/*.log", "--listen", "127.0.0.1:0", "--queue-limit", "268435456"])
        let c = try attachedClient(p)
        let doomed = dir + "/doomed.log"
        let other = dir + "/other.log"
        appendLines(doomed, numbered("d", 0..<10))
        appendLines(other, numbered("o", 0..<10))
        var seen: [String] = []
        XCTAssertTrue(read(c, into: &seen, until: "\(doomed): d-9"))
        XCTAssertTrue(read(c, into: &seen, until: "\(other): o-9"))
        // Many lines (more than are read in the second until the next scan), then the file
        // goes at once: they are read from the deleted file before its follow ends.
        appendLines(doomed, numbered("d", 10..<100_000))
        XCTAssertEqual(unlink(doomed), 0)
        XCTAssertTrue(read(c, into: &seen, until: "\(doomed): d-99999", timeout: 120), "the deleted file's last line never came")
        XCTAssertTrue(waitForLog(p, "\(doomed) is gone and was read to its end; no longer followed"), p.errors)
        XCTAssertEqual(lines(of: doomed, in: seen), numbered("d", 0..<100_000), "every line of the deleted file once, in order")
        appendLines(other, ["o-10"])
        XCTAssertTrue(read(c, into: &seen, until: "\(other): o-10"), "the other file is still followed")
        // A new file by the same name is a new file: followed from its first line.
        appendLines(doomed, ["again-0", "again-1"])
        XCTAssertTrue(read(c, into: &seen, until: "\(doomed): again-1"))
        XCTAssertEqual(lines(of: doomed, in: seen).suffix(2), ["again-0", "again-1"])
        XCTAssertTrue(p.process.isRunning)
        XCTAssertFalse(p.errors.contains("error"), "no error: \(p.errors)")
    }

    /// Under `*.log*`, logrotate's renames (`app.log.1` → `app.log.2`, `app.log` →
    /// `app.log.1`, a new `app.log`) make new matching paths of files already read: no line
    /// is delivered twice — neither for siblings that appeared after the start nor for
    /// ones that were there at the start (followed from their end until a rotation moved
    /// a file read under `app.log` onto them).
    func testRotationUnderDotLogStarRepeatsNothing() throws {
        let app = dir + "/app.log"
        appendLines(app, ["before-start"])
        appendLines(app + ".1", ["old-rotated"])
        let p = try start([dir + "/*.log*", "--listen", "127.0.0.1:0"])
        let c = try attachedClient(p)
        // Both were there at the start: followed from their ends. Sync until app.log is.
        var seen: [String] = []
        var k = 0
        var synced = false
        while !synced && k < 300 {
            appendLines(app, ["sync-\(k)"])
            synced = read(c, into: &seen, until: "\(app): sync-\(k)", timeout: 0.3)
            k += 1
        }
        XCTAssertTrue(synced, "app.log was never followed")
        _ = c.readLines(timeout: 0.5) { _ in false }
        seen = []
        var written: [String] = []
        for round in 0..<3 {
            let lines = numbered("r\(round)", 0..<200)
            appendLines(app, Array(lines[..<100]))
            // The rotation, then the writer's last lines to the old file (before it reopens).
            _ = rename(app + ".2", app + ".3")
            _ = rename(app + ".1", app + ".2")
            XCTAssertEqual(rename(app, app + ".1"), 0)
            appendLines(app + ".1", Array(lines[100..<150]))
            appendLines(app, Array(lines[150...]))
            written += lines
            XCTAssertTrue(read(c, into: &seen, until: "\(app): r\(round)-199"), "round \(round): the new file's lines never came")
            // The scan saw the renamed file (one more each round) and left it alone: said
            // in the log, after the scan's decisions on every other sibling.
            let said = "\(app).1 holds the file read as \(app) (rotated); not followed again"
            let deadline = Date().addingTimeInterval(60)
            while occurrences(of: said, in: p.errors) < round + 1 && Date() < deadline { usleep(20_000) }
            XCTAssertEqual(occurrences(of: said, in: p.errors), round + 1, p.errors)
        }
        // A marker after those scans: anything repeated would have come before it.
        appendLines(app, ["marker"])
        XCTAssertTrue(read(c, into: &seen, until: "\(app): marker"))
        let numberedSeen = seen.filter { $0.contains(": r") }
        XCTAssertEqual(numberedSeen.count, written.count, "every line once (no sibling read again): \(numberedSeen.count) vs \(written.count)")
        XCTAssertEqual(Set(numberedSeen.map { String($0.split(separator: " ").last!) }).count, written.count)
        XCTAssertEqual(lines(of: app, in: seen).filter { $0.hasPrefix("r") }, written, "all under app.log, in order")
        XCTAssertFalse(seen.contains { $0.contains("old-rotated") || $0.contains("before-start") }, "old content is not read")
        XCTAssertFalse(p.errors.contains("error"), "no error: \(p.errors)")
    }

    /// `--glob-max-files 2` with three matching files: two are followed, the third is named
    /// in a warning and followed (from its start) once a followed file goes away.
    func testMaxFilesLimit() throws {
        let p = try start([dir + "/*.log", "--glob-max-files", "2", "--listen", "127.0.0.1:0"])
        let c = try attachedClient(p)
        let (a, b, third) = (dir + "/a.log", dir + "/b.log", dir + "/c.log")
        appendLines(a, ["a-0"])
        appendLines(b, ["b-0"])
        appendLines(third, ["c-0"])
        var seen: [String] = []
        XCTAssertTrue(read(c, into: &seen, until: "\(a): a-0"))
        XCTAssertTrue(read(c, into: &seen, until: "\(b): b-0"))
        XCTAssertTrue(waitForLog(p, "matches 3 files, more than --glob-max-files 2: 1 not followed (\(third))"), p.errors)
        appendLines(third, ["c-1"])
        appendLines(b, ["b-1"])
        XCTAssertTrue(read(c, into: &seen, until: "\(b): b-1"))
        XCTAssertFalse(seen.contains { $0.hasPrefix(third) }, "the file over the limit is not followed")
        XCTAssertEqual(unlink(a), 0)
        XCTAssertTrue(read(c, into: &seen, until: "\(third): c-1"), "the third file was never followed after a.log went")
        XCTAssertEqual(lines(of: third, in: seen), ["c-0", "c-1"], "from its start, once")
        XCTAssertTrue(p.process.isRunning)
    }

    /// A pattern that matches nothing (its directory does not exist yet) is waited on: said
    /// once, no error; a file that appears later, in directories made later, is followed.
    func testPatternMatchingNothingWaitsForAFile() throws {
        let p = try start([dir + "/later/**/*.log", "--listen", "127.0.0.1:0"])
        XCTAssertTrue(waitForLog(p, "pattern '\(dir)/later/**/*.log' matches no file yet; waiting for files to appear"), p.errors)
        let c = try attachedClient(p)
        XCTAssertEqual(mkdir(dir + "/later", 0o755), 0)
        XCTAssertEqual(mkdir(dir + "/later/x", 0o755), 0)
        let file = dir + "/later/x/first.log"
        appendLines(file, numbered("w", 0..<50))
        var seen: [String] = []
        XCTAssertTrue(read(c, into: &seen, until: "\(file): w-49"))
        XCTAssertEqual(lines(of: file, in: seen), numbered("w", 0..<50))
        XCTAssertTrue(p.process.isRunning)
        XCTAssertFalse(p.errors.contains("error"), "no error: \(p.errors)")
    }

    /// With `--state-dir`, each file a pattern follows keeps its position as a FILE does:
    /// after a restart the first client gets exactly what was written while logcast was
    /// down — to files followed before, and all of a file that appeared meanwhile — and
    /// nothing read before.
    func testStateDirKeepsEachFilesPositionAcrossARestart() throws {
        XCTAssertEqual(mkdir(dir + "/logs", 0o755), 0)
        let (a, b, later) = (dir + "/logs/a.log", dir + "/logs/b.log", dir + "/logs/c.log")
        appendLines(a, ["old-a"])
        let options = [dir + "/logs/*.log", "--listen", "127.0.0.1:0", "--heartbeat", "0", "--state-dir", dir + "/state"]
        let first = try start(options)
        let c1 = try attachedClient(first)
        var seen: [String] = []
        var k = 0
        var synced = false
        while !synced && k < 300 {
            appendLines(a, ["sync-\(k)"])
            synced = read(c1, into: &seen, until: "\(a): sync-\(k)", timeout: 0.3)
            k += 1
        }
        XCTAssertTrue(synced, "a.log was never followed")
        appendLines(b, numbered("b", 0..<100))
        XCTAssertTrue(read(c1, into: &seen, until: "\(b): b-99"))
        first.signal(SIGTERM)
        XCTAssertEqual(first.waitForExit(timeout: 30), 0)

        // While it is down: lines to both files, and a new file.
        appendLines(a, numbered("down-a", 0..<100))
        appendLines(b, numbered("down-b", 0..<100))
        appendLines(later, numbered("down-c", 0..<100))

        let second = try start(options)
        let c2 = try LineClient(port: second.port)
        var again: [String] = []
        let deadline = Date().addingTimeInterval(60)
        let last = ["\(a): down-a-99", "\(b): down-b-99", "\(later): down-c-99"]
        while !last.allSatisfy(again.contains) && Date() < deadline {
            again += c2.readLines(timeout: 1) { _ in false }
        }
        XCTAssertEqual(lines(of: a, in: again), numbered("down-a", 0..<100), "a.log resumed where it was")
        XCTAssertEqual(lines(of: b, in: again), numbered("down-b", 0..<100), "b.log resumed where it was")
        XCTAssertEqual(lines(of: later, in: again), numbered("down-c", 0..<100), "the file made while down, from its start")
        appendLines(later, ["after"])
        XCTAssertTrue(read(c2, into: &again, until: "\(later): after"), "and it follows on")
    }

    /// Patterns that cannot work are refused at start with a message naming them.
    func testBadPatternsAreRefused() throws {
        let cases: [([String], String)] = [
            ([dir + "/**"], "ends with '**'"),
            ([dir + "/*.log/"], "ends with '/'"),
            ([dir + "/*.log", "--glob-max-files", "0"], "--glob-max-files must be in 1...1048576"),
        ]
        for (arguments, message) in cases {
            let p = try LogcastProcess(arguments + ["--listen", "127.0.0.1:0"])
            processes.append(p)
            XCTAssertNotEqual(p.waitForExit(timeout: 30), 0, "\(arguments) exits with an error")
            XCTAssertTrue(p.errors.contains(message), "\(arguments): '\(message)' in \(p.errors)")
        }
        appendLines(dir + "/plain", ["x"])
        let refusedAtRun: [([String], String)] = [
            ([dir + "/plain/*.log"], "pattern '\(dir)/plain/*.log': \(dir)/plain is not a directory"),
            // Nothing listens on port 1: refused before any connection is tried.
            ([dir + "/*.log", "--publish", "nats://127.0.0.1:1"], "FILE patterns ('\(dir)/*.log') are not supported with --publish yet"),
        ]
        for (arguments, message) in refusedAtRun {
            let p = try LogcastProcess(arguments + ["--listen", "127.0.0.1:0", "--state-dir", dir + "/state"])
            processes.append(p)
            XCTAssertEqual(p.waitForExit(timeout: 30), 1, "\(arguments) exits 1")
            XCTAssertTrue(p.errors.contains("logcast: error: " + message), "\(arguments): '\(message)' in \(p.errors)")
        }
    }
}

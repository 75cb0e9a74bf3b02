import Foundation
import Glibc
import XCTest

/// logcast's systemd journal source (issue 31, section 4), end to end: real journal files
/// written by systemd-journal-remote (JournalRemote.swift) while the real logcast binary
/// follows their directory (`--journal-directory`, as `journalctl -D`), and a real TCP
/// client. Every entry carries a sequence number, so order, loss and repetition are seen.
final class LogcastJournalTests: LogcastProcessTestCase {
    var writers: [JournalRemote] = []

    override func setUp() {
        super.setUp()
        mkdir(journalDirectory, 0o755)
    }

    override func tearDown() {
        super.tearDown()  // logcast first: it reads what the writers write
        for w in writers { w.stop() }
        writers = []
    }

    var journalDirectory: String { dir + "/journal" }

    /// A writer appending to `journal/NAME.journal`, stopped in `tearDown`.
    func writer(_ name: String = "remote") throws -> JournalRemote {
        let w = try JournalRemote(directory: journalDirectory, name: name)
        writers.append(w)
        return w
    }

    /// Starts logcast on the journal directory and waits until it follows it.
    func follow(_ extra: [String] = []) throws -> LogcastProcess {
        let p = try start(["--journal-directory", journalDirectory, "--listen", "127.0.0.1:0", "--heartbeat", "0"] + extra)
        XCTAssertTrue(waitForLog(p, "journal: following"), "the journal is followed: \(p.errors)")
        return p
    }

    /// A client whose session is set up (its STATS answered): it gets every line from now on.
    func client(_ p: LogcastProcess) throws -> LineClient {
        let c = try LineClient(port: p.port)
        XCTAssertFalse(c.command("STATS", reply: "STATS").isEmpty, "the client is served")
        return c
    }

    /// Reads until a line holds `marker`; the journal's lines read (`journal: ` records and
    /// their continuation lines), the marker's included.
    func journalLines(_ c: LineClient, until marker: String, timeout: Double = 120) -> [String] {
        let lines = c.readLines(timeout: timeout) { $0.last?.contains(marker) ?? false }
        XCTAssertTrue(lines.last?.contains(marker) ?? false, "'\(marker)' arrived; got \(lines.suffix(5))")
        return lines.filter { $0.hasPrefix("journal: ") || $0.hasPrefix("\t") }
    }

    /// Waits (bounded) until the writer wrote the entry holding `marker` into its file
    /// (where an entry must be in the journal before logcast starts or restarts).
    func waitUntilWritten(_ w: JournalRemote, marker: String) {
        // systemd-journal-remote appends an entry once its blank line is read; the file's
        // bytes then hold the MESSAGE (uncompressed: --compress=no).
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if fileContains(w.file, marker) { return }
            usleep(20_000)
        }
        XCTFail("systemd-journal-remote did not write '\(marker)' into \(w.file)")
    }

    /// Whether the file at `path` holds `marker`'s bytes, read with read(2) (not
    /// FileManager's `contents(atPath:)`: on Linux it leaks its buffer for an empty file,
    /// which LeakSanitizer reports, and a journal file is empty for a moment when made).
    func fileContains(_ path: String, _ marker: String) -> Bool {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            bytes += chunk[0..<n]
        }
        return Data(bytes).range(of: Data(marker.utf8)) != nil
    }

    /// The `STATS` fields.
    func stats(_ c: LineClient) -> [String: String] {
        let reply = c.command("STATS", reply: "STATS").last ?? ""
        var fields: [String: String] = [:]
        for part in reply.split(separator: " ").dropFirst() {
            let kv = part.split(separator: "=", maxSplits: 1)
            if kv.count == 2 { fields[String(kv[0])] = String(kv[1]) }
        }
        return fields
    }

    func testTheCopiedJournalPrototypesAreLibsystemdsOwn() throws {
        let header = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../CSystemd/CSystemd.h").standardized.path
        guard access("/usr/include/systemd/sd-journal.h", R_OK) == 0 else {
            throw XCTSkip("libsystemd-dev is not installed (scripts/ensure-deps.sh installs it)")
        }
        let source = dir + "/check.c"
        try """
            #include <systemd/sd-journal.h>
            #include "\(header)"
            _Static_assert(LOGCAST_SD_JOURNAL_LOCAL_ONLY == SD_JOURNAL_LOCAL_ONLY, "LOCAL_ONLY");
            _Static_assert(LOGCAST_SD_JOURNAL_NOP == SD_JOURNAL_NOP, "NOP");
            _Static_assert(LOGCAST_SD_JOURNAL_APPEND == SD_JOURNAL_APPEND, "APPEND");
            _Static_assert(LOGCAST_SD_JOURNAL_INVALIDATE == SD_JOURNAL_INVALIDATE, "INVALIDATE");
            int main(void) { sd_journal *j = 0; return sd_journal_open(&j, LOGCAST_SD_JOURNAL_LOCAL_ONLY); }

            """.write(toFile: source, atomically: true, encoding: .utf8)
        let compiler = access("/usr/bin/cc", X_OK) == 0 ? "/usr/bin/cc" : "/usr/bin/clang"
        let result = try runToExitWithShell("\(compiler) -fsyntax-only -Wall -Werror \(source)")
        XCTAssertEqual(result.status, 0, "CSystemd.h and sd-journal.h disagree: \(result.output)")
    }

    /// `/bin/sh -c command` to its end: its status and output (bounded).
    func runToExitWithShell(_ command: String) throws -> (status: Int32, output: String) {
        let out = dir + "/sh.out"
        var pid: pid_t = 0
        let argv: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/sh"), strdup("-c"), strdup("\(command) > \(out) 2>&1"), nil]
        defer { argv.forEach { free($0) } }
        XCTAssertEqual(posix_spawn(&pid, "/bin/sh", nil, nil, argv, environ), 0)
        var status: Int32 = 0
        XCTAssertEqual(waitpid(pid, &status, 0), pid)
        return (status, readFileText(out))
    }

    func testEntriesAppendedInBurstsArriveInOrderExactlyOnceAndOldOnesAreNotServed() throws {
        let w = try writer()
        w.append([w.entry("old entry")])
        waitUntilWritten(w, marker: "old entry")
        let p = try follow()
        let c = try client(p)
        // Five bursts, each written at once; the next only after the last one arrived, so
        // the follower meets appends both in one wake-up and across several.
        var expected: [String] = []
        var seen: [String] = []
        for burst in 0..<5 {
            let range = (burst * 300)..<((burst + 1) * 300)
            w.append(range.map { w.entry("seq \($0)") })
            expected += range.map { "journal: a.service: seq \($0)" }
            seen += journalLines(c, until: "seq \(range.upperBound - 1)")
        }
        XCTAssertEqual(seen, expected, "every entry once, in order, and not the old one")
        let fields = stats(c)
        XCTAssertEqual(fields["journal_entries"], "1500")
        XCTAssertEqual(fields["journal_lost"], "0")
        XCTAssertEqual(fields["journal_cursor_resets"], "0")
        // SIGTERM: the journal is closed with the rest (under the sanitizer lanes, nothing leaks).
        p.signal(SIGTERM)
        XCTAssertEqual(p.waitForExit(timeout: 60), 0, p.errors)
    }

    /// journald's life: a second file appears in the directory (another writer), the active
    /// file is rotated (closed, renamed to an archive name, a new one made at its path), and
    /// then both files are appended to in turn. sd_journal_process reports the directory's
    /// changes (SD_JOURNAL_INVALIDATE); every entry arrives once, each writer's in order.
    ///
    /// Each burst is in its file before the next one is stamped, as journald writes: one
    /// entry after the other, in time order. sd_journal merges the files by time and reads
    /// on from the last entry read, so an entry that becomes visible after a newer one of
    /// another file was read is passed over (journalctl --follow shares the rule; the guide
    /// says so). Two independent writers stamping and writing at once can do that; this
    /// test's first version did, and lost a burst one run in fifteen.
    func testANewFileAndARotationInTheDirectoryAreFollowed() throws {
        let a = try writer("system")
        a.append([a.entry("old entry")])
        waitUntilWritten(a, marker: "old entry")
        let p = try follow()
        let c = try client(p)
        a.append((0..<100).map { a.entry("a \($0)") })
        var lines = journalLines(c, until: "a 99")
        let b = try writer("user-1000")
        b.append((0..<100).map { b.entry("b \($0)", unit: "b.service") })
        lines += journalLines(c, until: "b 99")
        // Rotation: the writer ends its file, which is renamed as journald archives it.
        a.stop()
        XCTAssertEqual(rename(a.file, journalDirectory + "/system@00000000000000000000000000000001-0000000000000001-0000000000000001.journal"), 0)
        let a2 = try writer("system")
        a2.append((100..<200).map { a2.entry("a \($0)") })
        lines += journalLines(c, until: "a 199")
        // Both files known: appended to in turn, in bursts.
        for burst in 0..<4 {
            a2.append((0..<50).map { a2.entry("a \(200 + burst * 50 + $0)") })
            waitUntilWritten(a2, marker: "a \(200 + burst * 50 + 49)")
            b.append((0..<50).map { b.entry("b \(100 + burst * 50 + $0)", unit: "b.service") })
            waitUntilWritten(b, marker: "b \(100 + burst * 50 + 49)")
        }
        lines += c.readLines(timeout: 120) { got in
            got.contains("journal: a.service: a 399") && got.contains("journal: b.service: b 299")
        }.filter { $0.hasPrefix("journal: ") }
        for (name, count) in [("a", 400), ("b", 300)] {
            let got = lines.filter { $0.hasPrefix("journal: \(name).service: \(name) ") }
            let expected = (0..<count).map { "journal: \(name).service: \(name) \($0)" }
            XCTAssertEqual(got, expected, "\(name): missing \(Set(expected).subtracting(got).map { $0.split(separator: " ").last! }.sorted { Int($0)! < Int($1)! })")
        }
        XCTAssertEqual(lines.count, 700, "nothing else, the old entry neither: \(lines.filter { !$0.contains(": a ") && !$0.contains(": b ") })")
        XCTAssertEqual(stats(c)["journal_entries"], "700")
    }

    /// With `--access-file`, the journal's source is `journal`: an identity reads its lines
    /// only when one of its globs matches that.
    func testTheAccessFileDecidesWhoReadsTheJournal() throws {
        let w = try writer()
        let app = dir + "/app.log"
        appendLines(app, ["start"])
        let access = dir + "/access"
        try "anonymous: \(app)\n".write(toFile: access, atomically: true, encoding: .utf8)
        let denied = try follow([app, "--access-file", access])
        let allowedAccess = dir + "/access-journal"
        try "anonymous: journal, \(app)\n".write(toFile: allowedAccess, atomically: true, encoding: .utf8)
        let allowed = try follow([app, "--access-file", allowedAccess])
        let deniedClient = try client(denied)
        let allowedClient = try client(allowed)
        w.append([w.entry("secret")])
        XCTAssertEqual(journalLines(allowedClient, until: "secret"), ["journal: a.service: secret"])
        // The marker after it: a line of the file both may read.
        appendLines(app, ["marker"])
        let seen = deniedClient.readLines { $0.last?.hasSuffix("marker") ?? false }
        XCTAssertEqual(seen.last, "\(app): marker")
        XCTAssertFalse(seen.contains { $0.contains("secret") }, "\(seen)")
    }

    func testMatchesAreJournalctls() throws {
        let w = try writer()
        // One logcast per match set, all on the same journal.
        let sets: [(args: [String], keeps: (String, Int) -> Bool)] = [
            (["_SYSTEMD_UNIT=a.service"], { unit, _ in unit == "a.service" }),
            (["_SYSTEMD_UNIT=a.service", "_SYSTEMD_UNIT=b.service"], { unit, _ in unit != "c.service" }),
            (["PRIORITY=3", "_SYSTEMD_UNIT=a.service"], { unit, priority in unit == "a.service" && priority == 3 }),
            (["_SYSTEMD_UNIT=c.service", "+", "PRIORITY=3", "_SYSTEMD_UNIT=b.service"],
             { unit, priority in unit == "c.service" || (unit == "b.service" && priority == 3) }),
        ]
        var followers: [(LineClient, (String, Int) -> Bool)] = []
        for set in sets {
            let p = try follow(set.args)
            followers.append((try client(p), set.keeps))
        }
        var entries: [[UInt8]] = []
        var all: [(unit: String, priority: Int, text: String)] = []
        for i in 0..<90 {
            let unit = ["a.service", "b.service", "c.service"][i % 3]
            let priority = (i / 3) % 2 == 0 ? 3 : 6
            entries.append(w.entry("seq \(i)", unit: unit, priority: priority))
            all.append((unit, priority, "journal: \(unit): seq \(i)"))
        }
        w.append(entries)
        // The marker every set keeps: c at priority 3 is in the OR sets; a and b at 3 in the others.
        w.append([w.entry("end a", unit: "a.service", priority: 3), w.entry("end b", unit: "b.service", priority: 3),
                  w.entry("end c", unit: "c.service", priority: 3)])
        let markers = ["end a", "end b", "end a", "end c"]
        for (i, (c, keeps)) in followers.enumerated() {
            let got = journalLines(c, until: markers[i]).filter { $0.contains(": seq ") }
            XCTAssertEqual(got, all.filter { keeps($0.unit, $0.priority) }.map(\.text), "match set \(sets[i].args)")
        }
    }

    func testLineShapeFallbacksAndMessagesThatAreBinaryMultiLineOrTooLong() throws {
        let w = try writer()
        let p = try follow(["--http", "127.0.0.1:0"])
        let c = try client(p)
        let big = [UInt8](repeating: UInt8(ascii: "x"), count: (1 << 20) + 10)
        w.append([
            w.entry(Array("by unit".utf8), [("_SYSTEMD_UNIT", "a.service"), ("SYSLOG_IDENTIFIER", "ident"), ("_COMM", "comm")]),
            w.entry(Array("by identifier".utf8), [("SYSLOG_IDENTIFIER", "ident"), ("_COMM", "comm")]),
            w.entry(Array("by command".utf8), [("_COMM", "comm")]),
            w.entry(Array("by nothing".utf8), [("PRIORITY", "6")]),
            w.entry(Array("first\nsecond\n\nfourth\n\n".utf8), [("_SYSTEMD_UNIT", "a.service")]),
            w.entry([0, 0xFF, UInt8(ascii: "b"), 10, 0x1B, UInt8(ascii: "c"), 13], [("_SYSTEMD_UNIT", "bin.service")]),
            w.entry(big, [("_SYSTEMD_UNIT", "big.service")]),
            w.entry("after the big one"),
        ])
        let lines = journalLines(c, until: "after the big one")
        XCTAssertEqual(lines, [
            "journal: a.service: by unit",
            "journal: ident: by identifier",
            "journal: comm: by command",
            "journal: journal: by nothing",
            "journal: a.service: first", "\tsecond", "\t", "\tfourth",
            "journal: bin.service: \u{0}\u{FFFD}b", "\t\u{1B}c\r",
            "journal: a.service: after the big one",
        ])
        XCTAssertTrue(waitForLog(p, "over the 1048576-byte limit: left out"), "the lost entry is logged: \(p.errors)")
        let fields = stats(c)
        XCTAssertEqual(fields["journal_entries"], "8")
        XCTAssertEqual(fields["journal_lost"], "1")
        let metrics = try scrapeMetrics(try p.httpPort())
        XCTAssertEqual(metrics["logcast_journal_entries_total"], 8)
        XCTAssertEqual(metrics["logcast_journal_lost_entries_total"], 1)
        XCTAssertEqual(metrics["logcast_journal_cursor_resets_total"], 0)
        XCTAssertTrue(p.process.isRunning)
    }

    func testAfterSIGKILLARestartWithTheSameStateDirResumesAfterTheLastEntryServed() throws {
        let state = dir + "/state"
        let w = try writer()
        w.append([w.entry("before logcast")])
        waitUntilWritten(w, marker: "before logcast")
        let first = try start(["--journal-directory", journalDirectory, "--listen", "127.0.0.1:0", "--heartbeat", "0", "--state-dir", state])
        // With --state-dir the journal starts with the first client, as FILEs do.
        let c1 = try client(first)
        XCTAssertTrue(waitForLog(first, "journal: following journal files in \(journalDirectory) from its end"), first.errors)
        w.append((0..<200).map { w.entry("seq \($0)") })
        XCTAssertEqual(journalLines(c1, until: "seq 199"), (0..<200).map { "journal: a.service: seq \($0)" })
        first.signal(SIGKILL)
        XCTAssertNotNil(first.waitForExit(timeout: 30))

        // More than one turn's worth (JournalSource.entriesPerTurn), read as a backlog.
        w.append((200..<5200).map { w.entry("seq \($0)") })
        waitUntilWritten(w, marker: "seq 5199")
        let second = try start(["--journal-directory", journalDirectory, "--listen", "127.0.0.1:0", "--heartbeat", "0", "--state-dir", state])
        // Not client(): its STATS reply would come after the entries written while logcast
        // was down (served as this first client is admitted), and reading up to it drops them.
        let c2 = try LineClient(port: second.port)
        XCTAssertTrue(waitForLog(second, "journal: following journal files in \(journalDirectory) after the cursor saved in"), second.errors)
        w.append((5200..<5300).map { w.entry("seq \($0)") })
        XCTAssertEqual(journalLines(c2, until: "seq 5299"), (200..<5300).map { "journal: a.service: seq \($0)" },
                       "0 lost, 0 repeated across the kill")
        XCTAssertEqual(stats(c2)["journal_cursor_resets"], "0")
        XCTAssertFalse(second.errors.contains("warning"), second.errors)
    }

    func testACorruptOrStaleCursorIsWarnedAboutAndTheJournalStartsAtItsEnd() throws {
        let state = dir + "/state"
        mkdir(state, 0o700)
        let w = try writer()
        w.append([w.entry("before logcast")])
        waitUntilWritten(w, marker: "before logcast")
        let cursors: [(bytes: [UInt8], warning: String)] = [
            ([0x1B] + Array("[31mnot a cursor\n".utf8) + [0xFF, 0], "is not a journal cursor"),
            (Array("s=nothex;i=zz\n".utf8), "holds no cursor libsystemd accepts"),
            // Well formed, of a journal that is not this one.
            (Array("s=00000000000000000000000000000001;i=1;b=\(JournalRemote.bootID);m=1;t=1;x=1\n".utf8), "is not in journal files in"),
        ]
        for (round, cursor) in cursors.enumerated() {
            XCTAssertTrue(FileManager.default.createFile(atPath: state + "/journal-cursor", contents: Data(cursor.bytes)))
            let p = try start(["--journal-directory", journalDirectory, "--listen", "127.0.0.1:0", "--heartbeat", "0", "--state-dir", state])
            let c = try client(p)
            XCTAssertTrue(waitForLog(p, cursor.warning), "warned: \(p.errors)")
            XCTAssertTrue(waitForLog(p, "starting at the end of journal files in"), p.errors)
            XCTAssertFalse(p.errors.contains("\u{1B}"), "the file's bytes are not written raw to the log")
            w.append([w.entry("round \(round)")])
            XCTAssertEqual(journalLines(c, until: "round \(round)"), ["journal: a.service: round \(round)"],
                           "nothing before the end is served; what comes is")
            XCTAssertEqual(stats(c)["journal_cursor_resets"], "1")
            p.stop()
        }
    }

    /// Journal lines are lines like a file's: a client's GREP sees `UNIT: MESSAGE` (a
    /// multi-line MESSAGE matched on a continuation line comes whole), and `--alert` posts
    /// them with `journal` as their file.
    func testGrepAndAlertsSeeJournalLines() throws {
        let receiver = try AlertReceiver(dir: dir)
        defer { receiver.stop() }
        let w = try writer()
        let p = try follow(["--alert", "oom=Out of memory,\(receiver.url)"])
        let c = try client(p)
        XCTAssertEqual(c.command("GREP timed out|^nginx", reply: "OK GREP").last, "OK GREP timed out|^nginx")
        w.append([
            w.entry(Array("Out of memory: Killed process 812 (java)".utf8), [("SYSLOG_IDENTIFIER", "kernel"), ("PRIORITY", "2")]),
            w.entry("upstream timed out", unit: "nginx.service"),
            w.entry("all good", unit: "app.service"),
            w.entry("Traceback (most recent call last):\n  File \"x.py\", line 1\nTimeoutError: timed out", unit: "app.service"),
            w.entry("done", unit: "nginx.service"),
        ])
        XCTAssertEqual(journalLines(c, until: "nginx.service: done"), [
            "journal: nginx.service: upstream timed out",
            "journal: app.service: Traceback (most recent call last):", "\t  File \"x.py\", line 1", "\tTimeoutError: timed out",
            "journal: nginx.service: done",
        ])
        XCTAssertTrue(receiver.wait { !$0.takenEvents.isEmpty }, "the alert was posted: \(p.errors)")
        XCTAssertEqual(receiver.takenEvents.map { $0["file"] ?? "" }, ["journal"])
        XCTAssertEqual(receiver.takenEvents.map { $0["line"] ?? "" }, ["kernel: Out of memory: Killed process 812 (java)"])
    }

    /// `--journal` alone reads the machine's own journal (none may be running here: an
    /// empty one is followed from its start); with no FILE, no demo log is started.
    func testTheSystemJournalIsOpenedWithoutAFileAndWithoutADemoLog() throws {
        let p = try start(["--journal", "--listen", "127.0.0.1:0", "--heartbeat", "0"])
        XCTAssertTrue(waitForLog(p, "journal: following the system journal"), p.errors)
        XCTAssertFalse(p.output.contains("demo log"), p.output)
        let c = try client(p)
        XCTAssertNotNil(stats(c)["journal_entries"])
        p.signal(SIGTERM)
        XCTAssertEqual(p.waitForExit(timeout: 60), 0, p.errors)
    }

    func testBadUsesAreClearErrorsAtStart() throws {
        let missing = try runToExit(["--journal-directory", dir + "/nowhere", "--listen", "127.0.0.1:0"])
        XCTAssertEqual(missing.status, 1)
        XCTAssertTrue(missing.err.contains("--journal-directory \(dir)/nowhere: cannot open journal files in"), missing.err)
        let plus = try runToExit(["--journal", "+", "PRIORITY=3", "--listen", "127.0.0.1:0"])
        XCTAssertNotEqual(plus.status, 0)
        XCTAssertTrue(plus.err.contains("'+' must stand between two matches"), plus.err)
    }
}

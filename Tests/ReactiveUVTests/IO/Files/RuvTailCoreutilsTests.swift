import CSystemShims
import Glibc
import XCTest

@testable import ReactiveUV

/// GNU coreutils' own `tail -F` tests (`tests/tail/*.sh`), ported from their described
/// behaviour (not their scripts) and run against the real `ruv-tail` binary, with GNU
/// `tail -F` run through the same scenario as a reference where the two print the same
/// (standard output; the notices on standard error are worded differently and are checked
/// for `ruv-tail` only). Inotify and polling modes (`--poll`; GNU's `---disable-inotify`)
/// where coreutils runs both. Real processes started and stopped by pid, real files in a
/// fresh directory, every wait bounded and ended by a positive marker.
///
/// Not ported: `append-only` (needs `chattr +a`, which tmpfs and overlay file systems
/// refuse), `inotify-race` (needs gdb to stop tail between its read and its watch; the
/// writes-right-after-start case below covers what it guards), multi-file and header
/// cases (`ruv-tail` follows one file), `--pid` and `-c` (not offered).
final class RuvTailCoreutilsTests: XCTestCase {
    var directory: TemporaryDirectory!

    override func setUpWithError() throws {
        directory = try TemporaryDirectory()
        // Readable by `nobody` (the permission cases run the tools as nobody).
        XCTAssertEqual(chmod(directory.path, 0o777), 0)
    }

    override func tearDown() { directory.remove() }

    // MARK: - Tools and processes

    /// A `tail -F` under test: `ruv-tail`, or GNU `tail` as the reference.
    struct Tool: CustomStringConvertible {
        let command: String
        let isGNU: Bool
        var description: String { isGNU ? "GNU tail" : "ruv-tail" }
    }

    static var ruvTail: String? { FileTailResumeTests.ruvTail }

    /// `ruv-tail` (and GNU tail when `gnu`), in inotify or polling mode.
    func tools(poll: Bool, gnu: Bool = true) throws -> [Tool] {
        guard let ruvTail = Self.ruvTail else { throw XCTSkip("ruv-tail is not built next to the tests") }
        var result = [Tool(command: "'\(ruvTail)' -F" + (poll ? " --poll" : ""), isGNU: false)]
        if gnu && access("/usr/bin/tail", X_OK) == 0 {
            result.append(Tool(command: "/usr/bin/tail -F -s.1 --max-unchanged-stats=1" + (poll ? " ---disable-inotify" : ""), isGNU: true))
        }
        return result
    }

    /// A program started with `/bin/sh -c` in a process group of its own (so the whole
    /// pipeline can be stopped), with its output in files.
    final class Program {
        let pid: pid_t
        let out: String
        let err: String
        private var status: Int32?

        init(_ command: String, out: String, err: String) {
            self.out = out
            self.err = err
            var attributes = posix_spawnattr_t()
            posix_spawnattr_init(&attributes)
            posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))
            posix_spawnattr_setpgroup(&attributes, 0)
            defer { posix_spawnattr_destroy(&attributes) }
            var pid: pid_t = 0
            let words = ["/bin/sh", "-c", command]
            var argv: [UnsafeMutablePointer<CChar>?] = words.map { strdup($0) }
            argv.append(nil)
            defer { argv.forEach { free($0) } }
            let rc = posix_spawn(&pid, "/bin/sh", nil, &attributes, argv, environ)
            precondition(rc == 0, "posix_spawn: \(rc)")
            self.pid = pid
        }

        /// The exit status (`waitpid`'s), once it has exited within `seconds`.
        func waitExit(_ seconds: Double = 30) -> Int32? {
            if let status { return status }
            let deadline = csys_monotonic_ns() + UInt64(seconds * 1e9)
            repeat {
                var raw: Int32 = 0
                if waitpid(pid, &raw, WNOHANG) == pid {
                    status = raw
                    return raw
                }
                usleep(10_000)
            } while csys_monotonic_ns() < deadline
            return nil
        }

        /// Stops the whole group (SIGTERM, then SIGKILL) and reaps the shell.
        func stop() {
            if status != nil { return }
            kill(-pid, SIGTERM)
            if waitExit(10) == nil {
                kill(-pid, SIGKILL)
                _ = waitExit(10)
            }
        }

        deinit { stop() }
    }

    func contents(_ path: String) -> String {
        guard let file = fopen(path, "r") else { return "" }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = fread(&buffer, 1, buffer.count, file)
            if n <= 0 { break }
            bytes += buffer[0..<n]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Waits (bounded) until `condition` holds, checking every 10 ms.
    func waitFor(_ seconds: Double = 30, _ condition: () -> Bool) -> Bool {
        let deadline = csys_monotonic_ns() + UInt64(seconds * 1e9)
        while csys_monotonic_ns() < deadline {
            if condition() { return true }
            usleep(10_000)
        }
        return condition()
    }

    var caseNumber = 0

    /// Starts `tool` on `arguments` (shell words), standard output and error to files.
    func start(_ tool: Tool, _ arguments: String, prefix: String = "") -> Program {
        caseNumber += 1
        let out = directory.file("out\(caseNumber)")
        let err = directory.file("err\(caseNumber)")
        return Program("exec \(prefix)\(tool.command) \(arguments) > '\(out)' 2> '\(err)'", out: out, err: err)
    }

    func f(_ name: String) -> String { directory.file(name) }

    func printed(_ program: Program, _ expected: String, _ tool: Tool, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertTrue(waitFor { self.contents(program.out) == expected },
                      "\(tool): printed \(contents(program.out).debugDescription), wanted \(expected.debugDescription); stderr: \(contents(program.err))",
                      file: file, line: line)
    }

    func said(_ program: Program, _ text: String, _ tool: Tool, file: StaticString = #filePath, line: UInt = #line) {
        if tool.isGNU { return }
        XCTAssertTrue(waitFor { self.contents(program.err).contains(text) },
                      "\(tool): stderr \(contents(program.err).debugDescription) lacks \(text.debugDescription)", file: file, line: line)
    }

    // MARK: - F-vs-missing, retry, wait

    /// F-vs-missing: a file in a directory that does not exist yet is waited for, and
    /// followed once both appear.
    func testFollowsAFileWhoseDirectoryAppearsLater() throws {
        for poll in [false, true] {
            for tool in try tools(poll: poll) {
                let dir = f("missing-\(caseNumber)")
                let program = start(tool, "'\(dir)/file'")
                said(program, "is missing", tool)
                if tool.isGNU { XCTAssertTrue(waitFor { self.contents(program.err).contains("cannot open") }) }
                XCTAssertEqual(mkdir(dir, 0o755), 0)
                writeFile(dir + "/file", "x\n")
                printed(program, "x\n", tool)
                said(program, "has appeared", tool)
                program.stop()
            }
        }
    }

    /// retry/wait: a directory at the name is said and waited on; a file put there instead
    /// is followed (GNU: "cannot follow", retried).
    func testADirectoryAtTheNameIsWaitedOn() throws {
        for poll in [false, true] {
            for tool in try tools(poll: poll) {
                let name = f("dir-\(caseNumber)")
                XCTAssertEqual(mkdir(name, 0o755), 0)
                let program = start(tool, "'\(name)'")
                said(program, "is a directory", tool)
                if tool.isGNU { XCTAssertTrue(waitFor { !self.contents(program.err).isEmpty }) }
                XCTAssertNil(program.waitExit(0.3), "\(tool) exited at a directory")
                XCTAssertEqual(rmdir(name), 0)
                writeFile(name, "X\n")
                printed(program, "X\n", tool)
                program.stop()
            }
        }
    }

    /// wait/retry with permissions: a file its reader may not read is said and waited on,
    /// and read once it is made readable (the tools run as `nobody` when we are root).
    func testAnUnreadableFileIsReadOnceReadable() throws {
        let prefix = getuid() == 0 ? "/usr/bin/setpriv --reuid=65534 --regid=65534 --clear-groups " : ""
        if getuid() == 0 && access("/usr/bin/setpriv", X_OK) != 0 { throw XCTSkip("setpriv is needed to drop root") }
        if getuid() == 0, let ruvTail = Self.ruvTail {
            // A checkout under a directory nobody may enter (/root) cannot run ruv-tail as nobody.
            let probe = Program("exec \(prefix)/usr/bin/test -x '\(ruvTail)'", out: "/dev/null", err: "/dev/null")
            guard let status = probe.waitExit(30), status == 0 else {
                throw XCTSkip("nobody cannot run \(ruvTail) (a directory on its path is closed to other users)")
            }
        }
        for tool in try tools(poll: false) {
            let name = f("secret-\(caseNumber)")
            writeFile(name, "one\ntwo\n")
            XCTAssertEqual(chmod(name, 0), 0)
            let program = start(tool, "-n +1 '\(name)'", prefix: prefix)
            said(program, "cannot be read (EACCES", tool)
            if tool.isGNU { XCTAssertTrue(waitFor { self.contents(program.err).contains("Permission denied") }) }
            XCTAssertNil(program.waitExit(0.3), "\(tool) exited at an unreadable file")
            XCTAssertEqual(chmod(name, 0o644), 0)
            printed(program, "one\ntwo\n", tool)
            program.stop()
        }
    }

    // MARK: - F-vs-rename, inotify-rotate

    /// F-vs-rename, one name: the file renamed away is said (missing), a new file at the
    /// name is followed from its start, and appends to it are printed.
    func testARenamedAwayFileThenANewOneAtTheName() throws {
        for poll in [false, true] {
            for tool in try tools(poll: poll) {
                let a = f("a-\(caseNumber)")
                writeFile(a, "")
                let program = start(tool, "'\(a)'")
                // Written right after the start (what inotify-race guards: no line lost
                // between the first read and the watch).
                append(a, "x\n")
                printed(program, "x\n", tool)
                XCTAssertEqual(rename(a, a + ".b"), 0)
                said(program, "is missing", tool)
                writeFile(a, "x2\n")
                printed(program, "x\nx2\n", tool)
                append(a, "z\n")
                printed(program, "x\nx2\nz\n", tool)
                program.stop()
            }
        }
    }

    /// inotify-rotate: many times over, an empty file is moved over the followed one; the
    /// line appended to the new file is printed each time.
    func testRotationByMovingAnotherFileOverTheName() throws {
        for tool in try tools(poll: false) {
            let k = f("k-\(caseNumber)")
            writeFile(k, "")
            let program = start(tool, "'\(k)'")
            var expected = ""
            for i in 0..<(tool.isGNU ? 5 : 20) {
                append(k, "tailed \(i)\n")
                expected += "tailed \(i)\n"
                printed(program, expected, tool)
                writeFile(k + ".x", "")
                XCTAssertEqual(rename(k + ".x", k), 0)
                append(k, "ok \(i)\n")
                expected += "ok \(i)\n"
                printed(program, expected, tool)
            }
            program.stop()
        }
    }

    // MARK: - symlink, follow-symlink

    /// symlink: a link to a missing target is waited on; the target appearing is followed.
    /// A link retargeted to a missing file, then that file appearing: followed too.
    func testSymbolicLinks() throws {
        for tool in try tools(poll: false) {
            let n = caseNumber
            let link = f("link-\(n)")
            XCTAssertEqual(symlink(f("target-\(n)"), link), 0)
            let program = start(tool, "'\(link)'")
            said(program, "is missing", tool)
            writeFile(f("target-\(n)"), "X\n")
            printed(program, "X\n", tool)
            program.stop()

            let link2 = f("link2-\(n)")
            writeFile(f("target1-\(n)"), "X1\n")
            XCTAssertEqual(symlink(f("target1-\(n)"), link2), 0)
            let second = start(tool, "'\(link2)'")
            printed(second, "X1\n", tool)
            // `ln -nsf`: a new link renamed over the old one.
            XCTAssertEqual(symlink(f("target2-\(n)"), link2 + ".new"), 0)
            XCTAssertEqual(rename(link2 + ".new", link2), 0)
            said(second, "is missing", tool)
            writeFile(f("target2-\(n)"), "X2\n")
            printed(second, "X1\nX2\n", tool)
            second.stop()
        }
    }

    /// follow-symlink: appends to the file a link names are printed, nothing on stderr.
    func testAppendsThroughALink() throws {
        for poll in [false, true] {
            for tool in try tools(poll: poll) {
                let file = f("file-\(caseNumber)")
                writeFile(file, "")
                XCTAssertEqual(symlink(file, file + ".link"), 0)
                let program = start(tool, "'\(file).link'")
                var expected = ""
                for c in ["a", "b", "c"] {
                    append(file, c + "\n")
                    expected += c + "\n"
                    printed(program, expected, tool)
                }
                program.stop()
                if !poll { XCTAssertEqual(contents(program.err), "", "\(tool)") }
            }
        }
    }

    // MARK: - tail-n0f, truncate, -n +K

    /// tail-n0f: `-n 0` prints nothing of an empty or a non-empty file and sleeps (no busy
    /// loop: the process is seen sleeping), then prints what is appended.
    func testNothingAtFirstWithNZeroAndTheProcessSleeps() throws {
        for poll in [false, true] {
            for tool in try tools(poll: poll) {
                for initial in ["", "anything\n"] {
                    let file = f("n0-\(caseNumber)")
                    writeFile(file, initial)
                    let program = start(tool, "-n 0 '\(file)'")
                    // Sleeping in most samples: a busy loop would be running in all.
                    XCTAssertTrue(waitFor { self.processState(program.pid) == "S" }, "\(tool) never slept")
                    var sleeping = 0
                    for _ in 0..<20 {
                        if processState(program.pid) == "S" { sleeping += 1 }
                        usleep(20_000)
                    }
                    XCTAssertGreaterThanOrEqual(sleeping, 15, "\(tool): sleeping in \(sleeping) of 20 samples")
                    append(file, "new\n")
                    printed(program, "new\n", tool)
                    program.stop()
                }
            }
        }
    }

    /// The state letter of /proc/PID/stat (`R`, `S`, ...).
    func processState(_ pid: pid_t) -> String? {
        let text = contents("/proc/\(pid)/stat")
        guard let close = text.lastIndex(of: ")") else { return nil }
        return text[text.index(after: close)...].split(separator: " ").first.map(String.init)
    }

    /// truncate: a file rewritten shorter is read again from its start.
    func testTruncation() throws {
        for poll in [false, true] {
            for tool in try tools(poll: poll) {
                let file = f("t-\(caseNumber)")
                writeFile(file, (1...10).map { "\($0)\n" }.joined())
                let program = start(tool, "'\(file)'")
                printed(program, (1...10).map { "\($0)\n" }.joined(), tool)
                writeFile(file, (11...15).map { "\($0)\n" }.joined())
                printed(program, (1...15).map { "\($0)\n" }.joined(), tool)
                said(program, "file truncated", tool)
                program.stop()
            }
        }
    }

    /// `-n +K` prints an unfinished last line at once, as `-n N` does.
    func testFromLineKPrintsAnUnfinishedLastLineAtOnce() throws {
        for tool in try tools(poll: false) {
            let file = f("plus-\(caseNumber)")
            writeFile(file, "x\ny\ny\nz")
            let program = start(tool, "-n +2 '\(file)'")
            printed(program, "y\ny\nz", tool)
            append(file, "z\n")
            printed(program, "y\ny\nzz\n", tool)
            program.stop()
        }
    }

    // MARK: - pipe-f: closed output

    /// pipe-f: `tail -n2 -f f | head -n2` ends once head has its two lines although the
    /// file stays quiet, with SIGPIPE at its default and ignored.
    func testAClosedPipeEndsTheFollowWhileNothingIsWritten() throws {
        for poll in [false, true] {
            for tool in try tools(poll: poll) {
                for disposition in ["-", "''"] {
                    let file = f("pipe-\(caseNumber)")
                    writeFile(file, "a\nb\nc\n")
                    caseNumber += 1
                    let out = f("pipe-out\(caseNumber)")
                    let program = Program(
                        "(trap \(disposition) PIPE; exec \(tool.command) -n2 '\(file)') | head -n2 > '\(out)'",
                        out: out, err: "/dev/null")
                    let status = program.waitExit(20)
                    XCTAssertNotNil(status, "\(tool) (SIGPIPE \(disposition)) did not end")
                    XCTAssertEqual(contents(out), "b\nc\n", "\(tool)")
                    program.stop()
                }
            }
        }
    }

    /// pipe-f: `tail -f FILE >&-` fails at once: exit 1, "standard output: Bad file descriptor".
    func testAClosedStandardOutputIsAnError() throws {
        for tool in try tools(poll: false) {
            let file = f("closed-\(caseNumber)")
            writeFile(file, "a\n")
            caseNumber += 1
            let err = f("closed-err\(caseNumber)")
            let program = Program("exec \(tool.command) '\(file)' >&- 2> '\(err)'", out: "/dev/null", err: err)
            let status = program.waitExit(20)
            XCTAssertNotNil(status, "\(tool) did not end")
            if let status { XCTAssertEqual(status >> 8, 1, "\(tool): exit status \(status)") }
            XCTAssertTrue(contents(err).contains("standard output: Bad file descriptor"), "\(tool): \(contents(err))")
        }
    }

    // MARK: - The bounded read of a renamed-away file (ruv-tail's own)

    /// A file renamed away is read while its writer may still append (a late line is
    /// printed, which GNU tail loses), until it has been quiet for `--rotate-wait`: then it
    /// is closed, and a line appended to it after that is not printed.
    func testARenamedAwayFileIsReadUntilQuietForRotateWait() throws {
        guard let ruvTail = Self.ruvTail else { throw XCTSkip("ruv-tail is not built next to the tests") }
        let tool = Tool(command: "'\(ruvTail)' --rotate-wait 0.5", isGNU: false)
        let file = f("rw.log")
        writeFile(file, "")
        // Close-on-exec: ruv-tail must not inherit the writer's descriptor (it would seem
        // to hold the rotated file open).
        let fd = open(file, O_WRONLY | O_APPEND | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd) }
        let program = start(tool, "'\(file)'")
        writeAll(fd, "one\n")
        printed(program, "one\n", tool)
        XCTAssertEqual(rename(file, file + ".1"), 0)
        writeFile(file, "new\n")
        printed(program, "one\nnew\n", tool)
        writeAll(fd, "late\n")  // the writer has not reopened the name yet
        printed(program, "one\nnew\nlate\n", tool)
        // Quiet for 0.5 s: the rotated file is closed (seen in /proc), then written again.
        XCTAssertTrue(waitFor { !self.holdsOpen(program.pid, file + ".1") }, "the rotated file stayed open")
        writeAll(fd, "too late\n")
        append(file, "marker\n")
        printed(program, "one\nnew\nlate\nmarker\n", tool)
        program.stop()
        XCTAssertEqual(contents(program.out), "one\nnew\nlate\nmarker\n", "nothing after the quiet period")
    }

    /// Whether process `pid` has `path` open (its /proc/PID/fd links).
    func holdsOpen(_ pid: pid_t, _ path: String) -> Bool {
        guard let dir = opendir("/proc/\(pid)/fd") else { return false }
        defer { closedir(dir) }
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: &entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            var buffer = [CChar](repeating: 0, count: 4096)
            let n = readlink("/proc/\(pid)/fd/\(name)", &buffer, buffer.count - 1)
            if n > 0 && String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) == path { return true }
        }
        return false
    }
}

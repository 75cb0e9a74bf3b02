import CLibUV
import CSystemShims
import Glibc
import XCTest

@testable import ReactiveUV

/// Subprocess.run, and StandardInput through real pipes and files.
final class SubprocessTests: XCTestCase {
    /// Joins the chunks of one stream.
    static func bytes(_ events: [SubprocessEvent], stdout: Bool) -> [UInt8] {
        events.flatMap { event -> [UInt8] in
            switch event {
            case .stdout(let b) where stdout: return b
            case .stderr(let b) where !stdout: return b
            default: return []
            }
        }
    }

    static func lines(_ bytes: [UInt8]) -> [String] {
        var buffer = LineBuffer()
        var lines: [String] = []
        try? buffer.append(bytes) { lines.append($0) }
        if let last = buffer.finish() { lines.append(last) }
        return lines
    }

    func testAShellScriptReportsItsOutputLinesErrorAndExitStatus() throws {
        let loop = try EventLoop()
        let events = Recorder<SubprocessEvent>()
        events.subscribe(Subprocess.run(["/bin/sh", "-c", "printf 'a\\nb\\n'; echo err >&2; exit 3"], on: loop))
        XCTAssertTrue(loop.run(until: { events.terminated }, timeout: 30))
        XCTAssertNil(events.error)
        XCTAssertTrue(events.completed)
        XCTAssertEqual(Self.lines(Self.bytes(events.values, stdout: true)), ["a", "b"])
        XCTAssertEqual(Self.lines(Self.bytes(events.values, stdout: false)), ["err"])
        XCTAssertEqual(events.values.last, .exit(SubprocessExit(status: 3)))
        XCTAssertEqual(events.values.filter { if case .exit = $0 { return true } else { return false } }.count, 1)
        assertAllHandlesClosedAndClose(loop)
    }

    func testTheConvenienceSignalsSplitOutputAndStatus() throws {
        let loop = try EventLoop()
        let run = Subprocess.run(["/bin/sh", "-c", "echo out; echo err >&2; exit 0"], on: loop)
        let out = Recorder<String>()
        out.subscribe(run.stdout().lines())
        let err = Recorder<String>()
        err.subscribe(run.stderr().lines())
        let status = Recorder<SubprocessExit>()
        status.subscribe(run.exitStatus())
        XCTAssertTrue(loop.run(until: { out.terminated && err.terminated && status.terminated }, timeout: 30))
        XCTAssertEqual(out.values, ["out"])
        XCTAssertEqual(err.values, ["err"])
        XCTAssertEqual(status.values.map(\.succeeded), [true])
        assertAllHandlesClosedAndClose(loop)
    }

    func testCatEchoesItsInputSignal() throws {
        let loop = try EventLoop()
        let input = Signal.fromArray((0..<1000).map { Array("line \($0)\n".utf8) })
        let events = Recorder<SubprocessEvent>()
        events.subscribe(Subprocess.run(["cat"], environment: ["PATH": "/usr/bin:/bin"], input: input, on: loop))
        XCTAssertTrue(loop.run(until: { events.terminated }, timeout: 30))
        XCTAssertNil(events.error)
        XCTAssertEqual(Self.lines(Self.bytes(events.values, stdout: true)), (0..<1000).map { "line \($0)" })
        XCTAssertEqual(events.values.last, .exit(SubprocessExit(status: 0)))
        assertAllHandlesClosedAndClose(loop)
    }

    func testAChildThatStopsReadingItsInputEarlyIsNotAnError() throws {
        let loop = try EventLoop()
        // `head -c 1` exits after one byte; the rest of 2 MiB (offered at once, more than
        // the pipe holds, less than the write queue's hard limit) meets a closed pipe: EPIPE.
        let input = Signal.fromArray(Array(repeating: [UInt8](repeating: 0x41, count: 64 << 10), count: 32))
        let events = Recorder<SubprocessEvent>()
        events.subscribe(Subprocess.run(["head", "-c", "1"], input: input, on: loop))
        XCTAssertTrue(loop.run(until: { events.terminated }, timeout: 30))
        XCTAssertNil(events.error)
        XCTAssertEqual(Self.bytes(events.values, stdout: true), [0x41])
        XCTAssertEqual(events.values.last, .exit(SubprocessExit(status: 0)))
        assertAllHandlesClosedAndClose(loop)
    }

    func testDisposingKillsTheChildQuickly() throws {
        let loop = try EventLoop()
        // The shell prints its pid, then becomes `sleep 30`.
        let events = Recorder<SubprocessEvent>()
        let subscription = events.subscribe(Subprocess.run(["/bin/sh", "-c", "echo $$; exec sleep 30"], on: loop))
        XCTAssertTrue(loop.run(until: { !events.values.isEmpty }, timeout: 30))
        let pid = try XCTUnwrap(Int32(Self.lines(Self.bytes(events.values, stdout: true)).first ?? ""))
        XCTAssertEqual(kill(pid, 0), 0, "the child runs")

        let started = csys_monotonic_ns()
        TestThread { subscription.dispose() }.join()
        XCTAssertTrue(waitForHandlesToClose(loop, timeout: 10), "the process handle closes once the child is reaped")
        let seconds = Double(csys_monotonic_ns() - started) / 1e9
        XCTAssertLessThan(seconds, 2, "SIGTERM ended `sleep 30` at once")
        XCTAssertEqual(kill(pid, 0), -1)
        XCTAssertEqual(errno, ESRCH, "the child is gone and reaped (no zombie)")
        XCTAssertEqual(events.values.count, 1, "nothing delivered after the dispose")
        XCTAssertFalse(events.terminated)
        assertAllHandlesClosedAndClose(loop)
    }

    func testAChildIgnoringSIGTERMIsKilledAfterTheGracePeriod() throws {
        let loop = try EventLoop()
        let events = Recorder<SubprocessEvent>()
        let subscription = events.subscribe(Subprocess.run(
            ["/bin/sh", "-c", "trap '' TERM; echo ready; while :; do sleep 0.05; done"], killGracePeriod: 0.2, on: loop))
        XCTAssertTrue(loop.run(until: { !events.values.isEmpty }, timeout: 30))
        let started = csys_monotonic_ns()
        subscription.dispose()
        XCTAssertTrue(waitForHandlesToClose(loop, timeout: 10))
        XCTAssertLessThan(Double(csys_monotonic_ns() - started) / 1e9, 5)
        assertAllHandlesClosedAndClose(loop)
    }

    func testAMissingProgramFailsWithNoSuchFile() throws {
        let loop = try EventLoop()
        let events = Recorder<SubprocessEvent>()
        events.subscribe(Subprocess.run(["/nonexistent/program", "x"], on: loop))
        let empty = Recorder<SubprocessEvent>()
        empty.subscribe(Subprocess.run([], on: loop))
        XCTAssertTrue(loop.run(until: { events.terminated && empty.terminated }, timeout: 30))
        let error = try XCTUnwrap(events.error as? UVError, "\(String(describing: events.error))")
        XCTAssertEqual(error, .noSuchFile)
        XCTAssertEqual(error.description, "ENOENT (no such file or directory) during spawn on /nonexistent/program")
        XCTAssertEqual(empty.error as? UVError, .invalidArgument)
        assertAllHandlesClosedAndClose(loop)
    }

    // MARK: - Standard input

    /// The `ruv-stdin-lines` example, built next to the test bundle.
    static var stdinLinesExecutable: String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        var path = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        // .../debug/ReactiveUVPackageTests.xctest → .../debug/ruv-stdin-lines
        if let slash = path.lastIndex(of: "/") { path = String(path[..<slash]) }
        let candidate = path + "/ruv-stdin-lines"
        return access(candidate, X_OK) == 0 ? candidate : nil
    }

    func testStandardInputLinesFromAPipeInAnotherProcess() throws {
        guard let helper = Self.stdinLinesExecutable else {
            throw XCTSkip("ruv-stdin-lines is not built next to the tests")
        }
        let loop = try EventLoop()
        let piped = Recorder<String>()
        piped.subscribe(Subprocess.run(["/bin/sh", "-c", "printf 'x\\ny\\r\\nlast' | \(helper)"], on: loop).stdout().lines())
        let fromFile = Recorder<String>()
        fromFile.subscribe(Subprocess.run(["/bin/sh", "-c", "\(helper) < /dev/null"], on: loop).stdout().lines())
        let tooLong = Recorder<SubprocessEvent>()
        tooLong.subscribe(Subprocess.run(["/bin/sh", "-c", "echo abcdef | \(helper) --max 3"], on: loop))
        XCTAssertTrue(loop.run(until: { piped.terminated && fromFile.terminated && tooLong.terminated }, timeout: 60))
        XCTAssertEqual(piped.values, ["line: x", "line: y", "line: last", "end"])
        XCTAssertEqual(fromFile.values, ["end"])
        XCTAssertEqual(Self.lines(Self.bytes(tooLong.values, stdout: false)), ["ruv-stdin-lines: line longer than the limit of 3 bytes"])
        XCTAssertEqual(tooLong.values.last, .exit(SubprocessExit(status: 1)))
        assertAllHandlesClosedAndClose(loop)
    }

    func testStandardInputReadingOverAPipeDescriptor() throws {
        let loop = try EventLoop()
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&fds), 0)
        let text = Array("x\ny\npartial".utf8)
        XCTAssertEqual(text.withUnsafeBytes { write(fds[1], $0.baseAddress, $0.count) }, text.count)
        close(fds[1])
        let lines = Recorder<String>()
        lines.subscribe(StandardInput.reads(fd: fds[0], name: "pipe", exclusive: false, on: loop).lines())
        XCTAssertTrue(loop.run(until: { lines.terminated }, timeout: 30))
        XCTAssertEqual(lines.values, ["x", "y", "partial"])
        XCTAssertTrue(lines.completed)
        assertAllHandlesClosedAndClose(loop)  // libuv closed fds[0] with its handle
    }

    func testStandardInputReadingARegularFileDescriptor() throws {
        let loop = try EventLoop()
        let directory = try makeTemporaryDirectory()
        let path = directory + "/input.txt"
        let fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0o600)
        XCTAssertGreaterThanOrEqual(fd, 0)
        let text = Array((0..<20000).map { "row \($0)\n" }.joined().utf8)  // > 64 KiB: several reads
        XCTAssertEqual(text.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }, text.count)
        lseek(fd, 0, SEEK_SET)
        let lines = Recorder<String>()
        lines.subscribe(StandardInput.reads(fd: fd, name: "file", exclusive: false, on: loop).lines())
        XCTAssertTrue(loop.run(until: { lines.terminated }, timeout: 30))
        XCTAssertEqual(lines.values, (0..<20000).map { "row \($0)" })
        assertAllHandlesClosedAndClose(loop)
        close(fd)
        unlink(path)
        rmdir(directory)
    }
}

import Foundation
import XCTest

/// The C API's behaviour as a C program sees it: `C/api-tests.c`, built with `cc` against
/// reactiveuv.h and libreactiveuv.so, runs one case per test and prints what its callbacks
/// recorded; each test compares that event list.
final class EmbedAPITests: XCTestCase {
    /// The test program, built once for the whole class.
    nonisolated(unsafe) static var program: String?
    nonisolated(unsafe) static var buildDirectory: URL?

    override class func tearDown() {
        if let dir = buildDirectory { try? FileManager.default.removeItem(at: dir) }
        super.tearDown()
    }

    /// Builds `api-tests` (once) and runs one case; returns its lines without the final "ok".
    func run(_ name: String, _ extra: [String] = [], timeout: Double = 20, file: StaticString = #filePath, line: UInt = #line) throws -> [String] {
        try CToolchain.requireLibrary(file: file, line: line)
        if EmbedAPITests.program == nil {
            let dir = try CToolchain.temporaryDirectory("api")
            EmbedAPITests.buildDirectory = dir
            EmbedAPITests.program = try CToolchain.buildProgram(
                [CToolchain.testSources.appendingPathComponent("api-tests.c").path], named: "api-tests", in: dir,
                file: file, line: line)
        }
        let result = try CToolchain.run(EmbedAPITests.program!, [name] + extra, timeout: timeout)
        XCTAssertFalse(result.timedOut, "api-tests \(name) timed out", file: file, line: line)
        XCTAssertEqual(result.status, 0, "api-tests \(name) failed:\n\(result.stdout)\n\(result.stderr)", file: file, line: line)
        XCTAssertEqual(result.lines.last, "ok", "api-tests \(name) did not finish:\n\(result.stdout)", file: file, line: line)
        return Array(result.lines.dropLast())
    }

    /// Sends, late subscribers, empty values, terminal replay, RUV_ECLOSED, replay subjects.
    func testSubjects() throws {
        XCTAssertEqual(try run("subject"), [
            "a next one",
            "a next two", "b next two",
            "a next ", "b next ",
            "a error ECONNRESET", "b error ECONNRESET",
            "c error ECONNRESET",
            "replay next r2", "replay next r3",
            "replay error UNKNOWN",
        ])
    }

    /// filter, map (drop, fail), skip, take, distinctUntilChanged, merge, concat, startWith,
    /// retry, catchTo, takeUntil, lines, flattenMap, switchToLatest.
    func testOperators() throws {
        XCTAssertEqual(try run("operators"), [
            "map next A", "distinct next a",
            "distinct next xa",
            "distinct next skip",
            "map next B", "take next B", "distinct next b",
            "map next B", "take next B",
            "map next C", "take next C", "take completed", "distinct next c",
            "map next D", "distinct next d",
            "map error UNKNOWN", "distinct next boom",
            "distinct next e",
            "merge next 1", "merge next 2", "merge completed",
            "merge_many next 1", "merge_many next 2", "merge_many next 3", "merge_many completed",
            "merge_none completed",
            "concat next 1", "concat next 2", "concat completed",
            "start_with next 0", "start_with next 3", "start_with completed",
            "retry next 1", "retry next 1", "retry next 1", "retry error EPIPE",
            "catch_to next 1", "catch_to next 2", "catch_to completed",
            "take_until next u1", "take_until completed",
            "lines next alpha", "lines next beta", "lines next gamma", "lines completed",
            "lines_limit error ELINETOOLONG",
            "flatten_map next p-p", "flatten_map next +", "flatten_map next q-q", "flatten_map next +",
            "flatten_map completed",
            "switch next a1", "switch next b1", "switch completed",
        ])
    }

    /// interval, timer, throttle, debounce, delay, timeout on an own loop driven by poll();
    /// closing twice; calls after close.
    func testTimeOperatorsOnAPollDrivenLoop() throws {
        XCTAssertEqual(try run("time"), [
            "timer tick", "timer completed",
            "interval tick", "interval tick", "interval tick", "interval completed",
            "timeout error ETIMEOUT",
            "delay next t1", "delay next t2", "delay next t3",
            "throttle next t3", "debounce next t3",
            "throttle next t4", "throttle completed", "debounce completed",
            "delay next t4", "delay completed",
        ])
    }

    /// A runtime on the host's uv_loop_t: the host's uv_run runs the timers, ReactiveUV's
    /// handles never keep it alive, and after close the host's loop closes cleanly.
    func testHostLoop() throws {
        XCTAssertEqual(try run("host-loop"), ["host tick", "host tick", "host tick", "host completed", "host loop closed"])
    }

    /// RUV_EWRONGTHREAD from other threads, serialized sends from four threads, deliver_on
    /// waking a poll() blocked on the backend fd, UV_EBUSY for run_once inside a callback.
    func testThreads() throws {
        XCTAssertEqual(try run("threads"), [
            "wrong thread: EWRONGTHREAD", "serialized 80000", "delivered on loop 20000", "nested run_once: EBUSY",
        ])
    }

    /// A callback that disposes (and releases) its own subscription, also during a
    /// synchronous subscribe; a callback that releases the signal it is subscribed to.
    func testCallbacksDisposingTheirSubscriptionOrReleasingTheirSignal() throws {
        XCTAssertEqual(try run("reentrancy"), [
            "self next S1", "self next S2",
            "self next sync", "self next sync",
            "release next R1", "release next R2", "release completed",
        ])
    }

    /// Dispose from one thread while another sends: no callback once dispose returned.
    func testDisposeFromAnotherThreadStopsCallbacks() throws {
        XCTAssertEqual(try run("dispose-threads"), ["no callback after dispose"])
    }

    /// File lines and chunks, a missing file's ENOENT, `tail -F` (last line, then an
    /// append), `ruv_file_tail_ex`'s line limit (an error, or the line skipped), and a unix
    /// signal raised by the program itself.
    func testFilesAndUnixSignals() throws {
        let dir = try CToolchain.temporaryDirectory("files")
        defer { try? FileManager.default.removeItem(at: dir) }
        XCTAssertEqual(try run("files", [dir.path]), [
            "lines next first", "lines next second", "lines next ", "lines next last", "lines completed",
            "read completed", "read 20 bytes",
            "missing error ENOENT",
            "tail next last", "tail next appended",
            "strict next short", "strict error ELINETOOLONG",
            "skip next short", "skip next after",
            "unix next 10",
        ])
    }

    /// A server and a client from C: lines in, mapped replies out with a half-close, the
    /// client's connection closing by itself, the peer's address, RUV_ECLOSED for a write
    /// to a closed connection, EADDRINUSE and ECONNREFUSED to the error callbacks.
    func testTCP() throws {
        XCTAssertEqual(try run("tcp"), [
            "listening",
            "client lines echo: hello|echo: world|",
            "client lines completed 1, server connections 1, server sent 1, client closed 1",
            "server saw peer 127.0.0.1: 1",
            "second listen EADDRINUSE",
            "connect ECONNREFUSED",
        ])
    }

    /// Error names and messages (libuv's, ours, unknown), the version, UV_EINVAL for NULLs.
    func testErrorsAndArgumentChecks() throws {
        XCTAssertEqual(try run("errors"), [
            "ECONNREFUSED connection refused",
            "EOF end of file",
            "EWRONGTHREAD called on a thread other than the runtime's loop thread",
            "ETIMEOUT the signal timed out",
            "UNKNOWN unknown error",
            "UNKNOWN",
            "empty completed",
            "error error ENOENT",
        ])
    }
}

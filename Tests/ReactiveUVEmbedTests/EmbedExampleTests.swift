import Foundation
import XCTest

/// The two C examples, built with `cc` against reactiveuv.h and libreactiveuv.so exactly as
/// Examples/embed-c/README.md tells a C user to, run against temporary files and loopback
/// sockets, with their output checked.
final class EmbedExampleTests: XCTestCase {
    nonisolated(unsafe) static var built: [String: String] = [:]
    nonisolated(unsafe) static var buildDirectory: URL?
    var scratch: URL!

    override func setUpWithError() throws {
        try CToolchain.requireLibrary()
        scratch = try CToolchain.temporaryDirectory("examples")
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: scratch)
    }

    override class func tearDown() {
        if let dir = buildDirectory { try? FileManager.default.removeItem(at: dir) }
        super.tearDown()
    }

    /// Builds a program once per run: an example (against the library) or a plain libuv tool.
    func program(_ name: String, source: URL, linkLibrary: Bool = true) throws -> String {
        if let path = EmbedExampleTests.built[name] { return path }
        if EmbedExampleTests.buildDirectory == nil { EmbedExampleTests.buildDirectory = try CToolchain.temporaryDirectory("example-bin") }
        let dir = EmbedExampleTests.buildDirectory!
        let path: String
        if linkLibrary {
            path = try CToolchain.buildProgram([source.path], named: name, in: dir)
        } else {
            path = dir.appendingPathComponent(name).path
            let args = ["-std=c11", "-O2"] + CToolchain.strictFlags + [source.path, "-o", path, "-luv"]
            let result = try CToolchain.run("/usr/bin/cc", args, timeout: 60)
            XCTAssertEqual(result.status, 0, result.stderr)
        }
        EmbedExampleTests.built[name] = path
        return path
    }

    func tailGrep() throws -> String {
        try program("tail-grep", source: CToolchain.examples.appendingPathComponent("tail-grep.c"))
    }

    func append(_ text: String, to url: URL) throws {
        let handle = try FileHandle(forWritingTo: url)
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(text.utf8))
        try handle.close()
    }

    /// tail-grep on a host-owned uv_loop_t: the matches among the last lines first, a burst
    /// collapsed by the throttle to its last match, then a rotated file followed from its
    /// start; it exits by itself after -c lines, with the loop closed cleanly.
    func testTailGrepFollowsFiltersAndThrottles() throws {
        let log = scratch.appendingPathComponent("app.log")
        try "old match\nmatch zero\nnoise\n".write(to: log, atomically: false, encoding: .utf8)
        let grep = try RunningProgram(try tailGrep(), ["-t", "0.1", "-n", "2", "-c", "3", "match", log.path])
        XCTAssertNotNil(grep.waitForLine { $0 == "match zero" }, "no first match; stderr: \(grep.stderr)")

        // One write: both matches arrive together and the throttle keeps the last.
        try append("match a\nnoise\nmatch b\n", to: log)
        XCTAssertNotNil(grep.waitForLine { $0 == "match b" }, "burst not printed: \(grep.lines)")

        // Rotation: the file is renamed away and a new one takes its place.
        try FileManager.default.moveItem(at: log, to: scratch.appendingPathComponent("app.log.1"))
        try "noise\nmatch c\n".write(to: log, atomically: false, encoding: .utf8)
        XCTAssertEqual(grep.waitForExit(timeout: 15), 0, "stderr: \(grep.stderr)")
        XCTAssertEqual(grep.lines, ["match zero", "match b", "match c"])
        XCTAssertEqual(grep.stderr, "")
    }

    /// Every match is printed with -t 0; SIGTERM, arriving as a ReactiveUV signal, ends
    /// the program cleanly (exit 0: its runtime and loop closed without error).
    func testTailGrepWithoutThrottleStopsOnSIGTERM() throws {
        let log = scratch.appendingPathComponent("plain.log")
        let grep = try RunningProgram(try tailGrep(), ["-t", "0", "ERROR", log.path])
        // The file does not exist yet: the tail waits for it, watching its directory. Written
        // before that watch, it would be a file found at start, followed from its end.
        XCTAssertTrue(grep.waitForInotifyWatch(), "the tail never started watching; stderr: \(grep.stderr)")
        try "ERROR one\nINFO two\nERROR three\n".write(to: log, atomically: false, encoding: .utf8)
        XCTAssertNotNil(grep.waitForLine { $0 == "ERROR three" }, "stderr: \(grep.stderr)")
        grep.signal(SIGTERM)
        XCTAssertEqual(grep.waitForExit(), 0, "stderr: \(grep.stderr)")
        XCTAssertEqual(grep.lines, ["ERROR one", "ERROR three"])
    }

    /// tail-grep reports a path it can never follow (through a plain file: ENOTDIR) and
    /// exits 1. (A directory at the path is waited on, as `tail -F` does.)
    func testTailGrepReportsErrors() throws {
        let plain = scratch.appendingPathComponent("plain")
        try "x\n".write(to: plain, atomically: false, encoding: .utf8)
        let grep = try RunningProgram(try tailGrep(), ["-t", "0", "x", plain.path + "/app.log"])
        XCTAssertEqual(grep.waitForExit(), 1)
        XCTAssertTrue(grep.stderr.contains("ENOTDIR"), grep.stderr)
    }

    func pollHost() throws -> String {
        try program("poll-host", source: CToolchain.examples.appendingPathComponent("poll-host.c"))
    }

    func echoLoad() throws -> String {
        try program(
            "echo-load", source: CToolchain.packageRoot.appendingPathComponent("Benchmarks/embed-c/echo-load.c"),
            linkLibrary: false)
    }

    /// The port poll-host printed.
    func port(of host: RunningProgram) throws -> Int {
        let line = host.waitForLine { $0.hasPrefix("listening on ") }
        let port = line.flatMap { $0.split(separator: ":").last }.flatMap { Int($0) }
        guard let port, port > 0 else {
            XCTFail("poll-host did not listen: \(host.stdout) \(host.stderr)")
            throw CBuildError(message: "no port")
        }
        return port
    }

    /// poll-host: its own poll() loop drives the runtime through the backend fd; the echo
    /// server built from signals answers 10 connections x 200 round trips byte for byte
    /// while the host's own timer keeps ticking; SIGTERM ends it cleanly.
    func testPollHostEchoServerAndOwnTimer() throws {
        let host = try RunningProgram(try pollHost(), ["-p", "0", "-t", "50", "-v"])
        let port = try port(of: host)
        let load = try CToolchain.run(try echoLoad(), ["127.0.0.1", String(port), "10", "200", "100", "20"], timeout: 30)
        XCTAssertEqual(load.status, 0, "echo-load: \(load.stderr)")
        XCTAssertTrue(load.stdout.hasPrefix("verified 2000 messages of 100 bytes on 10 connections"), load.stdout)
        // The host's own timer ticked beside the server.
        XCTAssertNotNil(host.waitForLine { $0 == "host timer 3" }, host.stdout)
        // Every connection was seen and closed (the peer's EOF ends each echo).
        XCTAssertNotNil(host.waitForLine(timeout: 5) { _ in host.lines.filter { $0 == "connection closed" }.count == 10 },
                        host.stdout)
        host.signal(SIGTERM)
        XCTAssertEqual(host.waitForExit(), 0, host.stderr)
        let lines = host.lines
        XCTAssertEqual(lines.filter { $0.hasPrefix("connection from 127.0.0.1:") }.count, 10, "\(lines)")
        XCTAssertEqual(lines.filter { $0 == "connection closed" }.count, 10, "\(lines)")
        XCTAssertEqual(Array(lines.suffix(2)), ["signal 15", "bye"])
        XCTAssertEqual(host.stderr, "")
    }

    /// Two poll-hosts cannot share a port: the second reports EADDRINUSE and exits 1; the
    /// first stops after its -s seconds on its own.
    func testPollHostReportsAddressInUse() throws {
        let first = try RunningProgram(try pollHost(), ["-p", "0", "-s", "2"])
        let port = try port(of: first)
        let second = try RunningProgram(try pollHost(), ["-p", String(port), "-s", "5"])
        XCTAssertEqual(second.waitForExit(), 1)
        XCTAssertTrue(second.stderr.contains("EADDRINUSE"), second.stderr)
        XCTAssertEqual(first.waitForExit(), 0, first.stderr)
        XCTAssertEqual(first.lines.last, "bye")
    }
}

import CNetBench
import ReactiveUV

#if canImport(Glibc)
import Glibc
#endif

// Rows 5–7: echo round trips through a real TCP server in its own process. The ReactiveUV
// column is `ruv-echo` (Examples/ruv-echo: TCP.listen → flattenMap { c.send(c.reads) }),
// the baseline column the plain C libuv server in CNetBench/echo_server.c. Both are driven
// by the same C load generator (CNetBench/load_generator.c) on this process's thread: N
// connections, each sending a 64-byte message and waiting for all of it to come back
// before sending the next. Reported per message; messages per second = 1e9 / ns.

extension Row {
    static let echo1 = Echo.row(connections: 1, size: 20_000)
    static let echo100 = Echo.row(connections: 100, size: 200_000)
    static let echo1000 = Echo.row(connections: 1000, size: 200_000)
}

enum Echo {
    static let messageSize = 64

    static func row(connections: Int, size: Int) -> Row {
        var row = Row(
            name: "echo\(connections)",
            title: "TCP echo ping-pong, \(connections) connection\(connections == 1 ? "" : "s"), 64 B messages (ruv-echo vs C libuv server)",
            unit: "message",
            size: size,
            reactiveUV: { n in load(EchoServer.ruvEcho, connections: connections, messages: n) },
            openCombine: nil,
            baseline: { n in load(EchoServer.cEcho, connections: connections, messages: n) }
        )
        row.serverCPU = { column in
            switch column {
            case .reactiveUV: return EchoServer.ruvEcho.cpuNanoseconds()
            case .baseline: return EchoServer.cEcho.cpuNanoseconds()
            case .openCombine: return nil
            }
        }
        return row
    }

    /// Runs `messages` round trips (split evenly over the connections) against `server`;
    /// returns the checksum of the bytes echoed.
    static func load(_ server: EchoServer, connections: Int, messages: Int) -> Int {
        let perConnection = max(1, messages / connections)
        var checksum: UInt64 = 0
        let ns = cnb_echo_load(
            "127.0.0.1", Int32(server.port), Int32(connections), Int32(messageSize), Int64(perConnection), &checksum)
        if ns < 0 {
            printError("echo load against \(server.name) failed: error \(ns)")
            exit(1)
        }
        return Int(truncatingIfNeeded: checksum)
    }
}

/// An echo server in a child process, started on first use and stopped at exit.
final class EchoServer: @unchecked Sendable {
    // Thread-safety: used from the benchmark's main thread only.

    /// The `ruv-echo` binary (set by `--ruv-echo`, or found and built by `locateRuvEcho`).
    nonisolated(unsafe) static var ruvEchoPath = ""

    static let ruvEcho = EchoServer(name: "ruv-echo", arguments: [ruvEchoPath, "--port", "0"])
    /// This executable in its `--serve-c-echo` mode (see main.swift).
    static let cEcho = EchoServer(name: "C libuv echo", arguments: [selfExecutable(), "--serve-c-echo"])

    nonisolated(unsafe) private static var started: [EchoServer] = []
    /// The CPU every server is pinned to once started (`--pin`), or nil: not pinned.
    nonisolated(unsafe) static var pinnedCPU: Int32?

    let name: String
    let arguments: [String]
    private var pid: pid_t = 0
    private var boundPort = 0

    init(name: String, arguments: [String]) {
        self.name = name
        self.arguments = arguments
    }

    /// The port it listens on, starting it on first use.
    var port: Int {
        if boundPort == 0 { start() }
        return boundPort
    }

    private func start() {
        var pipeFDs: [Int32] = [0, 0]
        guard pipe(&pipeFDs) == 0 else { fatal("pipe failed") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        posix_spawn_file_actions_adddup2(&actions, pipeFDs[1], 1)
        posix_spawn_file_actions_addclose(&actions, pipeFDs[0])
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let rc = posix_spawn(&pid, arguments[0], &actions, nil, argv, environ)
        posix_spawn_file_actions_destroy(&actions)
        close(pipeFDs[1])
        guard rc == 0 else { fatal("cannot start \(name) (\(arguments[0])): error \(rc)") }
        EchoServer.started.append(self)

        // The first line is `listening on 127.0.0.1:PORT`.
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while read(pipeFDs[0], &byte, 1) == 1 && byte != 10 { line.append(byte) }
        close(pipeFDs[0])
        let text = String(decoding: line, as: UTF8.self)
        guard text.hasPrefix("listening on "), let colon = text.lastIndex(of: ":"),
            let port = Int(text[text.index(after: colon)...])
        else { fatal("\(name) did not report its port (got \"\(text)\")") }
        boundPort = port
        // Pinned once it listens: by then it has started every thread it runs.
        if let cpu = EchoServer.pinnedCPU, cnb_pin_to_cpu(pid, cpu) != 0 {
            fatal("cannot pin \(name) to CPU \(cpu): errno \(errno)")
        }
        printError("started \(name) (pid \(pid)) on port \(port)")
    }

    /// The CPU time this server has used so far (user and kernel, nanoseconds), or nil
    /// when it is not running.
    func cpuNanoseconds() -> Int64? {
        guard pid > 0 else { return nil }
        let ns = cnb_process_cpu_ns(pid)
        return ns >= 0 ? ns : nil
    }

    /// SIGTERM to every server started, and wait for them.
    static func stopAll() {
        for server in started where server.pid > 0 {
            kill(server.pid, SIGTERM)
            var status: Int32 = 0
            waitpid(server.pid, &status, 0)
            server.pid = 0
        }
        started = []
    }

    private func fatal(_ message: String) -> Never {
        printError("ruv-bench: \(message)")
        EchoServer.stopAll()
        exit(1)
    }
}

/// The path of the running executable.
func selfExecutable() -> String {
    var buffer = [CChar](repeating: 0, count: 4096)
    let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    return n > 0 ? String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) : CommandLine.arguments[0]
}

/// Finds `ruv-echo` (release) next to the main package, building it if it is missing.
///
/// The main package is this package's parent directory (`Benchmarks/..`). Building uses
/// `swift build -c release --product ruv-echo` there.
func locateRuvEcho() -> String {
    let here = #filePath  // .../Benchmarks/Sources/ruv-bench/Rows/Echo.swift
    var root = here
    for _ in 0..<5 { root = String(root[..<(root.lastIndex(of: "/") ?? root.startIndex)]) }
    let path = root + "/.build/release/ruv-echo"
    if access(path, X_OK) == 0 { return path }
    printError("building ruv-echo: swift build -c release --product ruv-echo --package-path \(root)")
    let status = runAndWait(["/usr/bin/env", "swift", "build", "-c", "release", "--product", "ruv-echo", "--package-path", root])
    if status != 0 || access(path, X_OK) != 0 {
        printError("ruv-bench: could not build ruv-echo; pass --ruv-echo PATH")
        exit(1)
    }
    return path
}

/// Runs a command with our standard streams and returns its exit status.
func runAndWait(_ arguments: [String]) -> Int32 {
    var pid: pid_t = 0
    let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    guard posix_spawn(&pid, arguments[0], nil, nil, argv, environ) == 0 else { return -1 }
    var status: Int32 = 0
    waitpid(pid, &status, 0)
    return status
}

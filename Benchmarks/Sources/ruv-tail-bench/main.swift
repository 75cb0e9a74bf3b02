// ruv-tail-bench: tail throughput in lines per second, `ruv-tail` against GNU `tail -F`.
//
//     ruv-tail-bench [--ruv-tail PATH] [--tail PATH] [--lines N] [--runs R] [--file PATH]
//     ruv-tail-bench latency|copytruncate|restart [--ruv-tail PATH] [--tail PATH] [--runs R]
//
// (The second form: the rotation benchmarks, in Rotation.swift.)
//
// Run it from the repository root after `swift build -c release --product ruv-tail` (the
// default PATH is `.build/release/ruv-tail`).
//
// Both tailers read the same pre-written file of N log lines (2,000,000 by default, about
// 60 bytes each) from its beginning (`-n +1`, following with `-F`), their standard output
// piped to this process, which counts line breaks until all N have arrived and then stops
// the tailer. Time runs from spawning the process to the last line, so it includes start-up
// (Swift runtime and libuv for ruv-tail, next to nothing for tail). Each tailer runs R times
// (alternating, to share the machine's load fairly); the best and the median are reported,
// with the CPU time the tailer itself used.
//
// Plain POSIX (posix_spawn, pipes, wait4) and no ReactiveUV: the harness must not be what
// is measured.
import Glibc

struct Options {
    /// Relative to the repository root, where `swift run --package-path Benchmarks` runs.
    var ruvTail = ".build/release/ruv-tail"
    var tail = "/usr/bin/tail"
    var lines = 2_000_000
    var runs = 5
    var file: String?
}

func fail(_ message: String) -> Never {
    let text = "ruv-tail-bench: \(message)\n"
    _ = text.withCString { write(2, $0, strlen($0)) }
    exit(1)
}

func parse() -> Options {
    var options = Options()
    var arguments = CommandLine.arguments.dropFirst()
    while let argument = arguments.popFirst() {
        guard let value = arguments.popFirst() else { fail("\(argument) needs a value") }
        switch argument {
        case "--ruv-tail": options.ruvTail = value
        case "--tail": options.tail = value
        case "--lines":
            guard let n = Int(value), n > 0 else { fail("bad --lines \(value)") }
            options.lines = n
        case "--runs":
            guard let n = Int(value), n > 0 else { fail("bad --runs \(value)") }
            options.runs = n
        case "--file": options.file = value
        default: fail("unknown option \(argument)")
        }
    }
    return options
}

func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// Writes `count` lines shaped like a service log, in 1 MiB writes.
func writeLog(_ path: String, lines count: Int) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    guard fd >= 0 else { fail("cannot create \(path): errno \(errno)") }
    var buffer: [UInt8] = []
    buffer.reserveCapacity(1 << 21)
    let levels = ["INFO", "WARN", "DEBUG", "ERROR"]
    for i in 0..<count {
        let line = "\(i) 2026-11-21T12:00:00Z \(levels[i % 4]) GET /api/v1/items/\(i % 9973) \(i % 997)ms\n"
        buffer.append(contentsOf: line.utf8)
        if buffer.count >= 1 << 20 || i == count - 1 {
            buffer.withUnsafeBytes { bytes in
                var done = 0
                while done < bytes.count {
                    let n = write(fd, bytes.baseAddress! + done, bytes.count - done)
                    if n < 0 { fail("write failed: errno \(errno)") }
                    done += n
                }
            }
            buffer.removeAll(keepingCapacity: true)
        }
    }
    close(fd)
}

struct Run {
    var seconds: Double
    var cpu: Double
    var linesPerSecond: Double
}

/// Spawns `argv` with stdout on a pipe, counts lines until `expected`, stops it.
func measure(_ argv: [String], expected: Int) -> Run {
    var pipeFDs: [Int32] = [0, 0]
    guard pipe(&pipeFDs) == 0 else { fail("pipe failed") }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    posix_spawn_file_actions_adddup2(&actions, pipeFDs[1], 1)
    posix_spawn_file_actions_addclose(&actions, pipeFDs[0])
    posix_spawn_file_actions_addclose(&actions, pipeFDs[1])
    let cArgs = argv.map { strdup($0) } + [nil]
    defer { cArgs.forEach { free($0) } }
    var pid = pid_t()
    let start = now()
    let rc = posix_spawn(&pid, argv[0], &actions, nil, cArgs, environ)
    posix_spawn_file_actions_destroy(&actions)
    close(pipeFDs[1])
    guard rc == 0 else { fail("cannot start \(argv[0]): error \(rc)") }

    let size = 1 << 20
    let buffer = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 16)
    defer { buffer.deallocate() }
    var count = 0
    while count < expected {
        let n = read(pipeFDs[0], buffer, size)
        if n < 0 && errno == EINTR { continue }
        if n <= 0 { fail("\(argv[0]) stopped after \(count) of \(expected) lines") }
        var p = buffer.assumingMemoryBound(to: UInt8.self)
        var left = n
        while left > 0, let hit = memchr(p, 10, left) {
            count += 1
            let step = UnsafeRawPointer(hit) - UnsafeRawPointer(p) + 1
            p += step
            left -= step
        }
    }
    let elapsed = now() - start
    kill(pid, SIGTERM)
    close(pipeFDs[0])
    var status: Int32 = 0
    var usage = rusage()
    _ = wait4(pid, &status, 0, &usage)
    let cpu = Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
        + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
    return Run(seconds: elapsed, cpu: cpu, linesPerSecond: Double(expected) / elapsed)
}

func format(_ value: Double, _ digits: Int = 2) -> String {
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    let rounded = (value * scale).rounded() / scale
    return "\(rounded)"
}

// The rotation benchmarks (Rotation.swift): `ruv-tail-bench latency|copytruncate|restart`.
if let mode = CommandLine.arguments.dropFirst().first, !mode.hasPrefix("-") {
    let rest = CommandLine.arguments.dropFirst(2)
    switch mode {
    case "latency": runLatency(parseRotationOptions(rest))
    case "copytruncate": runCopyTruncate(parseRotationOptions(rest))
    case "restart": runRestart(parseRotationOptions(rest))
    default: fail("unknown benchmark \(mode): latency, copytruncate or restart (or none: throughput)")
    }
    exit(0)
}

let options = parse()
guard access(options.ruvTail, X_OK) == 0 else {
    fail("no ruv-tail at \(options.ruvTail): build it with `swift build -c release --product ruv-tail` in the main package, or pass --ruv-tail PATH")
}
var directory: String?
let file: String
if let given = options.file {
    file = given
} else {
    var template = Array("/tmp/ruv-tail-bench-XXXXXX".utf8CString)
    guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else { fail("mkdtemp failed") }
    directory = String(cString: made)
    file = directory! + "/app.log"
    writeLog(file, lines: options.lines)
}
var info = stat()
stat(file, &info)
print("tail throughput: \(options.lines) lines, \(format(Double(info.st_size) / 1e6, 1)) MB, \(options.runs) runs each, from the beginning (-n +1), until the last line arrives")

let commands: [(String, [String])] = [
    ("tail -F", [options.tail, "-F", "-n", "+1", file]),
    ("ruv-tail", [options.ruvTail, "-n", "+1", file]),
]
var results: [String: [Run]] = [:]
for _ in 0..<options.runs {
    for (name, argv) in commands { results[name, default: []].append(measure(argv, expected: options.lines)) }
}
var medians: [String: Double] = [:]
for (name, _) in commands {
    let runs = results[name]!.sorted { $0.linesPerSecond > $1.linesPerSecond }
    let median = runs[runs.count / 2]
    medians[name] = median.linesPerSecond
    let name8 = name + String(repeating: " ", count: max(0, 9 - name.count))
    print("  \(name8) best \(format(runs[0].linesPerSecond / 1e6)) M lines/s, median \(format(median.linesPerSecond / 1e6)) M lines/s (\(format(median.seconds, 3)) s wall, \(format(median.cpu, 3)) s CPU)")
}
print("  ruv-tail / tail -F (medians): \(format(medians["ruv-tail"]! / medians["tail -F"]!))x")
if let directory {
    unlink(file)
    rmdir(directory)
}

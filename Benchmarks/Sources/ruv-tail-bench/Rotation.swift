// The rotation benchmarks of ruv-tail-bench (issue 11), beside the throughput one in
// main.swift:
//
//     ruv-tail-bench latency      [--ruv-tail PATH] [--tail PATH] [--runs R]
//     ruv-tail-bench copytruncate [--ruv-tail PATH] [--tail PATH] [--runs R]
//     ruv-tail-bench restart      [--ruv-tail PATH] [--runs R]
//
// latency: a writer thread appends 20,000 lines/s for 3 s, each line carrying the
//   monotonic time it was written; the tailer's stdout is read here and each line's delay
//   computed. Without rotation, and with 3 rename rotations (5 lines still written to the
//   old descriptor after each rename). p50/p99/max per tailer, and lines lost.
// copytruncate: a writer appends 50,000 lines/s for 5 s while another thread does
//   logrotate's copytruncate every second (copy the file to app.log.N, truncate it). Lines
//   lost per tailer, against the lines that no reader could have had (in neither a copy
//   nor the final file: written between a copy and its truncation); ruv-tail's own count
//   (the `lost` notices on its stderr, in bytes).
// restart: ruv-tail --state follows a file written at 20,000 lines/s, is killed with
//   SIGKILL 1.5 s in, the file is rotated by rename while it is down, and it is started
//   again 2 s later; lines lost and lines printed twice.
//
// Plain POSIX: threads are pthreads, processes posix_spawn; no ReactiveUV.
import Glibc

/// A thread running a closure (pthread; the closure is handed over in a box).
final class BenchThread: @unchecked Sendable {
    // Thread-safety: `body` is set before the thread starts and read only by it.
    private var thread = pthread_t()
    private let body: () -> Void

    init(_ body: @escaping () -> Void) {
        self.body = body
        let box = Unmanaged.passRetained(self).toOpaque()
        pthread_create(&thread, nil, { raw in
            let me = Unmanaged<BenchThread>.fromOpaque(raw!).takeRetainedValue()
            me.body()
            return nil
        }, box)
    }

    func join() { pthread_join(thread, nil) }
}

/// An integer shared between threads (a pthread mutex around it).
final class Shared: @unchecked Sendable {
    // Thread-safety: `mutex` guards `value`.
    private var mutex = pthread_mutex_t()
    private var storage: Int

    init(_ value: Int) {
        storage = value
        pthread_mutex_init(&mutex, nil)
    }

    var value: Int {
        get { pthread_mutex_lock(&mutex); defer { pthread_mutex_unlock(&mutex) }; return storage }
        set { pthread_mutex_lock(&mutex); storage = newValue; pthread_mutex_unlock(&mutex) }
    }
}

func monotonicNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

func writeFully(_ fd: Int32, _ text: String) {
    var text = text
    text.withUTF8 { bytes in
        var done = 0
        while done < bytes.count {
            let n = write(fd, bytes.baseAddress! + done, bytes.count - done)
            if n < 0 {
                if errno == EINTR { continue }
                fail("write failed: errno \(errno)")
            }
            done += n
        }
    }
}

func makeDirectory() -> String {
    var template = Array("/tmp/ruv-tail-bench-XXXXXX".utf8CString)
    guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else { fail("mkdtemp failed") }
    return String(cString: made)
}

func removeDirectory(_ path: String) {
    guard let dir = opendir(path) else { return }
    while let entry = readdir(dir) {
        let name = withUnsafePointer(to: &entry.pointee.d_name) {
            $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
        }
        if name == "." || name == ".." { continue }
        let full = path + "/" + name
        var info = stat()
        if lstat(full, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR { removeDirectory(full) } else { unlink(full) }
    }
    closedir(dir)
    rmdir(path)
}

/// Spawns `argv` with stdout to `stdoutFD` (or a new pipe, whose read end is returned)
/// and stderr to `stderrPath`.
func spawnTailer(_ argv: [String], stdoutFD: Int32? = nil, stderrPath: String) -> (pid_t, Int32?) {
    var pipeFDs: [Int32] = [-1, -1]
    if stdoutFD == nil { guard pipe(&pipeFDs) == 0 else { fail("pipe failed") } }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    posix_spawn_file_actions_adddup2(&actions, stdoutFD ?? pipeFDs[1], 1)
    if stdoutFD == nil {
        posix_spawn_file_actions_addclose(&actions, pipeFDs[0])
        posix_spawn_file_actions_addclose(&actions, pipeFDs[1])
    }
    posix_spawn_file_actions_addopen(&actions, 2, stderrPath, O_WRONLY | O_CREAT | O_APPEND, 0o644)
    var cArgs: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) }
    cArgs.append(nil)
    defer { cArgs.forEach { free($0) } }
    var pid = pid_t()
    let rc = posix_spawn(&pid, argv[0], &actions, nil, cArgs, environ)
    posix_spawn_file_actions_destroy(&actions)
    if stdoutFD == nil { close(pipeFDs[1]) }
    guard rc == 0 else { fail("cannot start \(argv[0]): error \(rc)") }
    return (pid, stdoutFD == nil ? pipeFDs[0] : nil)
}

func stopTailer(_ pid: pid_t, _ signal: Int32 = SIGTERM) {
    kill(pid, signal)
    var status: Int32 = 0
    waitpid(pid, &status, 0)
}

/// Reads lines from `fd` until `done()` says so or nothing arrives for `idleSeconds`
/// after `writerDone()`; calls `line` with each line (without its break).
func readLines(
    _ fd: Int32, idleSeconds: Double = 3, writerDone: () -> Bool, done: () -> Bool,
    _ line: (UnsafeBufferPointer<UInt8>) -> Void
) {
    let size = 1 << 20
    let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: size)
    defer { buffer.deallocate() }
    var carried: [UInt8] = []
    var lastData = now()
    while !done() {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let ready = poll(&poller, 1, 100)
        if ready <= 0 {
            if writerDone() && now() - lastData > idleSeconds { return }
            continue
        }
        let n = read(fd, buffer, size)
        if n < 0 && errno == EINTR { continue }
        if n <= 0 { return }
        lastData = now()
        var start = 0
        for i in 0..<n where buffer[i] == 10 {
            if carried.isEmpty {
                line(UnsafeBufferPointer(start: buffer + start, count: i - start))
            } else {
                carried.append(contentsOf: UnsafeBufferPointer(start: buffer + start, count: i - start))
                carried.withUnsafeBufferPointer { line($0) }
                carried.removeAll(keepingCapacity: true)
            }
            start = i + 1
        }
        if start < n { carried.append(contentsOf: UnsafeBufferPointer(start: buffer + start, count: n - start)) }
    }
}

/// The decimal number at the start of `bytes`, and the one after the first space (or nil).
func twoNumbers(_ bytes: UnsafeBufferPointer<UInt8>) -> (Int, UInt64?)? {
    var i = 0
    var first = 0
    var digits = 0
    while i < bytes.count, bytes[i] >= 48, bytes[i] <= 57 {
        first = first * 10 + Int(bytes[i] - 48)
        i += 1
        digits += 1
    }
    if digits == 0 { return nil }
    guard i < bytes.count, bytes[i] == 32 else { return (first, nil) }
    i += 1
    var second: UInt64 = 0
    digits = 0
    while i < bytes.count, bytes[i] >= 48, bytes[i] <= 57 {
        second = second * 10 + UInt64(bytes[i] - 48)
        i += 1
        digits += 1
    }
    return (first, digits > 0 ? second : nil)
}

func percentile(_ sorted: [Double], _ p: Double) -> Double {
    if sorted.isEmpty { return .nan }
    return sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * p + 0.5))]
}

struct RotationOptions {
    var ruvTail = ".build/release/ruv-tail"
    var tail = "/usr/bin/tail"
    var runs = 3
}

func parseRotationOptions(_ arguments: ArraySlice<String>) -> RotationOptions {
    var options = RotationOptions()
    var arguments = arguments
    while let argument = arguments.popFirst() {
        guard let value = arguments.popFirst() else { fail("\(argument) needs a value") }
        switch argument {
        case "--ruv-tail": options.ruvTail = value
        case "--tail": options.tail = value
        case "--runs":
            guard let n = Int(value), n > 0 else { fail("bad --runs \(value)") }
            options.runs = n
        default: fail("unknown option \(argument)")
        }
    }
    guard access(options.ruvTail, X_OK) == 0 else { fail("no ruv-tail at \(options.ruvTail)") }
    return options
}

/// Waits until the tailer prints the writer's `ready` lines (start-up excluded from delays).
func waitUntilFollowing(_ path: String, _ fd: Int32) {
    let appender = open(path, O_WRONLY | O_APPEND)
    defer { close(appender) }
    var seen = false
    var k = 0
    while !seen && k < 400 {
        writeFully(appender, "ready \(k)\n")
        k += 1
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        if poll(&poller, 1, 50) > 0 {
            var byte: UInt8 = 0
            // Read up to and including a line break; the ready lines are not counted.
            while read(fd, &byte, 1) == 1 {
                if byte == 10 {
                    seen = true
                    var more = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                    if poll(&more, 1, 20) <= 0 { break }
                }
            }
        }
    }
    if !seen { fail("the tailer never started following \(path)") }
}

// MARK: - latency

func runLatency(_ options: RotationOptions) {
    let total = 60_000
    print("tail latency: 20,000 lines/s for 3 s, delay from write to arrival; \(options.runs) runs each")
    let tailers: [(String, (String) -> [String])] = [
        ("tail -F", { [options.tail, "-F", "-n", "+1", $0] }),
        ("ruv-tail", { [options.ruvTail, "-n", "+1", $0] }),
    ]
    var p99s: [String: Double] = [:]
    for rotate in [false, true] {
        for (name, argv) in tailers {
            var all: [Double] = []
            var lost = 0
            for _ in 0..<options.runs {
                let directory = makeDirectory()
                let path = directory + "/app.log"
                close(open(path, O_WRONLY | O_CREAT, 0o644))
                let (pid, out) = spawnTailer(argv(path), stderrPath: "/dev/null")
                waitUntilFollowing(path, out!)
                let written = Shared(0)
                let writer = BenchThread {
                    var fd = open(path, O_WRONLY | O_APPEND)
                    let start = monotonicNanoseconds()
                    var i = 0
                    var rotations = 0
                    while i < total {
                        // 20 lines per millisecond, paced against the clock.
                        let due = start + UInt64(i / 20) * 1_000_000
                        let t = monotonicNanoseconds()
                        if t < due { usleep(UInt32((due - t) / 1000)) }
                        var batch = ""
                        let stamp = monotonicNanoseconds()
                        for _ in 0..<20 {
                            batch += "\(i) \(stamp) GET /api/v1/items\n"
                            i += 1
                        }
                        writeFully(fd, batch)
                        written.value = i
                        if rotate && rotations < 3 && i >= (rotations + 1) * total / 4 {
                            rotations += 1
                            rename(path, path + ".\(rotations)")
                            for _ in 0..<5 {
                                writeFully(fd, "\(i) \(monotonicNanoseconds()) after the rename\n")
                                i += 1
                            }
                            close(fd)
                            fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0o644)
                        }
                    }
                    close(fd)
                }
                var seen = [Bool](repeating: false, count: total + 64)
                var received = 0
                var delays: [Double] = []
                delays.reserveCapacity(total)
                readLines(out!, writerDone: { written.value >= total }, done: { received >= total }) { line in
                    let arrived = monotonicNanoseconds()
                    guard let (n, stamp) = twoNumbers(line), let stamp, n < seen.count, !seen[n] else { return }
                    seen[n] = true
                    received += 1
                    delays.append(Double(arrived &- stamp) / 1e6)
                }
                writer.join()
                stopTailer(pid)
                close(out!)
                removeDirectory(directory)
                all += delays
                lost += max(0, written.value - received)
            }
            all.sort()
            let label = "\(name)\(rotate ? ", 3 renames" : ", no rotation")"
            p99s[label] = percentile(all, 0.99)
            print("  \(label.padding(28)) p50 \(format(percentile(all, 0.5), 2)) ms, p99 \(format(percentile(all, 0.99), 2)) ms, max \(format(all.last ?? .nan, 1)) ms, lost \(lost) lines")
        }
    }
    if let with = p99s["ruv-tail, 3 renames"], let without = p99s["ruv-tail, no rotation"] {
        print("  ruv-tail p99 with renames / without: \(format(with / without))x")
    }
}

extension String {
    func padding(_ width: Int) -> String { self + String(repeating: " ", count: max(0, width - count)) }
}

// MARK: - copytruncate

func runCopyTruncate(_ options: RotationOptions) {
    let total = 250_000
    print("copy-truncate: 50,000 lines/s for 5 s, copytruncate every second (5 rotations); \(options.runs) runs each")
    let tailers: [(String, (String) -> [String])] = [
        ("tail -F", { [options.tail, "-F", "-n", "+1", $0] }),
        ("ruv-tail", { [options.ruvTail, "-n", "+1", $0] }),
    ]
    for run in 1...options.runs {
        var line = "  run \(run):"
        for (name, argv) in tailers {
            let directory = makeDirectory()
            let path = directory + "/app.log"
            let errors = directory + "/stderr"
            close(open(path, O_WRONLY | O_CREAT, 0o644))
            let (pid, out) = spawnTailer(argv(path), stderrPath: errors)
            waitUntilFollowing(path, out!)
            let written = Shared(0)
            let writer = BenchThread {
                let fd = open(path, O_WRONLY | O_APPEND)
                let start = monotonicNanoseconds()
                var i = 0
                while i < total {
                    let due = start + UInt64(i / 50) * 1_000_000
                    let t = monotonicNanoseconds()
                    if t < due { usleep(UInt32((due - t) / 1000)) }
                    var batch = ""
                    for _ in 0..<50 {
                        batch += "\(i) 2026-11-23T12:00:00Z INFO GET /api/v1/items\n"
                        i += 1
                    }
                    writeFully(fd, batch)
                    written.value = i
                }
                close(fd)
            }
            let rotator = BenchThread {
                for k in 1...5 {
                    while written.value < k * total / 6 { usleep(1000) }
                    // logrotate's copytruncate: copy, then truncate in place; the writer
                    // goes on meanwhile.
                    let source = open(path, O_RDONLY)
                    let copy = open(path + ".\(k)", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
                    var buffer = [UInt8](repeating: 0, count: 1 << 20)
                    while true {
                        let n = buffer.withUnsafeMutableBytes { read(source, $0.baseAddress, $0.count) }
                        if n <= 0 { break }
                        _ = buffer.withUnsafeBytes { write(copy, $0.baseAddress, n) }
                    }
                    close(source)
                    close(copy)
                    truncate(path, 0)
                }
            }
            var seen = [Bool](repeating: false, count: total)
            var received = 0
            var twice = 0
            readLines(out!, writerDone: { written.value >= total }, done: { false }) { line in
                guard let (n, _) = twoNumbers(line), n < total else { return }
                if seen[n] {
                    twice += 1
                    return
                }
                seen[n] = true
                received += 1
            }
            writer.join()
            rotator.join()
            stopTailer(pid)
            close(out!)
            // What was on disk at the end: the copies and the file.
            var onDisk = [Bool](repeating: false, count: total)
            for file in [path] + (1...5).map({ path + ".\($0)" }) {
                guard let f = fopen(file, "r") else { continue }
                var raw: UnsafeMutablePointer<CChar>?
                var capacity = 0
                while getline(&raw, &capacity, f) > 0 {
                    let count = strlen(raw!)
                    raw!.withMemoryRebound(to: UInt8.self, capacity: count) { p in
                        if let (n, _) = twoNumbers(UnsafeBufferPointer(start: p, count: count)), n < total { onDisk[n] = true }
                    }
                }
                free(raw)
                fclose(f)
            }
            let unavoidable = onDisk.filter { !$0 }.count
            var reportedBytes = 0
            if let f = fopen(errors, "r") {
                var raw: UnsafeMutablePointer<CChar>?
                var capacity = 0
                while getline(&raw, &capacity, f) > 0 {
                    // "…: bytes A..<B lost: …"
                    let words = String(cString: raw!).split(separator: " ")
                    for (i, word) in words.enumerated() where word == "bytes" && i + 2 < words.count && words[i + 2].hasPrefix("lost") {
                        let bounds = words[i + 1].split(separator: ".")
                        if bounds.count == 2, let a = Int(String(bounds[0])), let b = Int(String(bounds[1].dropFirst())) {
                            reportedBytes += b - a
                        }
                    }
                }
                free(raw)
                fclose(f)
            }
            line += " \(name) lost \(total - received), twice \(twice) (in no file on disk: \(unavoidable))"
            if name == "ruv-tail" { line += ", reported lost \(reportedBytes) bytes (~\(reportedBytes / 47) lines)" }
            line += ";"
            removeDirectory(directory)
        }
        print(line)
    }
}

// MARK: - restart

func runRestart(_ options: RotationOptions) {
    let total = 100_000
    print("restart: ruv-tail --state at 20,000 lines/s, SIGKILL at 1.5 s, rename rotation while down, restarted 2 s later; \(options.runs) runs")
    for run in 1...options.runs {
        let directory = makeDirectory()
        let path = directory + "/app.log"
        let state = directory + "/state"
        let output = directory + "/out"
        close(open(path, O_WRONLY | O_CREAT, 0o644))
        let outFD = open(output, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        let argv = [options.ruvTail, "-n", "+1", "--state", state, path]
        var (pid, _) = spawnTailer(argv, stdoutFD: outFD, stderrPath: "/dev/null")
        let written = Shared(0)
        let rotateNow = Shared(0)
        let writer = BenchThread {
            var fd = open(path, O_WRONLY | O_APPEND)
            let start = monotonicNanoseconds()
            var i = 0
            while i < total {
                let due = start + UInt64(i / 20) * 1_000_000
                let t = monotonicNanoseconds()
                if t < due { usleep(UInt32((due - t) / 1000)) }
                var batch = ""
                for _ in 0..<20 where i < total {
                    batch += "\(i) 2026-11-23T12:00:00Z INFO GET /api/v1/items\n"
                    i += 1
                }
                writeFully(fd, batch)
                written.value = i
                if rotateNow.value == 1 {
                    rotateNow.value = 2
                    rename(path, path + ".1")
                    close(fd)
                    fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0o644)
                }
            }
            close(fd)
        }
        let started = now()
        while now() - started < 1.5 { usleep(10_000) }
        stopTailer(pid, SIGKILL)
        rotateNow.value = 1
        let killed = now()
        while now() - killed < 2 { usleep(10_000) }
        (pid, _) = spawnTailer(argv, stdoutFD: outFD, stderrPath: "/dev/null")
        writer.join()
        // Until every line is printed or nothing new comes for 3 s.
        var last = -1
        var quietSince = now()
        while now() - quietSince < 3 {
            var info = stat()
            stat(output, &info)
            if Int(info.st_size) != last {
                last = Int(info.st_size)
                quietSince = now()
            }
            usleep(50_000)
        }
        stopTailer(pid)
        close(outFD)
        var count = [Int](repeating: 0, count: total)
        if let f = fopen(output, "r") {
            var raw: UnsafeMutablePointer<CChar>?
            var capacity = 0
            while getline(&raw, &capacity, f) > 0 {
                let length = strlen(raw!)
                raw!.withMemoryRebound(to: UInt8.self, capacity: length) { p in
                    if let (n, _) = twoNumbers(UnsafeBufferPointer(start: p, count: length)), n < total { count[n] += 1 }
                }
            }
            free(raw)
            fclose(f)
        }
        let lost = count.filter { $0 == 0 }.count
        let duplicated = count.reduce(0) { $0 + max(0, $1 - 1) }
        print("  run \(run): lost \(lost), printed twice \(duplicated) (of \(total))")
        removeDirectory(directory)
    }
}

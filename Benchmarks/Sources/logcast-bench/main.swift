// logcast-bench: lines per second from an appended file to 1, 10 and 100 logcast clients,
// with `tail -F FILE | wc -l` on the same kind of file as the one-reader reference.
//
//     logcast-bench [--logcast PATH] [--tail PATH] [--lines N] [--runs R] [--clients 1,10,100]
//
// Build the daemon first, in release, from the repository root:
//
//     swift build -c release --package-path Sources/logcast
//     swift run -c release --package-path Benchmarks logcast-bench
//
// (the default PATH is `Sources/logcast/.build/release/logcast` from the repository root, or
// `../Sources/logcast/.build/release/logcast` when run from `Benchmarks/`).
//
// One run, for C clients: a fresh empty file in a temporary directory; `logcast FILE
// --listen 127.0.0.1:0 --heartbeat 0 --idle-timeout 0 --queue-limit 1GiB` (so no line is
// dropped); the port is read from its "listening on" line; C plain TCP connections. Then
// synchronization: logcast follows the file from its end, so `S` lines are appended every
// 20 ms until every client has received one. Then the clock starts and N data lines
// (prepared beforehand, ~60 bytes each, starting with `M`) are appended in 1 MiB write(2)s,
// cut at line boundaries, while one poll() loop reads every client; the clock stops when
// every client has received all N `M` lines (a line is classified by its first byte after
// the `<file>: ` prefix, so sync lines still in flight are not counted). Then the clients
// close and logcast gets SIGTERM; its CPU time comes from wait4.
//
// The reference is the same run with `tail -n +1 -F FILE` (stdout on a pipe to this process,
// which counts the lines as `wc -l` would) in place of logcast and its clients: started on
// the empty file, synchronized with `S` lines the same way, timed from the first data write
// to its N-th `M` line.
//
// Each configuration runs R times (the configurations alternate within a round so a busy
// stretch of the shared machine hits all of them); the median time is reported.
//
// Plain POSIX (posix_spawn, pipes, sockets, poll, wait4) and no ReactiveUV: the harness
// must not be what is measured.
import Glibc

struct Options {
    var logcast: String?
    var tail = "/usr/bin/tail"
    var lines = 1_000_000
    var runs = 3
    var clients = [1, 10, 100]
}

func fail(_ message: String) -> Never {
    let text = "logcast-bench: \(message)\n"
    _ = text.withCString { write(2, $0, strlen($0)) }
    exit(1)
}

func note(_ message: String) {
    let text = message + "\n"
    _ = text.withCString { write(2, $0, strlen($0)) }
}

let usage = """
    usage: logcast-bench [--logcast PATH] [--tail PATH] [--lines N] [--runs R] [--clients 1,10,100]
    Build the daemon first, from the repository root: swift build -c release --package-path Sources/logcast
    (default PATH: Sources/logcast/.build/release/logcast, or ../Sources/logcast/.build/release/logcast from Benchmarks/).
    Defaults: --lines 1000000 --runs 3 --clients 1,10,100.
    """

func parse() -> Options {
    var options = Options()
    var arguments = CommandLine.arguments.dropFirst()
    while let argument = arguments.popFirst() {
        if argument == "--help" || argument == "-h" {
            print(usage)
            exit(0)
        }
        guard let value = arguments.popFirst() else { fail("\(argument) needs a value\n\(usage)") }
        switch argument {
        case "--logcast": options.logcast = value
        case "--tail": options.tail = value
        case "--lines":
            guard let n = Int(value), n > 0 else { fail("bad --lines \(value)") }
            options.lines = n
        case "--runs":
            guard let n = Int(value), n > 0 else { fail("bad --runs \(value)") }
            options.runs = n
        case "--clients":
            let counts = value.split(separator: ",").compactMap { Int($0) }
            guard !counts.isEmpty, counts.allSatisfy({ $0 > 0 }) else { fail("bad --clients \(value)") }
            options.clients = counts
        default: fail("unknown option \(argument)\n\(usage)")
        }
    }
    return options
}

func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

func writeAll(_ fd: Int32, _ base: UnsafeRawPointer, _ count: Int) {
    var done = 0
    while done < count {
        let n = write(fd, base + done, count - done)
        if n < 0 && errno == EINTR { continue }
        if n < 0 { fail("write failed: errno \(errno)") }
        done += n
    }
}

/// The N data lines, built before any clock starts, and where each ~1 MiB write ends (at a
/// line break, so a reader never sees half a line at the end of the file).
struct Payload {
    var bytes: [UInt8] = []
    var chunkEnds: [Int] = []

    init(lines count: Int) {
        bytes.reserveCapacity(count * 64)
        let levels = ["INFO", "WARN", "DEBUG", "ERROR"]
        var chunkStart = 0
        for i in 0..<count {
            let line = "M\(i) 2026-11-21T12:00:00Z \(levels[i % 4]) GET /api/v1/items/\(i % 9973) \(i % 997)ms\n"
            bytes.append(contentsOf: line.utf8)
            if bytes.count - chunkStart >= 1 << 20 || i == count - 1 {
                chunkEnds.append(bytes.count)
                chunkStart = bytes.count
            }
        }
    }
}

/// One byte stream being counted: a client connection, or tail's stdout.
struct Reader {
    var fd: Int32
    /// Bytes before the text of a line: `"<file>: "` for logcast, none for tail.
    var prefix: Int
    var offsetInLine = 0
    var marker: UInt8 = 0
    var data = 0
    var synced = false
    var closed = false

    init(fd: Int32, prefix: Int) {
        self.fd = fd
        self.prefix = prefix
    }

    /// Counts the lines in `n` bytes: `M` lines are data, an `S` line marks the sync.
    mutating func consume(_ buffer: UnsafeMutableRawPointer, _ n: Int) {
        let bytes = buffer.assumingMemoryBound(to: UInt8.self)
        var pos = 0
        while pos < n {
            if offsetInLine <= prefix {
                let at = pos + (prefix - offsetInLine)
                if at < n { marker = bytes[at] }
            }
            guard let hit = memchr(bytes + pos, 10, n - pos) else {
                offsetInLine += n - pos
                return
            }
            let end = UnsafeMutableRawPointer(hit) - buffer
            if marker == UInt8(ascii: "M") { data += 1 } else if marker == UInt8(ascii: "S") { synced = true }
            marker = 0
            offsetInLine = 0
            pos = end + 1
        }
    }
}

let bufferSize = 1 << 20
nonisolated(unsafe) let buffer = UnsafeMutableRawPointer.allocate(byteCount: bufferSize, alignment: 16)

/// Polls every reader once (waiting up to `timeout` ms) and reads what is there.
func pump(_ readers: inout [Reader], _ fds: inout [pollfd], timeout: Int32) {
    for i in fds.indices { fds[i].revents = 0 }
    let ready = poll(&fds, nfds_t(fds.count), timeout)
    if ready < 0 && errno != EINTR { fail("poll failed: errno \(errno)") }
    guard ready > 0 else { return }
    for i in fds.indices where fds[i].revents != 0 {
        while true {
            let n = read(readers[i].fd, buffer, bufferSize)
            if n > 0 {
                readers[i].consume(buffer, n)
                if n < bufferSize { break }
                continue
            }
            if n < 0 && (errno == EAGAIN || errno == EINTR) { break }
            readers[i].closed = true
            fds[i].fd = -1
            break
        }
    }
}

/// Synchronizes, appends the payload, and returns the seconds until every reader has all lines.
func drive(_ readers: inout [Reader], file: String, payload: Payload, expected: Int, name: String) -> Double {
    for r in readers { _ = fcntl(r.fd, F_SETFL, fcntl(r.fd, F_GETFL) | O_NONBLOCK) }
    var fds = readers.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
    let out = open(file, O_WRONLY | O_APPEND)
    guard out >= 0 else { fail("cannot open \(file): errno \(errno)") }
    defer { close(out) }

    let syncLine: [UInt8] = Array("S sync\n".utf8)
    let syncDeadline = now() + 60
    while !readers.allSatisfy({ $0.synced }) {
        if now() > syncDeadline {
            fail("\(name): only \(readers.filter { $0.synced }.count) of \(readers.count) readers saw a sync line in 60 s")
        }
        if let dead = readers.first(where: { $0.closed }) { fail("\(name): reader fd \(dead.fd) closed during sync") }
        syncLine.withUnsafeBytes { writeAll(out, $0.baseAddress!, $0.count) }
        let until = now() + 0.02
        while now() < until && !readers.allSatisfy({ $0.synced }) {
            pump(&readers, &fds, timeout: 5)
        }
    }
    for i in readers.indices { readers[i].data = 0 }

    let start = now()
    var chunk = 0
    var written = 0
    var lastProgress = start
    var lastTotal = 0
    payload.bytes.withUnsafeBytes { bytes in
        while true {
            if chunk < payload.chunkEnds.count {
                let end = payload.chunkEnds[chunk]
                writeAll(out, bytes.baseAddress! + written, end - written)
                written = end
                chunk += 1
                pump(&readers, &fds, timeout: 0)
            } else {
                pump(&readers, &fds, timeout: 100)
            }
            if readers.allSatisfy({ $0.data >= expected }) { break }
            let total = readers.reduce(0) { $0 + $1.data }
            if total != lastTotal {
                lastTotal = total
                lastProgress = now()
            } else if chunk == payload.chunkEnds.count && now() - lastProgress > 30 {
                let got = readers.map { $0.data }
                fail("\(name): no progress for 30 s; lines received: min \(got.min()!), max \(got.max()!) of \(expected)")
            }
            if let dead = readers.first(where: { $0.closed && $0.data < expected }) {
                fail("\(name): reader fd \(dead.fd) closed after \(dead.data) of \(expected) lines")
            }
        }
    }
    return now() - start
}

struct Child {
    var pid: pid_t
    /// Our end of its stdout pipe.
    var stdout: Int32
}

/// Spawns `argv` with stdout on a pipe and stderr on /dev/null.
func spawn(_ argv: [String]) -> Child {
    var pipeFDs: [Int32] = [0, 0]
    guard pipe(&pipeFDs) == 0 else { fail("pipe failed") }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    posix_spawn_file_actions_adddup2(&actions, pipeFDs[1], 1)
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
    posix_spawn_file_actions_addclose(&actions, pipeFDs[0])
    posix_spawn_file_actions_addclose(&actions, pipeFDs[1])
    let cArgs = argv.map { strdup($0) } + [nil]
    defer { cArgs.forEach { free($0) } }
    var pid = pid_t()
    let rc = posix_spawn(&pid, argv[0], &actions, nil, cArgs, environ)
    posix_spawn_file_actions_destroy(&actions)
    close(pipeFDs[1])
    guard rc == 0 else { fail("cannot start \(argv[0]): error \(rc)") }
    return Child(pid: pid, stdout: pipeFDs[0])
}

/// SIGTERM, then the child's CPU time (user + system) in seconds.
func stop(_ child: Child) -> Double {
    kill(child.pid, SIGTERM)
    var status: Int32 = 0
    var usage = rusage()
    _ = wait4(child.pid, &status, 0, &usage)
    close(child.stdout)
    return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
        + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
}

/// Reads logcast's stdout until its "listening on HOST:PORT; connect with: nc HOST PORT" line.
func listeningPort(_ child: Child) -> UInt16 {
    var text: [UInt8] = []
    var byte: UInt8 = 0
    let deadline = now() + 60
    while true {
        var fd = pollfd(fd: child.stdout, events: Int16(POLLIN), revents: 0)
        if now() > deadline { fail("logcast printed no listening line in 60 s") }
        guard poll(&fd, 1, 1000) > 0 else { continue }
        let n = read(child.stdout, &byte, 1)
        if n < 0 && errno == EINTR { continue }
        if n <= 0 { fail("logcast exited before listening (output: \(String(decoding: text, as: UTF8.self)))") }
        if byte != 10 {
            text.append(byte)
            continue
        }
        let line = String(decoding: text, as: UTF8.self)
        text.removeAll()
        if line.contains("listening on"), let last = line.split(separator: " ").last, let port = UInt16(last) {
            return port
        }
    }
}

func connectClient(port: UInt16) -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { fail("socket failed: errno \(errno)") }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let rc = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard rc == 0 else { fail("connect to 127.0.0.1:\(port) failed: errno \(errno)") }
    return fd
}

struct Run {
    var seconds: Double
    var cpu: Double
}

func makeFile(_ directory: String, _ run: Int) -> String {
    let file = directory + "/app-\(run).log"
    let fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    guard fd >= 0 else { fail("cannot create \(file): errno \(errno)") }
    close(fd)
    return file
}

nonisolated(unsafe) var fileCounter = 0

func runLogcast(_ path: String, clients: Int, directory: String, payload: Payload, lines: Int) -> Run {
    fileCounter += 1
    let file = makeFile(directory, fileCounter)
    defer { unlink(file) }
    let child = spawn([path, file, "--listen", "127.0.0.1:0", "--heartbeat", "0", "--idle-timeout", "0",
                       "--queue-limit", "\(1 << 30)", "--tick", "60"])
    let port = listeningPort(child)
    var readers = (0..<clients).map { _ in Reader(fd: connectClient(port: port), prefix: file.utf8.count + 2) }
    let seconds = drive(&readers, file: file, payload: payload, expected: lines, name: "logcast, \(clients) clients")
    for r in readers { close(r.fd) }
    return Run(seconds: seconds, cpu: stop(child))
}

func runTail(_ path: String, directory: String, payload: Payload, lines: Int) -> Run {
    fileCounter += 1
    let file = makeFile(directory, fileCounter)
    defer { unlink(file) }
    let child = spawn([path, "-n", "+1", "-F", file])
    var readers = [Reader(fd: child.stdout, prefix: 0)]
    let seconds = drive(&readers, file: file, payload: payload, expected: lines, name: "tail -F")
    return Run(seconds: seconds, cpu: stop(child))
}

func format(_ value: Double, _ digits: Int = 2) -> String {
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    let rounded = (value * scale).rounded() / scale
    return "\(rounded)"
}

/// 1234567.8 → "1,234,568"
func grouped(_ value: Double) -> String {
    let digits = Array(String(Int(value.rounded())))
    var out = ""
    for (i, c) in digits.enumerated() {
        if i > 0 && (digits.count - i) % 3 == 0 { out.append(",") }
        out.append(c)
    }
    return out
}

signal(SIGPIPE, SIG_IGN)
let options = parse()
let logcastPath: String
if let given = options.logcast {
    logcastPath = given
} else {
    logcastPath = ["Sources/logcast/.build/release/logcast", "../Sources/logcast/.build/release/logcast"].first { access($0, X_OK) == 0 }
        ?? "Sources/logcast/.build/release/logcast"
}
guard access(logcastPath, X_OK) == 0 else {
    fail("no logcast at \(logcastPath): build it first with `swift build -c release --package-path Sources/logcast` in the repository root, or pass --logcast PATH\n\(usage)")
}
guard access(options.tail, X_OK) == 0 else { fail("no tail at \(options.tail); pass --tail PATH") }

var template = Array("/tmp/logcast-bench-XXXXXX".utf8CString)
guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else { fail("mkdtemp failed") }
let directory = String(cString: made)
let payload = Payload(lines: options.lines)

enum Config: Hashable {
    case tail
    case logcast(Int)
}
let configs = [Config.tail] + options.clients.map { Config.logcast($0) }
var results: [Config: [Run]] = [:]
for round in 1...options.runs {
    for config in configs {
        let run: Run
        switch config {
        case .tail:
            run = runTail(options.tail, directory: directory, payload: payload, lines: options.lines)
            note("round \(round): tail -F: \(format(run.seconds, 3)) s, CPU \(format(run.cpu, 3)) s")
        case .logcast(let clients):
            run = runLogcast(logcastPath, clients: clients, directory: directory, payload: payload, lines: options.lines)
            note("round \(round): logcast, \(clients) clients: \(format(run.seconds, 3)) s, CPU \(format(run.cpu, 3)) s")
        }
        results[config, default: []].append(run)
    }
}
rmdir(directory)

var cpuModel = "?"
if let f = fopen("/proc/cpuinfo", "r") {
    var line: UnsafeMutablePointer<CChar>? = nil
    var capacity = 0
    while getline(&line, &capacity, f) > 0 {
        let text = String(cString: line!)
        if text.hasPrefix("model name"), let colon = text.firstIndex(of: ":") {
            cpuModel = String(text[text.index(after: colon)...].dropFirst().dropLast())
            break
        }
    }
    free(line)
    fclose(f)
}
print("logcast throughput: \(options.lines) lines (\(format(Double(payload.bytes.count) / 1e6, 1)) MB) appended in 1 MiB writes, median of \(options.runs) runs; cores: \(sysconf(Int32(_SC_NPROCESSORS_ONLN))) (\(cpuModel))")
print("")
print("| reader | clients | median time (s) | lines/s per client | aggregate lines/s | reader CPU (s) |")
print("| --- | ---: | ---: | ---: | ---: | ---: |")
for config in configs {
    let runs = results[config]!.sorted { $0.seconds < $1.seconds }
    let median = runs[runs.count / 2]
    let perClient = Double(options.lines) / median.seconds
    switch config {
    case .tail:
        print("| `tail -F FILE \\| wc -l` (reference) | 1 | \(format(median.seconds, 3)) | \(grouped(perClient)) | \(grouped(perClient)) | \(format(median.cpu, 3)) |")
    case .logcast(let clients):
        print("| logcast | \(clients) | \(format(median.seconds, 3)) | \(grouped(perClient)) | \(grouped(perClient * Double(clients))) | \(format(median.cpu, 3)) |")
    }
}

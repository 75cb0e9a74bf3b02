// logcast-bench: logcast's throughput, fan-out and responsiveness, beside `tail -F | wc -l`
// and rsyslog (imfile -> TCP forward) measured in the same run.
//
//     logcast-bench [--logcast PATH] [--tail PATH] [--rsyslogd PATH] [--lines N] [--runs R]
//                   [--rows tail,rsyslog,one,filtered,hundred,tenk,nats] [--tenk-clients N]
//     logcast-bench costs …   (the web view's and /metrics' costs: Costs.swift)
//
// Build the daemon first, in release, from the repository root:
//
//     swift build -c release --package-path Sources/logcast
//     swift run -c release --package-path Benchmarks logcast-bench
//
// (the default PATH is `Sources/logcast/.build/release/logcast` from the repository root, or
// `../Sources/logcast/.build/release/logcast` when run from `Benchmarks/`).
//
// Rows (each a fresh empty file in a temporary directory, a fresh process):
// - `tail`: `tail -n +1 -F FILE` with its stdout on a pipe to this process, which counts the
//   lines as `wc -l` would.
// - `rsyslog`: `rsyslogd -n` with imfile on FILE and an omfwd TCP action to a listener in
//   this process (installed with apt-get when missing and we are root).
// - `one`: logcast, 1 client taking every line.
// - `filtered`: logcast, 100 clients, client c with `GREP shard=c$` (each line ends with
//   `shard=<i mod 100>`, so each takes 1% of the lines; one filter pass serves them all).
//   Reported as ingest lines/s: the file's lines over the time until every client has its 1%.
// - `hundred`: logcast, 100 clients taking every line (deliveries/s = 100 x lines/s).
// - `tenk`: logcast with 10,000 idle clients (this process raises its descriptor limit; the
//   daemon inherits it): RSS per idle client from /proc/PID/status, then a burst of 1,000
//   lines (10M deliveries) during which a control client's `STATS` round trip is timed.
// - `nats`: logcast's NATS path, by running `logcast-nats-bench N` (built beside this
//   program; it starts real nats-servers, needs `nats-server` installed, and writes its own
//   file of N lines of ~87 bytes beforehand): file → JetStream through the edge into a
//   1-node (R1) and a 3-node (R3) stream, and stream → a hub client's `SINCE 1`; three rows,
//   beside rsyslog's file → TCP rate of the same run.
//
// One throughput run: synchronization first (logcast and tail follow the file from its end,
// so `S` lines are appended every 20 ms until every reader has one); then the clock starts
// and N data lines (prepared beforehand, ~75 bytes, starting with `M`) are appended in 1 MiB
// write(2)s cut at line boundaries while one poll() loop reads every reader; the clock stops
// when every reader has all its `M` lines. Readers classify a line by its first byte after
// the `<file>: ` prefix (rsyslog: after the first `: `), so sync lines still in flight are
// not counted. The daemons' CPU time comes from wait4.
//
// Each row runs R times (rows alternate within a round, so a busy stretch of the shared
// machine hits all of them); the median is reported.
//
// Plain POSIX (posix_spawn, pipes, sockets, poll, wait4) and no ReactiveUV: the harness
// must not be what is measured.
import Glibc

struct Options {
    var logcast: String?
    var tail = "/usr/bin/tail"
    var rsyslogd = "/usr/sbin/rsyslogd"
    var lines = 1_000_000
    var runs = 3
    var rows = ["tail", "rsyslog", "one", "filtered", "hundred", "tenk", "nats"]
    var tenkClients = 10_000
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
    usage: logcast-bench [--logcast PATH] [--tail PATH] [--rsyslogd PATH] [--lines N] [--runs R]
                         [--rows tail,rsyslog,one,filtered,hundred,tenk,nats] [--tenk-clients N]
    Build the daemon first, from the repository root: swift build -c release --package-path Sources/logcast
    (default PATH: Sources/logcast/.build/release/logcast, or ../Sources/logcast/.build/release/logcast from Benchmarks/).
    Defaults: --lines 1000000 --runs 3, every row, --tenk-clients 10000.
    logcast-bench costs --help: the costs of --http (web view clients, /metrics scrapes).
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
        case "--rsyslogd": options.rsyslogd = value
        case "--lines":
            guard let n = Int(value), n > 0 else { fail("bad --lines \(value)") }
            options.lines = n
        case "--runs":
            guard let n = Int(value), n > 0 else { fail("bad --runs \(value)") }
            options.runs = n
        case "--rows":
            let rows = value.split(separator: ",").map(String.init)
            let known = Set(Options().rows)
            guard !rows.isEmpty, rows.allSatisfy({ known.contains($0) }) else { fail("bad --rows \(value)\n\(usage)") }
            options.rows = rows
        case "--tenk-clients":
            guard let n = Int(value), n > 0 else { fail("bad --tenk-clients \(value)") }
            options.tenkClients = n
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

func writeText(_ fd: Int32, _ text: String) {
    let bytes = Array(text.utf8)
    bytes.withUnsafeBytes { writeAll(fd, $0.baseAddress!, $0.count) }
}

/// The N data lines, built before any clock starts, and where each ~1 MiB write ends (at a
/// line break, so a reader never sees half a line at the end of the file). Line i ends with
/// `shard=<i mod 100>`.
struct Payload {
    var bytes: [UInt8] = []
    var chunkEnds: [Int] = []

    init(lines count: Int) {
        bytes.reserveCapacity(count * 80)
        let levels = ["INFO", "WARN", "DEBUG", "ERROR"]
        var chunkStart = 0
        for i in 0..<count {
            let line = "M\(i) 2026-11-21T12:00:00Z \(levels[i % 4]) GET /api/v1/items/\(i % 9973) \(i % 997)ms shard=\(i % 100)\n"
            bytes.append(contentsOf: line.utf8)
            if bytes.count - chunkStart >= 1 << 20 || i == count - 1 {
                chunkEnds.append(bytes.count)
                chunkStart = bytes.count
            }
        }
    }
}

/// One byte stream being counted: a client connection, tail's stdout, rsyslog's forward.
struct Reader {
    enum Framing {
        /// The marker is the byte after this many bytes (`<file>: ` for logcast, none for tail).
        case prefix(Int)
        /// The marker is the first byte after the line's first `": "` (a syslog line).
        case afterColon
    }

    var fd: Int32
    var framing: Framing
    /// `M` lines this reader must get.
    var expected: Int
    var offsetInLine = 0
    var marker: UInt8 = 0
    /// For `.afterColon`: the previous byte was a `:` / the marker position was reached.
    var sawColon = false
    var markerTaken = false
    var data = 0
    var synced = false
    var closed = false
    /// Lines that are neither data nor sync (replies such as `STATS …`), kept whole.
    var collectOther = false
    var current: [UInt8] = []
    var others: [String] = []

    init(fd: Int32, framing: Framing, expected: Int) {
        self.fd = fd
        self.framing = framing
        self.expected = expected
    }

    /// Counts the lines in `n` bytes: `M` lines are data, an `S` line marks the sync.
    mutating func consume(_ buffer: UnsafeMutableRawPointer, _ n: Int) {
        let bytes = buffer.assumingMemoryBound(to: UInt8.self)
        var pos = 0
        while pos < n {
            switch framing {
            case .prefix(let prefix):
                if offsetInLine <= prefix {
                    let at = pos + (prefix - offsetInLine)
                    if at < n { marker = bytes[at] }
                }
            case .afterColon:
                var k = pos
                while !markerTaken && k < n && bytes[k] != 10 {
                    if sawColon {
                        if bytes[k] != UInt8(ascii: " ") {
                            marker = bytes[k]
                            markerTaken = true
                        }
                    } else if bytes[k] == UInt8(ascii: ":") && k + 1 < n && bytes[k + 1] == UInt8(ascii: " ") {
                        sawColon = true
                        k += 1
                    }
                    k += 1
                }
            }
            guard let hit = memchr(bytes + pos, 10, n - pos) else {
                if collectOther { current.append(contentsOf: UnsafeBufferPointer(start: bytes + pos, count: n - pos)) }
                offsetInLine += n - pos
                return
            }
            let end = UnsafeMutableRawPointer(hit) - buffer
            if marker == UInt8(ascii: "M") {
                data += 1
            } else if marker == UInt8(ascii: "S") {
                synced = true
            } else if collectOther {
                current.append(contentsOf: UnsafeBufferPointer(start: bytes + pos, count: end - pos))
                others.append(String(decoding: current, as: UTF8.self))
            }
            current.removeAll(keepingCapacity: true)
            marker = 0
            sawColon = false
            markerTaken = false
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

/// Appends `S` lines every 20 ms until every reader has seen one.
func synchronize(_ readers: inout [Reader], _ fds: inout [pollfd], out: Int32, name: String) {
    let syncLine: [UInt8] = Array("S sync\n".utf8)
    let syncDeadline = now() + 120
    while !readers.allSatisfy({ $0.synced }) {
        if now() > syncDeadline {
            fail("\(name): only \(readers.filter { $0.synced }.count) of \(readers.count) readers saw a sync line in 120 s")
        }
        if let dead = readers.first(where: { $0.closed }) { fail("\(name): reader fd \(dead.fd) closed during sync") }
        syncLine.withUnsafeBytes { writeAll(out, $0.baseAddress!, $0.count) }
        let until = now() + 0.02
        while now() < until && !readers.allSatisfy({ $0.synced }) {
            pump(&readers, &fds, timeout: 5)
        }
    }
    for i in readers.indices { readers[i].data = 0 }
}

/// Synchronizes, appends the payload, and returns the seconds until every reader has its
/// lines. With `tolerateLoss` (rsyslog), a reader that stops short 10 s after the last
/// write is timed to its last line and the missing lines are counted in `lost`.
func drive(_ readers: inout [Reader], file: String, payload: Payload, name: String, tolerateLoss: Bool = false,
           lost: inout Int) -> Double {
    for r in readers { _ = fcntl(r.fd, F_SETFL, fcntl(r.fd, F_GETFL) | O_NONBLOCK) }
    var fds = readers.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
    let out = open(file, O_WRONLY | O_APPEND)
    guard out >= 0 else { fail("cannot open \(file): errno \(errno)") }
    defer { close(out) }
    synchronize(&readers, &fds, out: out, name: name)

    let start = now()
    var seconds = -1.0
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
            if readers.allSatisfy({ $0.data >= $0.expected }) { break }
            let total = readers.reduce(0) { $0 + $1.data }
            if total != lastTotal {
                lastTotal = total
                lastProgress = now()
            } else if chunk == payload.chunkEnds.count && now() - lastProgress > (tolerateLoss ? 10 : 30) {
                let got = readers.map { $0.data }
                if tolerateLoss {
                    // Timed to the last line that came; the shortfall is reported.
                    lost = readers.reduce(0) { $0 + max(0, $1.expected - $1.data) }
                    seconds = lastProgress - start
                    break
                }
                fail("\(name): no progress for 30 s; lines received: min \(got.min()!), max \(got.max()!)")
            }
            if let dead = readers.first(where: { $0.closed && $0.data < $0.expected }) {
                fail("\(name): reader fd \(dead.fd) closed after \(dead.data) of \(dead.expected) lines")
            }
        }
    }
    return seconds >= 0 ? seconds : now() - start
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

/// A listening socket on 127.0.0.1 (port chosen by the kernel): fd and port.
func listenLocal() -> (fd: Int32, port: UInt16) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let ok = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(fd, $0, length) == 0 && listen(fd, 16) == 0 && getsockname(fd, $0, &length) == 0
        }
    }
    guard ok else { fail("cannot listen on 127.0.0.1: errno \(errno)") }
    return (fd, UInt16(bigEndian: address.sin_port))
}

/// Reads lines from `fd` until one satisfies `done` (bounded); the lines read.
func readReplies(_ fd: Int32, timeout: Double, until done: (String) -> Bool) -> [String] {
    var lines: [String] = []
    var current: [UInt8] = []
    var byte = [UInt8](repeating: 0, count: 65536)
    let deadline = now() + timeout
    while now() < deadline {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&p, 1, 50) > 0 else { continue }
        let n = read(fd, &byte, byte.count)
        if n < 0 && (errno == EAGAIN || errno == EINTR) { continue }
        if n <= 0 { break }
        for b in byte[0..<n] {
            if b == 10 {
                let line = String(decoding: current, as: UTF8.self)
                current.removeAll()
                lines.append(line)
                if done(line) { return lines }
            } else {
                current.append(b)
            }
        }
    }
    return lines
}

/// This process's CPU time (user + system) so far: the readers' side of a run.
func selfCPU() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
        + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
}

struct Run {
    var seconds: Double
    var cpu: Double
    /// Lines that never arrived (rsyslog only; the others must deliver all).
    var lost = 0
    /// This process's CPU during the run: reading and counting what the readers got.
    var benchCPU = 0.0
}

func makeFile(_ directory: String, _ run: Int) -> String {
    let file = directory + "/app-\(run).log"
    let fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    guard fd >= 0 else { fail("cannot create \(file): errno \(errno)") }
    close(fd)
    return file
}

nonisolated(unsafe) var fileCounter = 0

func startLogcast(_ path: String, file: String) -> (Child, UInt16) {
    let child = spawn([path, file, "--listen", "127.0.0.1:0", "--heartbeat", "0", "--idle-timeout", "0",
                       "--queue-limit", "\(1 << 30)", "--tick", "60", "--log-level", "error"])
    return (child, listeningPort(child))
}

/// logcast with `clients` clients; `filtered`: client c takes `shard=c$` (1% each).
func runLogcast(_ path: String, clients: Int, filtered: Bool, directory: String, payload: Payload, lines: Int) -> Run {
    fileCounter += 1
    let file = makeFile(directory, fileCounter)
    defer { unlink(file) }
    let (child, port) = startLogcast(path, file: file)
    var readers: [Reader] = []
    for c in 0..<clients {
        let fd = connectClient(port: port)
        var expected = lines
        if filtered {
            let shard = c % 100
            expected = lines / 100 + (shard < lines % 100 ? 1 : 0)
            // The sync lines too, so synchronization works the same way.
            writeText(fd, "GREP ^S sync|shard=\(shard)$\n")
        }
        readers.append(Reader(fd: fd, framing: .prefix(file.utf8.count + 2), expected: expected))
    }
    if filtered {
        // Asked all at once, so the daemon compiles them in a batch or two.
        for r in readers {
            let reply = readReplies(r.fd, timeout: 120) { $0.hasPrefix("OK GREP") || $0.hasPrefix("ERR") }
            guard reply.last?.hasPrefix("OK GREP") == true else { fail("GREP refused: \(reply)") }
        }
    }
    let name = "logcast, \(clients) clients\(filtered ? " (1% filters)" : "")"
    var lost = 0
    let cpu0 = selfCPU()
    let seconds = drive(&readers, file: file, payload: payload, name: name, lost: &lost)
    let benchCPU = selfCPU() - cpu0
    for r in readers { close(r.fd) }
    return Run(seconds: seconds, cpu: stop(child), benchCPU: benchCPU)
}

func runTail(_ path: String, directory: String, payload: Payload, lines: Int) -> Run {
    fileCounter += 1
    let file = makeFile(directory, fileCounter)
    defer { unlink(file) }
    let child = spawn([path, "-n", "+1", "-F", file])
    var readers = [Reader(fd: child.stdout, framing: .prefix(0), expected: lines)]
    var lost = 0
    let cpu0 = selfCPU()
    let seconds = drive(&readers, file: file, payload: payload, name: "tail -F", lost: &lost)
    return Run(seconds: seconds, cpu: stop(child), benchCPU: selfCPU() - cpu0)
}

/// rsyslogd in the foreground: imfile follows FILE, every message goes to our listener over
/// TCP (omfwd). Its own work directory holds imfile's state and the pid file.
func runRsyslog(_ path: String, directory: String, payload: Payload, lines: Int) -> Run {
    fileCounter += 1
    let file = makeFile(directory, fileCounter)
    let work = directory + "/rsyslog-\(fileCounter)"
    mkdir(work, 0o755)
    defer {
        unlink(file)
        _ = system("rm -rf '\(work)'")
    }
    let listener = listenLocal()
    let config = """
        global(workDirectory="\(work)" maxMessageSize="64k")
        module(load="imfile")
        input(type="imfile" file="\(file)" tag="app:" ruleset="forward")
        ruleset(name="forward") {
            action(type="omfwd" target="127.0.0.1" port="\(listener.port)" protocol="tcp"
                   template="RSYSLOG_TraditionalForwardFormat")
        }
        """
    let configPath = work + "/rsyslog.conf"
    let fd = open(configPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    writeText(fd, config)
    close(fd)
    let child = spawn([path, "-n", "-f", configPath, "-i", work + "/rsyslogd.pid"])
    var p = pollfd(fd: listener.fd, events: Int16(POLLIN), revents: 0)
    // rsyslog connects when it has a first message to forward: write sync lines meanwhile.
    let out = open(file, O_WRONLY | O_APPEND)
    let deadline = now() + 60
    while poll(&p, 1, 100) <= 0 {
        if now() > deadline { fail("rsyslogd never connected (is \(path) working? try it with -N1 -f \(configPath))") }
        writeText(out, "S sync\n")
    }
    close(out)
    let connection = accept(listener.fd, nil, nil)
    close(listener.fd)
    guard connection >= 0 else { fail("accept failed: errno \(errno)") }
    var readers = [Reader(fd: connection, framing: .afterColon, expected: lines)]
    var lost = 0
    let cpu0 = selfCPU()
    let seconds = drive(&readers, file: file, payload: payload, name: "rsyslog", tolerateLoss: true, lost: &lost)
    let benchCPU = selfCPU() - cpu0
    let cpu = stop(child)
    close(connection)
    return Run(seconds: seconds, cpu: cpu, lost: lost, benchCPU: benchCPU)
}

/// A process's resident set size in kB (VmRSS, or VmHWM for the peak).
func residentKB(_ pid: pid_t, field: String = "VmRSS") -> Int {
    guard let f = fopen("/proc/\(pid)/status", "r") else { return 0 }
    defer { fclose(f) }
    var line: UnsafeMutablePointer<CChar>? = nil
    var capacity = 0
    defer { free(line) }
    while getline(&line, &capacity, f) > 0 {
        let text = String(cString: line!)
        if text.hasPrefix(field + ":") {
            return Int(text.split(separator: " ").dropFirst().first { !$0.isEmpty }.map { $0.trimmingCharacters() } ?? "") ?? 0
        }
    }
    return 0
}

extension Substring {
    func trimmingCharacters() -> String { String(self.filter { $0.isNumber }) }
}

struct TenK {
    var clients: Int
    var rssBeforeKB: Int
    var rssIdleKB: Int
    var peakKB: Int
    var burstSeconds: Double
    var statsRoundTrips: [Double]
}

/// A control client on a thread of its own that sends `STATS` and waits for the reply, over
/// and over, until stopped: the round trips are the daemon's, not this process's poll loop
/// (which is busy reading ten thousand sockets during a burst).
final class StatsProber: @unchecked Sendable {
    // `stopRequested` and `trips` are guarded by `mutex`.
    let fd: Int32
    var mutex = pthread_mutex_t()
    var stopRequested = false
    var trips: [Double] = []
    var thread = pthread_t()

    init(fd: Int32) {
        self.fd = fd
        pthread_mutex_init(&mutex, nil)
    }

    func start() {
        let context = Unmanaged.passRetained(self).toOpaque()
        pthread_create(&thread, nil, { context in
            let prober = Unmanaged<StatsProber>.fromOpaque(context!).takeRetainedValue()
            prober.run()
            return nil
        }, context)
    }

    private func run() {
        var pending: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            pthread_mutex_lock(&mutex)
            let stop = stopRequested
            pthread_mutex_unlock(&mutex)
            if stop { return }
            let sent = now()
            writeText(fd, "STATS\n")
            var answered = false
            while !answered {
                let n = read(fd, &chunk, chunk.count)
                if n <= 0 { return }
                pending.append(contentsOf: chunk[0..<n])
                while let nl = pending.firstIndex(of: 10) {
                    let line = String(decoding: pending[..<nl], as: UTF8.self)
                    pending.removeSubrange(...nl)
                    if line.hasPrefix("STATS ") { answered = true }
                }
            }
            let trip = now() - sent
            pthread_mutex_lock(&mutex)
            trips.append(trip)
            pthread_mutex_unlock(&mutex)
            usleep(5_000)
        }
    }

    /// Stops it and returns the round trips (seconds).
    func stop() -> [Double] {
        pthread_mutex_lock(&mutex)
        stopRequested = true
        pthread_mutex_unlock(&mutex)
        pthread_join(thread, nil)
        return trips
    }
}

/// logcast with `count` idle clients: RSS per client, then a 1,000-line burst (count x 1,000
/// deliveries) with STATS round trips timed from a control client meanwhile.
func runTenK(_ path: String, count: Int, directory: String) -> TenK {
    fileCounter += 1
    let file = makeFile(directory, fileCounter)
    defer { unlink(file) }
    let (child, port) = startLogcast(path, file: file)
    let control = connectClient(port: port)
    writeText(control, "PAUSE\n")
    _ = readReplies(control, timeout: 60) { $0 == "OK PAUSE" }
    // One synchronized client first (the file is followed from its end).
    var first = [Reader(fd: connectClient(port: port), framing: .prefix(file.utf8.count + 2), expected: 1000)]
    _ = fcntl(first[0].fd, F_SETFL, fcntl(first[0].fd, F_GETFL) | O_NONBLOCK)
    var firstFDs = [pollfd(fd: first[0].fd, events: Int16(POLLIN), revents: 0)]
    let out = open(file, O_WRONLY | O_APPEND)
    synchronize(&first, &firstFDs, out: out, name: "tenk sync")
    let before = residentKB(child.pid)
    var readers = first
    for _ in 1..<count {
        readers.append(Reader(fd: connectClient(port: port), framing: .prefix(file.utf8.count + 2), expected: 1000))
    }
    // Every client accepted: the daemon counts them.
    var accepted = 0
    let deadline = now() + 120
    while accepted < count + 1 && now() < deadline {
        writeText(control, "STATS\n")
        let reply = readReplies(control, timeout: 30) { $0.hasPrefix("STATS") }.last ?? ""
        accepted = reply.split(separator: " ").first { $0.hasPrefix("clients=") }.map { Int($0.dropFirst(8)) ?? 0 } ?? 0
        if accepted < count + 1 { usleep(100_000) }
    }
    guard accepted == count + 1 else { fail("tenk: only \(accepted) of \(count + 1) clients accepted") }
    let idle = residentKB(child.pid)
    for r in readers { _ = fcntl(r.fd, F_SETFL, fcntl(r.fd, F_GETFL) | O_NONBLOCK) }
    var fds = readers.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }

    // The burst: 1,000 lines in one write, while the prober times STATS round trips.
    let burst = (0..<1000).map { "M\($0) burst line for ten thousand clients shard=\($0 % 100)\n" }.joined()
    _ = fcntl(control, F_SETFL, fcntl(control, F_GETFL) & ~O_NONBLOCK)
    let prober = StatsProber(fd: control)
    let start = now()
    writeText(out, burst)
    prober.start()
    while !readers.allSatisfy({ $0.data >= 1000 }) {
        if now() - start > 300 { fail("tenk: the burst did not reach every client in 300 s") }
        pump(&readers, &fds, timeout: 10)
    }
    let burstSeconds = now() - start
    let trips = prober.stop()
    let peak = residentKB(child.pid, field: "VmHWM")
    close(out)
    for r in readers { close(r.fd) }
    close(control)
    _ = stop(child)
    return TenK(clients: count, rssBeforeKB: before, rssIdleKB: idle, peakKB: peak, burstSeconds: burstSeconds, statsRoundTrips: trips)
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

/// The `nats` row: runs `logcast-nats-bench lines` and reads its three rates (lines/s):
/// file → R1 stream, stream → hub client, file → R3 stream.
func runNats(_ program: String, lines: Int) -> [String: Double] {
    let child = spawn([program, "\(lines)"])
    var output: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let n = read(child.stdout, &buffer, buffer.count)
        if n < 0 && errno == EINTR { continue }
        if n <= 0 { break }
        output += buffer[0..<n]
    }
    var status: Int32 = 0
    _ = waitpid(child.pid, &status, 0)
    close(child.stdout)
    let text = String(decoding: output, as: UTF8.self)
    var rates: [String: Double] = [:]
    for line in text.split(separator: "\n") {
        guard let colon = line.lastIndex(of: ":") else { continue }
        let number = line[line.index(after: colon)...].split(separator: " ").first.flatMap { Double($0) }
        if line.hasPrefix("file → JetStream, 1 node") { rates["nats-r1"] = number }
        if line.hasPrefix("stream → hub client") { rates["nats-hub"] = number }
        if line.hasPrefix("file → JetStream, 3 nodes") { rates["nats-r3"] = number }
        if line.hasPrefix("  R3 from its first stored batch") { rates["nats-r3-steady"] = number }
    }
    guard status == 0, rates.count == 4 else { fail("\(program) failed (status \(status)):\n\(text)") }
    return rates
}

/// rsyslogd, installed with apt-get when missing and we may.
func ensureRsyslog(_ path: String) -> Bool {
    if access(path, X_OK) == 0 { return true }
    note("rsyslogd not found at \(path); trying apt-get install rsyslog")
    if getuid() == 0 {
        _ = system("DEBIAN_FRONTEND=noninteractive apt-get install -y -qq rsyslog >/dev/null 2>&1")
    }
    return access(path, X_OK) == 0
}

signal(SIGPIPE, SIG_IGN)
// `logcast-bench costs …`: the hidden costs of `--http` (Costs.swift), a mode of its own.
if CommandLine.arguments.count > 1 && CommandLine.arguments[1] == "costs" { runCosts(CommandLine.arguments.dropFirst(2)) }
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
var rows = options.rows
// `logcast-nats-bench` sits beside this program (the same build directory).
var natsBench = "logcast-nats-bench"
var exeBytes = [CChar](repeating: 0, count: 4096)
let exeLength = readlink("/proc/self/exe", &exeBytes, exeBytes.count)
if exeLength > 0 {
    let exe = String(decoding: exeBytes[..<exeLength].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    if let slash = exe.lastIndex(of: "/") { natsBench = exe[..<slash] + "/logcast-nats-bench" }
}
let natsServers = ["/usr/sbin/nats-server", "/usr/bin/nats-server"]
if rows.contains("nats") && (access(natsBench, X_OK) != 0 || !natsServers.contains(where: { (path: String) in access(path, X_OK) == 0 })) {
    note("no \(natsBench) (swift build -c release --package-path Benchmarks --product logcast-nats-bench) or no nats-server: the nats rows are left out")
    rows.removeAll { $0 == "nats" }
}
if rows.contains("rsyslog") && !ensureRsyslog(options.rsyslogd) {
    note("no rsyslogd: the rsyslog row is left out")
    rows.removeAll { $0 == "rsyslog" }
}
if rows.contains("tenk") {
    // The daemon inherits this limit: 10,000 clients need more than the usual 1,024.
    var limit = rlimit()
    getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    let want = rlim_t(options.tenkClients * 2 + 256)
    if limit.rlim_cur < want {
        limit.rlim_cur = min(want, limit.rlim_max)
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }
    if limit.rlim_cur < rlim_t(options.tenkClients + 64) {
        fail("the descriptor limit is \(limit.rlim_cur) (hard \(limit.rlim_max)): too low for \(options.tenkClients) clients")
    }
}

var template = Array("/tmp/logcast-bench-XXXXXX".utf8CString)
guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else { fail("mkdtemp failed") }
let directory = String(cString: made)
let payload = Payload(lines: options.lines)

let throughputRows = rows.filter { $0 != "tenk" }.flatMap { $0 == "nats" ? ["nats-r1", "nats-hub", "nats-r3", "nats-r3-steady"] : [$0] }
var results: [String: [Run]] = [:]
var tenks: [TenK] = []
for round in 1...options.runs {
    for row in rows {
        switch row {
        case "tail":
            let run = runTail(options.tail, directory: directory, payload: payload, lines: options.lines)
            note("round \(round): tail -F: \(format(run.seconds, 3)) s, CPU \(format(run.cpu, 3)) s")
            results[row, default: []].append(run)
        case "rsyslog":
            let run = runRsyslog(options.rsyslogd, directory: directory, payload: payload, lines: options.lines)
            note("round \(round): rsyslog: \(format(run.seconds, 3)) s, CPU \(format(run.cpu, 3)) s, lost \(run.lost)")
            results[row, default: []].append(run)
        case "nats":
            let rates = runNats(natsBench, lines: options.lines)
            note("round \(round): nats: R1 \(grouped(rates["nats-r1"]!)), hub \(grouped(rates["nats-hub"]!)), R3 \(grouped(rates["nats-r3"]!)) (from its first stored batch \(grouped(rates["nats-r3-steady"]!))) lines/s")
            for (key, rate) in rates { results[key, default: []].append(Run(seconds: Double(options.lines) / rate, cpu: -1)) }
        case "one", "filtered", "hundred":
            let clients = row == "one" ? 1 : 100
            let run = runLogcast(logcastPath, clients: clients, filtered: row == "filtered", directory: directory,
                                 payload: payload, lines: options.lines)
            note("round \(round): logcast \(row): \(format(run.seconds, 3)) s, CPU \(format(run.cpu, 3)) s")
            results[row, default: []].append(run)
        default:
            let t = runTenK(logcastPath, count: options.tenkClients, directory: directory)
            note("round \(round): logcast \(t.clients) clients: idle RSS \(t.rssIdleKB - t.rssBeforeKB) kB for the clients, burst \(format(t.burstSeconds, 3)) s, STATS max \(format((t.statsRoundTrips.max() ?? 0) * 1000, 1)) ms")
            tenks.append(t)
        }
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
print("logcast-bench: \(options.lines) lines (\(format(Double(payload.bytes.count) / 1e6, 1)) MB) appended in 1 MiB writes, median of \(options.runs) runs; cores: \(sysconf(Int32(_SC_NPROCESSORS_ONLN))) (\(cpuModel))")
print("")
if !throughputRows.isEmpty {
    let tailRate = results["tail"].map { runs -> Double in
        let r = runs.sorted { $0.seconds < $1.seconds }
        return Double(options.lines) / r[r.count / 2].seconds
    }
    let rsyslogRate = results["rsyslog"].map { runs -> Double in
        let r = runs.sorted { $0.seconds < $1.seconds }
        return Double(options.lines) / r[r.count / 2].seconds
    }
    print("| reader | clients | median time (s) | file lines/s (ingest) | deliveries/s | vs rsyslog | vs tail -F | daemon CPU (s) | bench readers' CPU (s) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for row in throughputRows {
        let runs = results[row]!.sorted { $0.seconds < $1.seconds }
        let median = runs[runs.count / 2]
        let rate = Double(options.lines) / median.seconds
        let (label, clients, deliveries): (String, Int, Double) = {
            switch row {
            case "tail": return ("`tail -F FILE \\| wc -l`", 1, rate)
            case "rsyslog":
                let lost = results["rsyslog"]!.map { $0.lost }
                return ("rsyslog (imfile → omfwd TCP)\(lost.contains { $0 > 0 } ? ", lines lost per run: \(lost.map(String.init).joined(separator: "/"))" : "")", 1, rate)
            case "one": return ("logcast, every line", 1, rate)
            case "filtered": return ("logcast, each its own 1% GREP", 100, rate)
            case "nats-r1": return ("logcast edge: file → JetStream, 1 node (R1), acknowledged (lines of ~87 B)", 1, rate)
            case "nats-hub": return ("logcast hub: JetStream → a client's `SINCE 1`, 1 node", 1, rate)
            case "nats-r3": return ("logcast edge: file → JetStream, 3 nodes (R3), acknowledged", 1, rate)
            case "nats-r3-steady": return ("the same R3 run, from the stream's first stored batch (the cluster's start-up and the stream's creation left out)", 1, rate)
            default: return ("logcast, every line", 100, rate * 100)
            }
        }()
        let vsRsyslog = rsyslogRate.map { format(rate / $0, 2) + "×" } ?? "–"
        let vsTail = tailRate.map { format(rate / $0, 2) + "×" } ?? "–"
        // (The nats rows run in another program: no CPU figures.)
        let cpu = median.cpu < 0 ? "–" : format(median.cpu, 3)
        let benchCPU = median.cpu < 0 ? "–" : format(median.benchCPU, 3)
        print("| \(label) | \(clients) | \(format(median.seconds, 3)) | \(grouped(rate)) | \(grouped(deliveries)) | \(vsRsyslog) | \(vsTail) | \(cpu) | \(benchCPU) |")
    }
    print("")
}
if !tenks.isEmpty {
    print("| idle clients | RSS before (kB) | RSS with clients idle (kB) | per idle client | 1,000-line burst to all (s) | deliveries/s | STATS round trips during the burst | median STATS (ms) | slowest STATS (ms) | peak RSS (kB) |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for t in tenks {
        let perClient = Double(t.rssIdleKB - t.rssBeforeKB) * 1024 / Double(t.clients + 1)
        print("| \(grouped(Double(t.clients))) | \(grouped(Double(t.rssBeforeKB))) | \(grouped(Double(t.rssIdleKB))) | \(grouped(perClient)) B | \(format(t.burstSeconds, 3)) | \(grouped(Double(t.clients) * 1000 / t.burstSeconds)) | \(t.statsRoundTrips.count) | \(format((t.statsRoundTrips.sorted().dropFirst(t.statsRoundTrips.count / 2).first ?? 0) * 1000, 1)) | \(format((t.statsRoundTrips.max() ?? 0) * 1000, 1)) | \(grouped(Double(t.peakKB))) |")
    }
}

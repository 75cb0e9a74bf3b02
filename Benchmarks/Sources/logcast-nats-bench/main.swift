// logcast-nats-bench: lines per second from a file into a JetStream stream (1 node, and a
// 3-node cluster with 3 replicas) through `logcast FILE --publish`, and from the stream to
// a hub client (`logcast --from … --listen`, client `SINCE 1`).
//
// Build logcast first (release), then run this (release):
//
//     swift build -c release --package-path Sources/logcast
//     swift run -c release --package-path Benchmarks logcast-nats-bench [LINES]
//
// Each row: a fresh nats-server (or three) on loopback ports, store directories in a
// temporary directory, a file of LINES lines of 87 bytes written beforehand; the clock runs
// from the edge's start until the stream's last message names the file's last byte
// (`Logcast-Range`), or until the client has received every line. Every process is stopped
// by its pid at the end (also on SIGINT/SIGTERM, which remove the temporary directories and
// any namespaces too).
//
// Order check, every file → stream row: once its clock has stopped, the whole stream is
// read back message by message (by sequence) and its `Logcast-Range` headers must be
// contiguous and rising (the first starts at 0, each where the previous one ended, the
// last at the file's size), each payload the file's bytes in its range. The row prints
// "stored in file order: N messages …, contiguous …" or "*** … NOT STORED IN FILE ORDER:"
// with the first gap, overlap/reorder, duplicate or differing payload and its sequence;
// the bench then exits 1 at the end.
//
//     logcast-nats-bench [LINES] --netns [--rounds 3]
//
// (root only; kept out of the default rows) runs file → R1 and file → R3 on hosts made of
// network namespaces: servers in `lcnb-n1`…`lcnb-n3` (10.231.79.1–3, ports 4222/6222), the
// edge in `lcnb-edge` (.4), joined by the bridge `lcnb-br` (.254, in the bench's own
// namespace, where the probe and the order check run). Each host holds its packets 500 us
// each way (`netdelay`, Sources/logcast/Tests/netdelay/netdelay.c, compiled with `cc -O2`,
// on an iptables NFQUEUE: this kernel has no netem): 1 ms one way between two hosts. Before
// each row's clock the TCP connect time to n1 is measured from the bench's namespace (~1 ms)
// and from the edge's host (~2 ms) and printed; under 80% of that the row fails.
// `--link-delay-us N` holds packets N us instead (0: no netdelay, a control for what the
// namespaces cost without the delay). Without
// root, or when `ip netns add` fails, it says why and skips the rows (status 0). Leftovers
// named `lcnb-*` are removed at the start and everything it made at the end. Netns.swift
// has the hosts.
//
//     logcast-nats-bench [LINES] --windows 1,8 [--rounds 3]
//
// compares the edge's window (`LOGCAST_NATS_WINDOW`: batches of a file in flight; 1 is the
// edge's default, the only window that keeps each file in order whatever the cluster does):
// the file → stream rows only, R1 and R3, the windows interleaved
// round by round (on a shared machine only ratios of interleaved runs mean anything), then
// each window's median and its ratio to the first window's. With `--netns` as well, on
// the namespaced hosts below.
import Foundation
import Glibc
import ReactiveUV
import ReactiveUVNATS

let arguments = Array(CommandLine.arguments.dropFirst())
func option(_ name: String) -> String? {
    guard let i = arguments.firstIndex(of: name), i + 1 < arguments.count else { return nil }
    return arguments[i + 1]
}
// `--connect-time HOST PORT COUNT`: run by `--netns` inside the edge's namespace (`ip netns
// exec lcnb-edge <this program> …`) to measure the link from there; prints the median
// connect time in milliseconds and nothing else.
if arguments.first == "--connect-time", arguments.count >= 4, let port = Int(arguments[2]), let count = Int(arguments[3]) {
    let milliseconds = medianConnectMilliseconds(host: arguments[1], port: port, count: max(1, count))
    print(milliseconds)
    exit(milliseconds < 0 ? 1 : 0)
}
let lineCount = arguments.first.flatMap { Int($0) } ?? 1_000_000
/// `--windows 1,8`: the windows to compare (nil: the plain rows).
let windows: [Int]? = option("--windows").map { $0.split(separator: ",").compactMap { Int($0) }.filter { (1...64).contains($0) } }
let rounds = (option("--rounds") ?? option("--runs")).flatMap { Int($0) }.map { max(1, min($0, 20)) } ?? 3
/// The window of the edge started next (nil: logcast's default).
var edgeWindow: Int?
let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent().path
let logcast = root + "/Sources/logcast/.build/release/logcast"
guard access(logcast, X_OK) == 0 else {
    print("build logcast first: swift build -c release --package-path Sources/logcast (\(logcast) missing)")
    exit(1)
}
/// The server binary: `LOGCAST_BENCH_NATS_SERVER` names another one (the current release that
/// `scripts/ensure-deps.sh` installs for the fault test, say: Debian's 2.9.10 loses
/// acknowledged messages of a 3-replica stream when its leader changes, docs/design/
/// nats-durability.md §7, so an R3 row on it measures a server nobody should run R3 on).
let debianServer = ["/usr/sbin/nats-server", "/usr/bin/nats-server"].first { (path: String) in access(path, X_OK) == 0 }
let natsServer: String = ProcessInfo.processInfo.environment["LOGCAST_BENCH_NATS_SERVER"].flatMap { $0.isEmpty ? nil : $0 }
    ?? debianServer ?? "nats-server"

/// What `nats-server --version` says (printed with the rows: the R3 rate depends on it).
func serverVersion() -> String {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: natsServer)
    p.arguments = ["--version"]
    let out = Pipe()
    p.standardOutput = out
    guard (try? p.run()) != nil else { return "version unknown" }
    p.waitUntilExit()
    return String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        .trimmingCharacters(in: .whitespacesAndNewlines)
}

func freePort() -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var a = sockaddr_in()
    a.sin_family = sa_family_t(AF_INET)
    a.sin_addr.s_addr = inet_addr("127.0.0.1")
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) == 0 && getsockname(fd, $0, &len) == 0 } }
    return Int(UInt16(bigEndian: a.sin_port))
}

/// The pids of every process this bench started and has not yet waited for, and the
/// temporary directories it has not yet removed, under `registryLock`: a SIGINT or
/// SIGTERM is handled on a dispatch queue while the main thread is anywhere (in a row's
/// wait, in the event loop), and it must still kill them all and remove them.
let registryLock = NSLock()
var livePids: Set<pid_t> = []
var liveDirectories: Set<String> = []
/// Whether `--netns` has made namespaces (the signal handler then removes them too).
var netnsMade = false

/// Starts `path args` with its output and errors into `log`, its pid registered for the
/// signal handler; the caller stops it by its pid.
func launch(_ path: String, _ args: [String], log: String) throws -> Process {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: path)
    p.arguments = args
    // The edge, also when started through `ip netns exec … logcast`.
    if let edgeWindow, path == logcast || args.contains(logcast) {
        var environment = ProcessInfo.processInfo.environment
        environment["LOGCAST_NATS_WINDOW"] = String(edgeWindow)
        p.environment = environment
    }
    _ = FileManager.default.createFile(atPath: log, contents: nil)
    let h = FileHandle(forWritingAtPath: log)
    p.standardOutput = h
    p.standardError = h
    try p.run()
    registryLock.lock()
    livePids.insert(p.processIdentifier)
    registryLock.unlock()
    return p
}

/// SIGKILLs `p` by its pid (SIGCONT first, should it be stopped) and waits for its end.
func stop(_ p: Process) {
    if p.isRunning {
        kill(p.processIdentifier, SIGCONT)
        kill(p.processIdentifier, SIGKILL)
        p.waitUntilExit()
    }
    registryLock.lock()
    livePids.remove(p.processIdentifier)
    registryLock.unlock()
}

/// A row's processes (servers, edge, hub), stopped by ``stopAll()`` at the row's end.
var children: [Process] = []
func spawn(_ path: String, _ args: [String], log: String) throws -> Process {
    let p = try launch(path, args, log: log)
    children.append(p)
    return p
}
func stopAll() {
    for p in children { stop(p) }
    children = []
}
func waitForText(_ path: String, _ text: String, timeout: Double = 60) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if let s = try? String(contentsOfFile: path, encoding: .utf8), s.contains(text) { return true }
        usleep(20_000)
    }
    return false
}

/// Starts `count` servers (a cluster when more than one); returns their URLs. On loopback
/// ports by default; with `netns`, server n*i* in host n*i*'s namespace, on its bridge
/// address (client port 4222, route port 6222: each host has its own).
func startServers(_ count: Int, dir: String, netns: BenchNetns? = nil) throws -> [String] {
    let hosts = (0..<count).map { netns?.address("n\($0 + 1)") ?? "127.0.0.1" }
    let ports = (0..<count).map { _ in netns == nil ? freePort() : 4222 }
    let routes = (0..<count).map { _ in netns == nil ? freePort() : 6222 }
    for i in 0..<count {
        var conf = "server_name: n\(i + 1)\nlisten: \(hosts[i]):\(ports[i])\njetstream { store_dir: \"\(dir)/n\(i + 1)\" }\n"
        if count > 1 {
            let others = (0..<count).filter { $0 != i }.map { "nats-route://\(hosts[$0]):\(routes[$0])" }
            conf += "cluster { name: bench, listen: \(hosts[i]):\(routes[i]), routes: [\(others.joined(separator: ", "))] }\n"
        }
        try conf.write(toFile: "\(dir)/n\(i + 1).conf", atomically: true, encoding: .utf8)
        if let netns {
            _ = try spawn(BenchNetns.ip, ["netns", "exec", netns.namespace("n\(i + 1)"), natsServer, "-c", "\(dir)/n\(i + 1).conf"],
                          log: "\(dir)/n\(i + 1).log")
        } else {
            _ = try spawn(natsServer, ["-c", "\(dir)/n\(i + 1).conf"], log: "\(dir)/n\(i + 1).log")
        }
    }
    for i in 0..<count where !waitForText("\(dir)/n\(i + 1).log", "Server is ready") {
        throw NSError(domain: "nats-server n\(i + 1) did not start", code: 1)
    }
    return (0..<count).map { "nats://\(hosts[$0]):\(ports[$0])" }
}

/// The end offset named by the stream's last message, polled on the main loop.
///
/// Why its requests time out after 0.5 s (not JetStream's 5 s): a freshly started cluster
/// answers no JetStream request until it has elected its meta leader (~0.2–0.5 s after
/// "Server is ready" here), and a request sent before that is never answered. The edge's
/// own stream lookup met that (5 s timeout, then a 2 s pause: the R3 rows' 7.1–7.6 s before
/// the first stored batch until 2026-11-28; it now asks again every second), and a probe
/// asking at the edge's start would wait its own 5 s on top of it. A request that times out
/// is simply asked again at the next poll; once the edge is done the cluster is idle and
/// answers at once.
final class StreamProbe {
    var js: JetStream?
    var connection: Disposable?
    init(_ urls: [String]) {
        connection = NATS.connect(urls).subscribe(next: { [weak self] c in self?.js = try? c.jetStream(requestTimeout: 0.5) },
                                                  error: { print("probe: \($0)") })
        _ = EventLoop.main.run(until: { self.js != nil }, timeout: 30)
    }
    func lastEnd(_ stream: String) -> Int64 {
        guard let js else { return -1 }
        var result: Int64 = -1
        var done = false
        let d = js.streamInfo(stream).flattenMap { info -> Signal<NATSMessage> in
            info.lastSequence == 0 ? .empty() : js.message(stream: stream, sequence: info.lastSequence)
        }.subscribe(next: { m in
            result = Int64(m.headers["Logcast-Range"]?.split(separator: "-").last ?? "") ?? -1
        }, error: { _ in done = true }, completed: { done = true })
        _ = EventLoop.main.run(until: { done }, timeout: 30)
        d.dispose()
        return result
    }
}

/// The first value of `signal`, run on the main loop for at most `timeout` seconds.
func firstValue<T>(_ signal: Signal<T>, timeout: Double) -> Result<T, any Error> {
    var result: Result<T, any Error>?
    let d = signal.subscribe(next: { value in if result == nil { result = .success(value) } },
                             error: { error in if result == nil { result = .failure(error) } },
                             completed: {})
    _ = EventLoop.main.run(until: { result != nil }, timeout: timeout)
    d.dispose()
    return result ?? .failure(NSError(domain: "no answer in \(timeout) s", code: 5))
}

/// What ``checkFileOrder(urls:stream:file:size:)`` found for one row.
struct OrderReport {
    /// Whether the stream holds the file exactly once, in order.
    var ok: Bool
    /// One line: "N messages, contiguous …", or the first problem and how many there were.
    var text: String
}

/// Rows whose stream was not the file in order (the bench exits non-zero if any).
var orderFailures: [String] = []

/// Reads the whole stream back after a row's clock stopped and checks that it holds the
/// file in order, exactly once: each message's `Logcast-Range` (`START-END`, a byte range
/// of the file) starts where the previous one ended, the first at 0, the last ends at the
/// file's size, and its payload is the file's bytes in that range.
///
/// Why every message is fetched by its sequence (`JetStream.message(stream:sequence:)`,
/// one request each, not an ordered consumer): a sequence the stream lacks (deleted, or
/// never stored) then shows as its own error, and the sequences named in a report are the
/// stream's own. A 1 M-line file is ~85 messages of ~1 MiB, so this reads ~87 MB once per
/// row, after the clock, and the payload comparison is a `memcmp` per message.
func checkFileOrder(urls: [String], stream: String, file: String, size: Int64) -> OrderReport {
    let began = Date()
    var js: JetStream?
    var failure: String?
    // Its own connection with a long request timeout: a 1 MiB answer on a loaded machine
    // may well take longer than the probe's 0.5 s.
    let connection = NATS.connect(urls).subscribe(next: { c in js = try? c.jetStream(requestTimeout: 10) },
                                                  error: { failure = "\($0)" })
    defer { connection.dispose() }
    _ = EventLoop.main.run(until: { js != nil || failure != nil }, timeout: 30)
    guard let js else { return OrderReport(ok: false, text: "could not connect to read the stream back: \(failure ?? "timed out")") }
    let info: JetStreamInfo
    switch firstValue(js.streamInfo(stream), timeout: 30) {
    case .success(let i): info = i
    case .failure(let error): return OrderReport(ok: false, text: "stream info failed: \(error)")
    }
    guard let data = FileManager.default.contents(atPath: file), data.count == Int(size) else {
        return OrderReport(ok: false, text: "cannot read \(file) back (or its size is no longer \(size))")
    }
    guard info.lastSequence > 0 else { return OrderReport(ok: false, text: "the stream is empty") }
    var problems: [String] = []
    // Where the next message must start: the end of the furthest range met so far.
    var expected: Int64 = 0
    // Each range met → its sequence, so a second copy is named a duplicate of the first.
    var seen: [String: UInt64] = [:]
    var count = 0
    if info.firstSequence != 1 { problems.append("the stream's first sequence is #\(info.firstSequence), not #1") }
    for sequence in info.firstSequence...info.lastSequence {
        let message: NATSMessage
        switch firstValue(js.message(stream: stream, sequence: sequence), timeout: 30) {
        case .success(let m): message = m
        case .failure(let error):
            problems.append("#\(sequence) could not be read: \(error)")
            continue
        }
        count += 1
        guard let rangeText = message.headers["Logcast-Range"] else {
            problems.append("#\(sequence) has no Logcast-Range header")
            continue
        }
        let bounds = rangeText.split(separator: "-").compactMap { Int64($0) }
        guard bounds.count == 2, bounds[0] <= bounds[1], bounds[1] <= size else {
            problems.append("#\(sequence) has Logcast-Range \(rangeText), not a range of the file's \(size) bytes")
            continue
        }
        let (start, end) = (bounds[0], bounds[1])
        if let earlier = seen[rangeText] {
            problems.append("duplicate: #\(sequence) holds \(rangeText) again (first #\(earlier))")
        } else if start > expected {
            problems.append("gap: bytes \(expected)-\(start) missing before #\(sequence) (\(rangeText))")
        } else if start < expected {
            problems.append("overlap/reorder: #\(sequence) (\(rangeText)) starts before \(expected), the end of what came before it")
        }
        seen[rangeText] = seen[rangeText] ?? sequence
        let same = message.payload.count == Int(end - start) && message.payload.withUnsafeBytes { payload in
            data.withUnsafeBytes { file in
                payload.count == 0 || memcmp(payload.baseAddress!, file.baseAddress! + Int(start), payload.count) == 0
            }
        }
        if !same { problems.append("#\(sequence)'s payload (\(message.payload.count) bytes) is not the file's bytes \(rangeText)") }
        expected = max(expected, end)
    }
    if expected != size { problems.append("the stream ends at byte \(expected), the file at \(size)") }
    let seconds = Date().timeIntervalSince(began)
    if problems.isEmpty {
        return OrderReport(ok: true, text: String(format: "%d messages (#%llu-#%llu), contiguous 0-%lld, payloads equal to the file's bytes; read back in %.2f s",
                                                  count, info.firstSequence, info.lastSequence, size, seconds))
    }
    return OrderReport(ok: false, text: "\(problems[0]) (\(problems.count) problem(s) in \(count) messages #\(info.firstSequence)-#\(info.lastSequence))")
}

/// Prints `label`'s order report; a failure loudly, and recorded for the exit status.
func reportOrder(_ label: String, _ report: OrderReport) {
    if report.ok {
        print("  \(label) stored in file order: \(report.text)")
    } else {
        print("  *** \(label) NOT STORED IN FILE ORDER: \(report.text)")
        orderFailures.append(label)
    }
}

/// `LOGCAST_BENCH_EDGE_ARGS`: more arguments for the edge (`--batch-bytes 1000000`, say),
/// split at spaces.
let extraEdgeArguments = (ProcessInfo.processInfo.environment["LOGCAST_BENCH_EDGE_ARGS"] ?? "")
    .split(separator: " ").map(String.init)

/// One file → stream run: the rate from the edge's start, and the rate from the moment the
/// stream first held one of its batches (the ingest once the edge has connected and the
/// stream exists: a freshly started 3-node cluster elects a meta leader, then the new
/// stream's leader, ~1 s in all here, which the first rate counts and an operator's running
/// cluster does not pay).
struct IngestRun {
    var rate: Double
    var steadyRate: Double
    var firstStoredAfter: Double
    /// The stream read back after the clock stopped (``checkFileOrder(urls:stream:file:size:)``).
    var order = OrderReport(ok: false, text: "not checked")
    /// `--netns`: CPU seconds the links' `netdelay`s used while the clock ran.
    var delayCPUSeconds: Double?
    /// Seconds from the edge's start until the last byte was stored.
    var seconds: Double = 0
}

/// Lines (newlines) in the first `bytes` bytes of `path`.
func linesIn(_ path: String, upTo bytes: Int64) -> Int {
    guard let handle = FileHandle(forReadingAtPath: path) else { return 0 }
    defer { try? handle.close() }
    let data = handle.readData(ofLength: Int(bytes))
    return data.reduce(0) { $1 == 10 ? $0 + 1 : $0 }
}

/// file → stream through the edge; then the stream is read back and checked
/// (``IngestRun/order``). With `netns`, the servers run in hosts n1…n*replicas* and the
/// edge in host `edge`, and the links' delay is measured before the clock starts.
func fileToStream(replicas: Int, dir: String, file: String, size: Int64, netns: BenchNetns? = nil) throws -> (IngestRun, [String]) {
    let urls = try startServers(replicas, dir: dir, netns: netns)
    if let netns { try netns.checkDelay(to: netns.address("n1"), port: 4222) }
    let probe = StreamProbe(urls)
    let delayCPUBefore = netns?.delayCPUSeconds()
    let start = Date()
    let edgeArguments = [file, "--publish", urls.joined(separator: ","), "--stream", "LOGS", "--subject", "logs.bench",
                         "--stream-replicas", "\(replicas)", "--state-dir", dir + "/state", "--listen", "127.0.0.1:0"] + extraEdgeArguments
    if let netns {
        _ = try spawn(BenchNetns.ip, ["netns", "exec", netns.namespace("edge"), logcast] + edgeArguments, log: dir + "/edge.log")
    } else {
        _ = try spawn(logcast, edgeArguments, log: dir + "/edge.log")
    }
    var first: (at: Date, end: Int64)?
    while true {
        let end = probe.lastEnd("LOGS")
        if end > 0 && first == nil { first = (Date(), end) }
        if end >= size { break }
        if Date().timeIntervalSince(start) > 600 { throw NSError(domain: "timed out", code: 2) }
        _ = EventLoop.main.run(until: { false }, timeout: 0.05)
    }
    let finished = Date()
    let delayCPUAfter = netns?.delayCPUSeconds()
    probe.connection?.dispose()
    let seconds = finished.timeIntervalSince(start)
    var run = IngestRun(rate: Double(lineCount) / seconds, steadyRate: Double(lineCount) / seconds, firstStoredAfter: seconds)
    run.seconds = seconds
    if let delayCPUBefore, let delayCPUAfter { run.delayCPUSeconds = delayCPUAfter - delayCPUBefore }
    if let first, first.end < size {
        let remaining = lineCount - linesIn(file, upTo: first.end)
        run.steadyRate = Double(remaining) / finished.timeIntervalSince(first.at)
        run.firstStoredAfter = first.at.timeIntervalSince(start)
    }
    run.order = checkFileOrder(urls: urls, stream: "LOGS", file: file, size: size)
    return (run, urls)
}

/// stream → hub client with SINCE 1; returns lines/s.
func streamToClient(urls: [String], dir: String) throws -> Double {
    _ = try spawn(logcast, ["--from", urls[0], "--stream", "LOGS", "--listen", "127.0.0.1:0"], log: dir + "/hub.log")
    guard waitForText(dir + "/hub.log", "listening on") else { throw NSError(domain: "hub did not listen", code: 3) }
    let text = try String(contentsOfFile: dir + "/hub.log", encoding: .utf8)
    let portText = text.components(separatedBy: "listening on ")[1].components(separatedBy: ";")[0].split(separator: ":").last!
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var a = sockaddr_in()
    a.sin_family = sa_family_t(AF_INET)
    a.sin_port = in_port_t(UInt16(portText)!).bigEndian
    a.sin_addr.s_addr = inet_addr("127.0.0.1")
    let ok = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    guard ok == 0 else { throw NSError(domain: "connect to hub", code: 4) }
    // Wait until the hub has its stream (it answers SINCE once connected to NATS).
    let start = Date()
    _ = "SINCE 1\n".withCString { write(fd, $0, 8) }
    var lines = 0
    var buffer = [UInt8](repeating: 0, count: 1 << 20)
    while lines < lineCount + 1 {
        let n = read(fd, &buffer, buffer.count)
        if n <= 0 { break }
        for i in 0..<n where buffer[i] == 10 { lines += 1 }
        if Date().timeIntervalSince(start) > 600 { break }
    }
    close(fd)
    return Double(lines - 1) / Date().timeIntervalSince(start)
}

/// A new temporary directory, registered for the signal handler (``removeDirectory(_:)``
/// removes it).
func makeDirectory() -> String {
    var template = Array("/tmp/logcast-nats-bench-XXXXXX".utf8CString)
    let dir = String(cString: template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!)! })
    registryLock.lock()
    liveDirectories.insert(dir)
    registryLock.unlock()
    return dir
}

/// Removes a directory made by ``makeDirectory()``.
func removeDirectory(_ dir: String) {
    try? FileManager.default.removeItem(atPath: dir)
    registryLock.lock()
    liveDirectories.remove(dir)
    registryLock.unlock()
}

/// The middle of `values` (the upper one of an even count).
func median(_ values: [Double]) -> Double { let s = values.sorted(); return s[s.count / 2] }

/// One file → stream row on a file of ``lineCount`` lines written for it in a directory of
/// its own (removed after), on `netns`'s hosts when given.
func ingestFreshFile(replicas: Int, netns: BenchNetns?) throws -> IngestRun {
    try withDirectory { dir -> IngestRun in
        let file = dir + "/app.log"
        let size = writeFile(file)
        return try fileToStream(replicas: replicas, dir: dir, file: file, size: size, netns: netns).0
    }
}

func withDirectory<T>(_ body: (String) throws -> T) rethrows -> T {
    let dir = makeDirectory()
    defer {
        stopAll()
        removeDirectory(dir)
    }
    return try body(dir)
}

func writeFile(_ path: String) -> Int64 {
    let padding = Array((" " + String(repeating: "x", count: 80) + "\n").utf8)
    var bytes: [UInt8] = []
    bytes.reserveCapacity(lineCount * 90)
    for n in 0..<lineCount {
        bytes.append(UInt8(ascii: "L"))
        bytes.append(contentsOf: Array(String(n).utf8))
        bytes.append(contentsOf: padding)
    }
    _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
    return Int64(bytes.count)
}

/// On SIGINT or SIGTERM (dispatch queue): kills every process started, removes the
/// temporary directories and, after `--netns` made them, the namespaces, links and bridge;
/// then exits 128 + the signal.
func interrupted(_ signal: Int32) {
    registryLock.lock()
    let pids = livePids, directories = liveDirectories, namespaces = netnsMade
    registryLock.unlock()
    print("logcast-nats-bench: signal \(signal): stopping \(pids.count) process(es)\(namespaces ? ", removing the lcnb- namespaces" : "")")
    for pid in pids {
        kill(pid, SIGCONT)
        kill(pid, SIGKILL)
    }
    if namespaces {
        BenchNetns.removeLeftovers()
        _ = BenchNetns.run([BenchNetns.ip, "link", "del", BenchNetns.bridge])
    }
    for dir in directories { try? FileManager.default.removeItem(atPath: dir) }
    // _exit flushes nothing: the rows printed so far would be lost when stdout is a file.
    fflush(stdout)
    _exit(128 + signal)
}
// Dispatch sources, not a C handler: cleaning up runs processes (`ip netns del`), which
// no async-signal-safe handler may do; the main thread may be anywhere meanwhile.
let signalSources = [SIGINT, SIGTERM].map { number -> DispatchSourceSignal in
    signal(number, SIG_IGN)
    let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
    source.setEventHandler { interrupted(number) }
    source.resume()
    return source
}

/// Ends the bench: status 1 when a row's stream was not the file in order.
func finish() -> Never {
    if !orderFailures.isEmpty {
        print("*** logcast-nats-bench: ORDER CHECK FAILED in \(orderFailures.count) row(s): \(orderFailures.joined(separator: ", "))")
        exit(1)
    }
    exit(0)
}

// A line at a time also into a file or pipe (`| tee`, logcast-bench's `nats` row): a long
// --netns run shows each row when it ends, and an interrupted one keeps what it printed.
setvbuf(stdout, nil, _IOLBF, 0)
print("logcast-nats-bench: \(lineCount) lines of ~87 bytes per row, \(natsServer) (\(serverVersion()))")
/// `--netns`'s hosts (also used by `--windows` when both are given).
var netnsHosts: BenchNetns?
if arguments.contains("--netns") {
    if let reason = BenchNetns.unavailableReason() {
        print("logcast-nats-bench --netns: the namespaced rows are skipped: \(reason)")
        exit(0)
    }
    let netns: BenchNetns
    do {
        netns = try BenchNetns(delayMicroseconds: option("--link-delay-us").flatMap { Int($0) }.map { max(0, min($0, 100_000)) } ?? 500)
    } catch {
        print("logcast-nats-bench --netns: the namespaced rows are skipped: the hosts could not be made: \(error)")
        exit(1)
    }
    print("--netns: servers in hosts n1-n3 (\(netns.address("n1"))-\(netns.address("n3"))), the edge in host edge (\(netns.address("edge"))), "
          + "bridge \(BenchNetns.bridge); "
          + (netns.delayMicroseconds == 0 ? "no delay (--link-delay-us 0: a control)"
             : String(format: "netdelay %d us each way in each host: %.1f ms one way between hosts", netns.delayMicroseconds, Double(netns.delayMicroseconds) / 500)))
    netnsHosts = netns
}
// `--netns` alone: R1 and R3 rows; with `--windows` the windows' rows below run on the hosts.
if let netns = netnsHosts, windows == nil {
    var rates: [String: [Double]] = [:]
    do {
        for round in 1...rounds {
            for replicas in [1, 3] {
                let run = try ingestFreshFile(replicas: replicas, netns: netns)
                rates["R\(replicas)", default: []].append(run.rate)
                rates["R\(replicas) steady", default: []].append(run.steadyRate)
                print(String(format: "round %d, netns R%d (%d server host%@): %9.0f lines/s; from the first stored batch (%.2f s after the start) %9.0f lines/s",
                             round, replicas, replicas, replicas == 1 ? "" : "s", run.rate, run.firstStoredAfter, run.steadyRate))
                if let cpu = run.delayCPUSeconds {
                    print(String(format: "  the links' netdelays used %.2f CPU-s of the row's %.2f s (2 cores shared by all)", cpu, run.seconds))
                }
                reportOrder("netns R\(replicas) round \(round)", run.order)
            }
        }
    } catch {
        print("logcast-nats-bench --netns: \(error)")
        stopAll()
        netns.tearDown()
        exit(1)
    }
    netns.tearDown()
    for replicas in [1, 3] {
        print(String(format: "netns R%d: median %9.0f lines/s; from the first stored batch %9.0f lines/s (%d rounds)",
                     replicas, median(rates["R\(replicas)"] ?? [0]), median(rates["R\(replicas) steady"] ?? [0]), rounds))
    }
    finish()
}
if let windows {
    guard !windows.isEmpty else {
        print("logcast-nats-bench: --windows takes numbers in 1...64, e.g. --windows 1,8")
        exit(1)
    }
    var rates: [String: [Double]] = [:]
    do {
        for round in 1...rounds {
            for window in windows {
                for replicas in [1, 3] {
                    edgeWindow = window
                    let run = try ingestFreshFile(replicas: replicas, netns: netnsHosts)
                    rates["R\(replicas) w\(window)", default: []].append(run.rate)
                    rates["R\(replicas) w\(window) steady", default: []].append(run.steadyRate)
                    print(String(format: "round %d, window %2d, %@R%d: %9.0f lines/s; from the first stored batch (%.2f s after the start) %9.0f lines/s",
                                 round, window, netnsHosts == nil ? "" : "netns ", replicas, run.rate, run.firstStoredAfter, run.steadyRate))
                    reportOrder("R\(replicas) window \(window) round \(round)", run.order)
                }
            }
        }
    } catch {
        print("logcast-nats-bench: \(error)")
        stopAll()
        netnsHosts?.tearDown()
        exit(1)
    }
    for replicas in [1, 3] {
        let base = median(rates["R\(replicas) w\(windows[0])"] ?? [1])
        for window in windows {
            let m = median(rates["R\(replicas) w\(window)"] ?? [0])
            let steady = median(rates["R\(replicas) w\(window) steady"] ?? [0])
            print(String(format: "R%d, window %2d: median %9.0f lines/s, %.2f× window %d; from the first stored batch %9.0f lines/s",
                         replicas, window, m, m / base, windows[0], steady))
        }
    }
    netnsHosts?.tearDown()
    finish()
}
do {
    try withDirectory { dir in
        let file = dir + "/app.log"
        let size = writeFile(file)
        let (run, urls) = try fileToStream(replicas: 1, dir: dir, file: file, size: size)
        print(String(format: "file → JetStream, 1 node (R1):            %9.0f lines/s", run.rate))
        print(String(format: "  R1 from its first stored batch:         %9.0f lines/s (%.2f s after the edge's start)", run.steadyRate, run.firstStoredAfter))
        reportOrder("R1", run.order)
        let client = try streamToClient(urls: urls, dir: dir)
        print(String(format: "stream → hub client (SINCE 1), 1 node:    %9.0f lines/s", client))
    }
    let run = try ingestFreshFile(replicas: 3, netns: nil)
    print(String(format: "file → JetStream, 3 nodes (R3):           %9.0f lines/s", run.rate))
    print(String(format: "  R3 from its first stored batch:         %9.0f lines/s (%.2f s after the edge's start)", run.steadyRate, run.firstStoredAfter))
    reportOrder("R3", run.order)
} catch {
    print("logcast-nats-bench: \(error)")
    stopAll()
    exit(1)
}
finish()

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
// by its pid at the end.
//
//     logcast-nats-bench [LINES] --windows 1,8 [--rounds 3]
//
// compares the edge's window (`LOGCAST_NATS_WINDOW`: batches of a file in flight; 1 is the
// edge before issue 33): the file → stream rows only, R1 and R3, the windows interleaved
// round by round (on a shared machine only ratios of interleaved runs mean anything), then
// each window's median and its ratio to the first window's.
import Foundation
import Glibc
import ReactiveUV
import ReactiveUVNATS

let arguments = Array(CommandLine.arguments.dropFirst())
func option(_ name: String) -> String? {
    guard let i = arguments.firstIndex(of: name), i + 1 < arguments.count else { return nil }
    return arguments[i + 1]
}
let lineCount = arguments.first.flatMap { Int($0) } ?? 1_000_000
/// `--windows 1,8`: the windows to compare (nil: the plain rows).
let windows: [Int]? = option("--windows").map { $0.split(separator: ",").compactMap { Int($0) }.filter { (1...64).contains($0) } }
let rounds = option("--rounds").flatMap { Int($0) }.map { max(1, min($0, 20)) } ?? 3
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

var children: [Process] = []
func spawn(_ path: String, _ args: [String], log: String) throws -> Process {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: path)
    p.arguments = args
    if let edgeWindow, path == logcast {
        var environment = ProcessInfo.processInfo.environment
        environment["LOGCAST_NATS_WINDOW"] = String(edgeWindow)
        p.environment = environment
    }
    FileManager.default.createFile(atPath: log, contents: nil)
    let h = FileHandle(forWritingAtPath: log)
    p.standardOutput = h
    p.standardError = h
    try p.run()
    children.append(p)
    return p
}
func stopAll() {
    for p in children where p.isRunning { kill(p.processIdentifier, SIGKILL); p.waitUntilExit() }
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

/// Starts `count` servers (a cluster when more than one); returns their URLs.
func startServers(_ count: Int, dir: String) throws -> [String] {
    let ports = (0..<count).map { _ in freePort() }
    let routes = (0..<count).map { _ in freePort() }
    for i in 0..<count {
        var conf = "server_name: n\(i + 1)\nlisten: 127.0.0.1:\(ports[i])\njetstream { store_dir: \"\(dir)/n\(i + 1)\" }\n"
        if count > 1 {
            let others = routes.enumerated().filter { $0.offset != i }.map { "nats-route://127.0.0.1:\($0.element)" }
            conf += "cluster { name: bench, listen: 127.0.0.1:\(routes[i]), routes: [\(others.joined(separator: ", "))] }\n"
        }
        try conf.write(toFile: "\(dir)/n\(i + 1).conf", atomically: true, encoding: .utf8)
        _ = try spawn(natsServer, ["-c", "\(dir)/n\(i + 1).conf"], log: "\(dir)/n\(i + 1).log")
    }
    for i in 0..<count where !waitForText("\(dir)/n\(i + 1).log", "Server is ready") {
        throw NSError(domain: "nats-server n\(i + 1) did not start", code: 1)
    }
    return ports.map { "nats://127.0.0.1:\($0)" }
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
}

/// Lines (newlines) in the first `bytes` bytes of `path`.
func linesIn(_ path: String, upTo bytes: Int64) -> Int {
    guard let handle = FileHandle(forReadingAtPath: path) else { return 0 }
    defer { try? handle.close() }
    let data = handle.readData(ofLength: Int(bytes))
    return data.reduce(0) { $1 == 10 ? $0 + 1 : $0 }
}

/// file → stream through the edge.
func fileToStream(replicas: Int, dir: String, file: String, size: Int64) throws -> (IngestRun, [String]) {
    let urls = try startServers(replicas, dir: dir)
    let probe = StreamProbe(urls)
    let start = Date()
    _ = try spawn(logcast, [file, "--publish", urls.joined(separator: ","), "--stream", "LOGS", "--subject", "logs.bench",
                            "--stream-replicas", "\(replicas)", "--state-dir", dir + "/state", "--listen", "127.0.0.1:0"] + extraEdgeArguments,
                  log: dir + "/edge.log")
    var first: (at: Date, end: Int64)?
    while true {
        let end = probe.lastEnd("LOGS")
        if end > 0 && first == nil { first = (Date(), end) }
        if end >= size { break }
        if Date().timeIntervalSince(start) > 600 { throw NSError(domain: "timed out", code: 2) }
        _ = EventLoop.main.run(until: { false }, timeout: 0.05)
    }
    let finished = Date()
    probe.connection?.dispose()
    let seconds = finished.timeIntervalSince(start)
    var run = IngestRun(rate: Double(lineCount) / seconds, steadyRate: Double(lineCount) / seconds, firstStoredAfter: seconds)
    if let first, first.end < size {
        let remaining = lineCount - linesIn(file, upTo: first.end)
        run.steadyRate = Double(remaining) / finished.timeIntervalSince(first.at)
        run.firstStoredAfter = first.at.timeIntervalSince(start)
    }
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

func withDirectory<T>(_ body: (String) throws -> T) rethrows -> T {
    var template = Array("/tmp/logcast-nats-bench-XXXXXX".utf8CString)
    let dir = String(cString: template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!)! })
    defer {
        stopAll()
        try? FileManager.default.removeItem(atPath: dir)
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

print("logcast-nats-bench: \(lineCount) lines of ~87 bytes per row, \(natsServer) (\(serverVersion()))")
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
                    let run = try withDirectory { dir -> IngestRun in
                        let file = dir + "/app.log"
                        let size = writeFile(file)
                        return try fileToStream(replicas: replicas, dir: dir, file: file, size: size).0
                    }
                    rates["R\(replicas) w\(window)", default: []].append(run.rate)
                    rates["R\(replicas) w\(window) steady", default: []].append(run.steadyRate)
                    print(String(format: "round %d, window %2d, R%d: %9.0f lines/s; from the first stored batch (%.2f s after the start) %9.0f lines/s",
                                 round, window, replicas, run.rate, run.firstStoredAfter, run.steadyRate))
                }
            }
        }
    } catch {
        print("logcast-nats-bench: \(error)")
        stopAll()
        exit(1)
    }
    func median(_ values: [Double]) -> Double { let s = values.sorted(); return s[s.count / 2] }
    for replicas in [1, 3] {
        let base = median(rates["R\(replicas) w\(windows[0])"] ?? [1])
        for window in windows {
            let m = median(rates["R\(replicas) w\(window)"] ?? [0])
            let steady = median(rates["R\(replicas) w\(window) steady"] ?? [0])
            print(String(format: "R%d, window %2d: median %9.0f lines/s, %.2f× window %d; from the first stored batch %9.0f lines/s",
                         replicas, window, m, m / base, windows[0], steady))
        }
    }
    exit(0)
}
do {
    try withDirectory { dir in
        let file = dir + "/app.log"
        let size = writeFile(file)
        let (run, urls) = try fileToStream(replicas: 1, dir: dir, file: file, size: size)
        print(String(format: "file → JetStream, 1 node (R1):            %9.0f lines/s", run.rate))
        print(String(format: "  R1 from its first stored batch:         %9.0f lines/s (%.2f s after the edge's start)", run.steadyRate, run.firstStoredAfter))
        let client = try streamToClient(urls: urls, dir: dir)
        print(String(format: "stream → hub client (SINCE 1), 1 node:    %9.0f lines/s", client))
    }
    try withDirectory { dir in
        let file = dir + "/app.log"
        let size = writeFile(file)
        let (run, _) = try fileToStream(replicas: 3, dir: dir, file: file, size: size)
        print(String(format: "file → JetStream, 3 nodes (R3):           %9.0f lines/s", run.rate))
        print(String(format: "  R3 from its first stored batch:         %9.0f lines/s (%.2f s after the edge's start)", run.steadyRate, run.firstStoredAfter))
    }
} catch {
    print("logcast-nats-bench: \(error)")
    stopAll()
    exit(1)
}

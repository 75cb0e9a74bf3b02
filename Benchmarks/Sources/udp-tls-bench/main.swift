// udp-tls-bench: UDP echo (ruv-udp-echo against a plain C libuv UDP echo server, both as
// processes, both driven by the same C load generator that checks every datagram and counts
// loss) and TLS echo throughput against plain TCP (ReactiveUVTLS vs ReactiveUV's TCP, in one
// process on one loop, so the ratio is what TLS costs).
//
//     swift build -c release --product ruv-udp-echo          (from the repository root)
//     swift run -c release --package-path Benchmarks udp-tls-bench [--rows udp,tls]
//         [--count N] [--size B] [--window W] [--runs R] [--tls-mib M] [--ruv-udp-echo PATH]
//
// Prints a Markdown table; progress goes to standard error.

import CUDPBench
import Glibc
import ReactiveUV
import ReactiveUVTLS

if CommandLine.arguments.dropFirst().first == "--c-udp-server" {
    exit(cub_udp_echo_server() == 0 ? 0 : 1)
}

// MARK: - Options

var rows: Set<String> = ["udp", "tls"]
var count: UInt64 = 200_000
var size: Int32 = 64
var window: Int32 = 64
var runs = 3
var tlsMiB = 64
var ruvUDPEcho = ".build/release/ruv-udp-echo"
var args = CommandLine.arguments.dropFirst()
while let flag = args.popFirst() {
    let value = args.popFirst() ?? ""
    switch flag {
    case "--rows": rows = Set(value.split(separator: ",").map(String.init))
    case "--count": count = UInt64(value) ?? count
    case "--size": size = Int32(value) ?? size
    case "--window": window = Int32(value) ?? window
    case "--runs": runs = Int(value) ?? runs
    case "--tls-mib": tlsMiB = Int(value) ?? tlsMiB
    case "--ruv-udp-echo": ruvUDPEcho = value
    default:
        progress("udp-tls-bench: unknown flag \(flag)")
        exit(2)
    }
}

func progress(_ text: String) {
    let bytes = Array((text + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}

/// `x` with `digits` decimals (no Foundation here).
func fixed(_ x: Double, _ digits: Int) -> String {
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    let n = Int((x * scale).rounded())
    let whole = n / Int(scale), part = abs(n % Int(scale))
    var fraction = String(part)
    while fraction.count < digits { fraction = "0" + fraction }
    return digits == 0 ? String(whole) : "\(whole).\(fraction)"
}

func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }

// MARK: - Processes

/// A server process started with its stdout on a pipe; its port read from "listening on H:P".
struct ServerProcess {
    let pid: pid_t
    let port: Int

    static func start(_ argv: [String]) -> ServerProcess? {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { return nil }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        posix_spawn_file_actions_adddup2(&actions, fds[1], 1)
        posix_spawn_file_actions_addclose(&actions, fds[0])
        var pid = pid_t()
        let cargs = argv.map { strdup($0) } + [nil]
        defer { cargs.forEach { free($0) } }
        let rc = posix_spawn(&pid, argv[0], &actions, nil, cargs, environ)
        posix_spawn_file_actions_destroy(&actions)
        close(fds[1])
        guard rc == 0 else {
            close(fds[0])
            return nil
        }
        var text = ""
        var byte: UInt8 = 0
        while read(fds[0], &byte, 1) == 1 {
            if byte == 10 {
                if text.hasPrefix("listening on ") {
                    let address = text.dropFirst("listening on ".count)
                    if let port = address.split(separator: ":").last.flatMap({ Int($0) }) {
                        close(fds[0])
                        return ServerProcess(pid: pid, port: port)
                    }
                }
                text = ""
            } else {
                text.append(Character(Unicode.Scalar(byte)))
            }
        }
        close(fds[0])
        return nil
    }

    func stop() {
        kill(pid, SIGTERM)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
    }
}

// MARK: - UDP

var table: [String] = []

if rows.contains("udp") {
    guard access(ruvUDPEcho, X_OK) == 0 else {
        progress("udp-tls-bench: \(ruvUDPEcho) not found; build it: swift build -c release --product ruv-udp-echo")
        exit(1)
    }
    let me = String(cString: realpath("/proc/self/exe", nil))
    var results: [String: (rate: [Double], lost: UInt64, corrupt: UInt64, stalls: UInt64)] = [:]
    for name in ["ruv-udp-echo", "C libuv"] {
        guard let server = ServerProcess.start(name == "C libuv" ? [me, "--c-udp-server"] : [ruvUDPEcho, "--port", "0"]) else {
            progress("cannot start \(name)")
            exit(1)
        }
        var rates: [Double] = []
        var lost: UInt64 = 0, corrupt: UInt64 = 0, stalls: UInt64 = 0
        // One warm-up run, then the timed ones.
        for run in 0...runs {
            var r = cub_load_result()
            let rc = cub_udp_load(Int32(server.port), count, size, window, 200, &r)
            guard rc == 0 else {
                progress("load failed: \(rc)")
                exit(1)
            }
            let rate = Double(r.received) / (Double(r.ns) / 1e9)
            progress("\(name) run \(run): \(Int(rate)) datagrams/s, sent \(r.sent), back \(r.received), lost \(r.sent - r.received), corrupt \(r.corrupt), stalls \(r.stalls)")
            if run > 0 {
                rates.append(rate)
                lost += r.sent - r.received
                corrupt += r.corrupt
                stalls += r.stalls
            }
        }
        server.stop()
        results[name] = (rates, lost, corrupt, stalls)
    }
    let ruv = results["ruv-udp-echo"]!, c = results["C libuv"]!
    let total = count * UInt64(runs)
    table.append(
        "| UDP echo, \(size) B datagrams, window \(window), \(count) per run | datagrams/s (round trips) | \(Int(median(ruv.rate))) | \(Int(median(c.rate))) | \(fixed(median(ruv.rate) / median(c.rate), 2))x | lost \(ruv.lost)/\(total), corrupt \(ruv.corrupt) | lost \(c.lost)/\(total), corrupt \(c.corrupt) |")
}

// MARK: - TLS

/// Runs `/bin/sh -c script`; its exit status.
func shell(_ script: String) -> Int32 {
    var pid = pid_t()
    let argv: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/sh"), strdup("-c"), strdup(script), nil]
    defer { argv.forEach { free($0) } }
    guard posix_spawn(&pid, "/bin/sh", nil, nil, argv, environ) == 0 else { return -1 }
    var status: Int32 = 0
    waitpid(pid, &status, 0)
    return (status >> 8) & 0xff
}

/// Echoes `total` bytes through one connection on the main loop (server and client both
/// there) and returns bytes per second; every byte is checked.
func echoThroughput(tls: (cert: String, key: String, ca: String)?, total: Int) -> Double {
    let loop = EventLoop.main
    let chunk = 64 * 1024
    let chunks = (0..<(total / chunk)).map { c in [UInt8]((0..<chunk).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ c) }) }
    var port = 0
    let server: Disposable
    if let tls {
        server = TLS.listen(port: 0, certificate: tls.cert, key: tls.key, on: loop, onListening: { port = $0.port })
            .flattenMap { c in c.send(c.reads).then { c.shutdown() }.catchTo(.empty()) }.subscribe()
    } else {
        server = TCP.listen(port: 0, on: loop, onListening: { port = $0.port })
            .flattenMap { c in c.send(c.reads).then { c.shutdown() }.catchTo(.empty()) }.subscribe()
    }
    _ = loop.run(until: { port != 0 }, timeout: 60)
    var received = 0
    var mismatches = 0
    var done = false
    let expected = chunks.flatMap { $0 }
    let started = clock_ns()
    func check(_ bytes: [UInt8]) {
        if !expected[received..<(received + bytes.count)].elementsEqual(bytes) { mismatches += 1 }
        received += bytes.count
    }
    // The client hands over everything at once (a source that cannot pause): its queue may
    // hold it all. The server's echo is paced by `.pauseSource` on its own reads.
    let clientOptions = TCPOptions(highWaterMark: total + (1 << 20))
    let client: Disposable
    if let tls {
        client = TLS.connect(host: "127.0.0.1", port: port, serverName: "localhost", trust: .certificateAuthorities(path: tls.ca), options: clientOptions, on: loop)
            .flattenMap { c in
                Signal<Void>.merge([c.send(Signal.fromArray(chunks)).then { c.shutdown() }, c.reads.map(check).ignoreValues()])
            }
            .subscribe(error: { progress("TLS client: \($0)"); done = true }, completed: { done = true })
    } else {
        client = TCP.connect(host: "127.0.0.1", port: port, options: clientOptions, on: loop)
            .flattenMap { c in
                Signal<Void>.merge([c.send(Signal.fromArray(chunks)).then { c.shutdown() }, c.reads.map(check).ignoreValues()])
            }
            .subscribe(error: { progress("TCP client: \($0)"); done = true }, completed: { done = true })
    }
    _ = loop.run(until: { done || received == expected.count }, timeout: 600)
    let seconds = Double(clock_ns() - started) / 1e9
    client.dispose()
    server.dispose()
    _ = loop.run(until: { false }, timeout: 0.2)
    if received != expected.count || mismatches != 0 {
        progress("echo incomplete: \(received) of \(expected.count) bytes, \(mismatches) mismatching chunks")
        exit(1)
    }
    return Double(received) / seconds
}

func clock_ns() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

if rows.contains("tls") {
    var template = Array("/tmp/udp-tls-bench-XXXXXX".utf8CString)
    let dir = String(cString: template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) })
    let ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
    let made = shell("""
        cd '\(dir)' && openssl req -x509 \(ec) -keyout ca.key -out ca.pem -subj /CN=bench-ca -days 2 && \
        openssl req \(ec) -keyout s.key -out s.csr -subj /CN=localhost && \
        printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\n' > ext && \
        openssl x509 -req -in s.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out s.pem -days 2 -extfile ext
        """ + " >/dev/null 2>&1")
    guard made == 0 else {
        progress("openssl could not make certificates")
        exit(1)
    }
    let material = (cert: dir + "/s.pem", key: dir + "/s.key", ca: dir + "/ca.pem")
    let total = tlsMiB << 20
    var plain: [Double] = [], secure: [Double] = []
    _ = echoThroughput(tls: nil, total: 4 << 20)  // warm-up
    _ = echoThroughput(tls: material, total: 4 << 20)
    for run in 1...runs {
        plain.append(echoThroughput(tls: nil, total: total))
        secure.append(echoThroughput(tls: material, total: total))
        progress("run \(run): TCP \(Int(plain.last! / 1_048_576)) MiB/s, TLS \(Int(secure.last! / 1_048_576)) MiB/s")
    }
    _ = shell("rm -rf '\(dir)'")
    table.append(
        "| TLS echo, one connection, \(tlsMiB) MiB in 64 KiB writes (client and server on one loop) | MiB/s | \(fixed(median(secure) / 1_048_576, 1)) (TLS) | \(fixed(median(plain) / 1_048_576, 1)) (plain TCP) | \(fixed(median(secure) / median(plain), 2))x | every byte checked | every byte checked |")
}

print("| row | unit | ReactiveUV | baseline | ratio | ReactiveUV check | baseline check |")
print("| --- | --- | ---: | ---: | ---: | --- | --- |")
for line in table { print(line) }

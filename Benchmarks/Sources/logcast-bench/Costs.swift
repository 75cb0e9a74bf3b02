import Glibc

// `logcast-bench costs`: the hidden costs of `--http` (issue 31's "Done when"), measured.
//
//     logcast-bench costs [--logcast PATH] [--lines N] [--runs R] [--browsers B]
//                         [--parts ingest,metrics] [--window S] [--metrics-runs R]
//                         [--rate LINES_PER_S] [--burst N] [--no-pin]
//
// **ingest**: logcast follows a fresh file with `--http 127.0.0.1:0` and one TCP client
// (the `one` row's setup); N lines are appended as the throughput rows append them (synced
// first, then 1 MiB writes) and the run is timed until the TCP client has every line. Two
// configurations, interleaved within each round (the order alternates): no web view client,
// and B real headless Chromium pages on `GET /` with their WebSocket open (the same
// browsers for every run, kept by one Python helper: CostsBrowsers.swift). With browsers the
// run then goes on until every page shows the last line (the page's own count of lines
// received is reported, and the lines logcast skipped for it: a page is sent the newest
// lines a few frames a second, so with the view paced N can be the throughput rows' 1M). logcast's CPU comes from /proc/PID/task/*/schedstat (nanoseconds,
// every thread), read when the clock starts, when the TCP client has everything, and when
// the browsers do.
//
// **metrics**: a fresh logcast with `--http` and one TCP client, idle (nothing appended) and
// under a steady load (RATE lines/s appended in 10 ms batches and read by the client);
// windows of S seconds without and with a scraper that fetches `/metrics` once a second (a
// new connection per scrape, `Connection: close`), interleaved (the order alternates), R
// rounds; logcast's CPU per window from /proc/PID/stat (utime + stime, the kernel's ticks)
// and schedstat. Then a burst of N scrapes back to back on the idle daemon: CPU per scrape.
//
// **Pinning** (default; `--no-pin` to leave the scheduler alone): logcast and this program
// (its TCP reader) run on CPU 1, the Python helper, chromedriver and Chromium on CPU 0
// (`taskset -c 0`), so that the browsers' own work (rendering every line) does not take
// logcast's core or starve the reader that times it; on a shared machine other processes
// still run on both.

struct CostsOptions {
    var logcast: String?
    var lines = 1_000_000
    var runs = 3
    var browsers = 3
    var parts = ["ingest", "metrics"]
    var window = 30.0
    var metricsRuns = 3
    var rate = 10_000
    var burst = 1_000
    var pin = true
}

let costsUsage = """
    usage: logcast-bench costs [--logcast PATH] [--lines N] [--runs R] [--browsers B] [--parts ingest,metrics]
                               [--window S] [--metrics-runs R] [--rate LINES_PER_S] [--burst N] [--no-pin]
    Defaults: --lines 1000000 --runs 3 --browsers 3 --window 30 --metrics-runs 3 --rate 10000 --burst 1000, pinned.
    Needs a release logcast (swift build -c release --package-path Sources/logcast --product logcast), and for
    ingest chromium, chromium-driver and Selenium (pip install selenium).
    """

func parseCosts(_ arguments: ArraySlice<String>) -> CostsOptions {
    var options = CostsOptions()
    var arguments = arguments
    func positive(_ name: String, _ value: String) -> Int {
        guard let n = Int(value), n > 0 else { fail("bad \(name) \(value)\n\(costsUsage)") }
        return n
    }
    while let argument = arguments.popFirst() {
        if argument == "--help" || argument == "-h" {
            print(costsUsage)
            exit(0)
        }
        if argument == "--no-pin" {
            options.pin = false
            continue
        }
        guard let value = arguments.popFirst() else { fail("\(argument) needs a value\n\(costsUsage)") }
        switch argument {
        case "--logcast": options.logcast = value
        case "--lines": options.lines = positive(argument, value)
        case "--runs": options.runs = positive(argument, value)
        case "--browsers": options.browsers = positive(argument, value)
        case "--window": options.window = Double(positive(argument, value))
        case "--metrics-runs": options.metricsRuns = positive(argument, value)
        case "--rate": options.rate = positive(argument, value)
        case "--burst": options.burst = positive(argument, value)
        case "--parts":
            let parts = value.split(separator: ",").map(String.init)
            guard !parts.isEmpty, parts.allSatisfy({ $0 == "ingest" || $0 == "metrics" }) else { fail("bad --parts \(value)\n\(costsUsage)") }
            options.parts = parts
        default: fail("unknown option \(argument)\n\(costsUsage)")
        }
    }
    return options
}

// MARK: Measuring a process

/// The CPU time of every live thread of `pid` (seconds), from /proc/PID/task/*/schedstat:
/// nanoseconds, where /proc/PID/stat counts 10 ms ticks (a run of 0.1 s would be ±10%).
func schedCPU(_ pid: pid_t) -> Double { schedstat(pid, field: 0) }

/// The time every live thread of `pid` waited, runnable, for a CPU (seconds): on a shared
/// machine, how much of a run's time was the machine's, not logcast's.
func schedWait(_ pid: pid_t) -> Double { schedstat(pid, field: 1) }

/// Field `field` (0: on CPU, 1: waiting on a run queue; nanoseconds) of
/// /proc/PID/task/*/schedstat, summed, in seconds.
func schedstat(_ pid: pid_t, field: Int) -> Double {
    guard let dir = opendir("/proc/\(pid)/task") else { return 0 }
    defer { closedir(dir) }
    var total = 0.0
    while let entry = readdir(dir) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
        guard name.first?.isNumber == true else { continue }
        guard let f = fopen("/proc/\(pid)/task/\(name)/schedstat", "r") else { continue }
        var ns: (UInt64, UInt64) = (0, 0)
        let read = withUnsafeMutablePointer(to: &ns.0) { running in
            withUnsafeMutablePointer(to: &ns.1) { waiting in withVaList([running, waiting]) { vfscanf(f, "%llu %llu", $0) } }
        }
        if read == 2 { total += Double(field == 0 ? ns.0 : ns.1) / 1e9 }
        fclose(f)
    }
    return total
}

/// utime + stime of `pid` from /proc/PID/stat (every thread, live or ended), in seconds.
func statCPU(_ pid: pid_t) -> Double {
    guard let f = fopen("/proc/\(pid)/stat", "r") else { return 0 }
    defer { fclose(f) }
    var buffer = [CChar](repeating: 0, count: 4096)
    guard fgets(&buffer, Int32(buffer.count), f) != nil else { return 0 }
    let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    // The command name may hold spaces: the fields start after its closing parenthesis.
    guard let close = text.lastIndex(of: ")") else { return 0 }
    let fields = text[text.index(after: close)...].split(separator: " ")
    // fields[0] is field 3 (state): utime is field 14, stime field 15.
    guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
    return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
}

/// The 1-minute load average.
func loadAverage() -> Double {
    var loads = [Double](repeating: 0, count: 3)
    return getloadavg(&loads, 3) >= 1 ? loads[0] : -1
}

/// Pins this process (and what it starts from now on) to `cpu`. (Glibc's module does not
/// declare `sched_setaffinity`, a `_GNU_SOURCE` function: it is looked up.)
func pinSelf(to cpu: Int) {
    typealias SetAffinity = @convention(c) (pid_t, Int, UnsafeRawPointer) -> Int32
    guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "sched_setaffinity") else {
        note("no sched_setaffinity: this process is not pinned")
        return
    }
    var set = cpu_set_t()
    withUnsafeMutableBytes(of: &set) { $0[cpu / 8] |= UInt8(1 << (cpu % 8)) }
    let rc = withUnsafeBytes(of: &set) { unsafeBitCast(symbol, to: SetAffinity.self)(0, MemoryLayout<cpu_set_t>.size, $0.baseAddress!) }
    if rc != 0 { note("cannot pin to CPU \(cpu): errno \(errno)") }
}

/// logcast with a client listener and `--http`, both on port 0: the child and both ports.
func startLogcastHTTP(_ path: String, file: String, pin: Bool) -> (child: Child, tcp: UInt16, http: UInt16) {
    var argv = [path, file, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--heartbeat", "0", "--idle-timeout", "0",
                "--queue-limit", "\(1 << 30)", "--tick", "60", "--log-level", "error"]
    if pin { argv = ["/usr/bin/taskset", "-c", "1"] + argv }
    let child = spawn(argv)
    // "listening on HOST:PORT; connect with: nc HOST PORT" and "logcast: http on HOST:PORT; …", in either order.
    var tcp: UInt16?
    var http: UInt16?
    var text: [UInt8] = []
    var byte: UInt8 = 0
    let deadline = now() + 60
    while tcp == nil || http == nil {
        if now() > deadline { fail("logcast printed no listening lines in 60 s") }
        var p = pollfd(fd: child.stdout, events: Int16(POLLIN), revents: 0)
        guard poll(&p, 1, 1000) > 0 else { continue }
        let n = read(child.stdout, &byte, 1)
        if n < 0 && errno == EINTR { continue }
        if n <= 0 { fail("logcast exited before listening (output: \(String(decoding: text, as: UTF8.self)))") }
        guard byte == 10 else {
            text.append(byte)
            continue
        }
        let line = String(decoding: text, as: UTF8.self)
        text.removeAll()
        if line.contains("listening on"), let last = line.split(separator: " ").last, let port = UInt16(last) { tcp = port }
        if line.hasPrefix("logcast: http on "), let address = line.dropFirst(17).split(separator: ";").first,
           let colon = address.lastIndex(of: ":"), let port = UInt16(address[address.index(after: colon)...]) {
            http = port
        }
    }
    return (child, tcp!, http!)
}

// MARK: Ingest with and without web view clients

struct IngestRun {
    var seconds: Double
    /// logcast's CPU from the clock's start until the TCP client had every line.
    var cpu: Double
    /// How long logcast waited for a CPU meanwhile (runnable, not running).
    var wait = 0.0
    /// With browsers: seconds until the slowest page showed the last line, logcast's CPU
    /// until then, and what the pages counted.
    var browserSeconds = 0.0
    var browserCPU = 0.0
    var shown: [Int] = []
    var dropped: [Int] = []
    /// Lines logcast passed over for each page (too fast to show; shown + skipped + dropped
    /// is every line the page was written, sync lines included).
    var skipped: [Int] = []
    var peakKB = 0
    var load = 0.0
}

func runIngest(_ path: String, browsers: BrowserPool?, directory: String, payload: Payload, lines: Int, pin: Bool) -> IngestRun {
    fileCounter += 1
    let file = makeFile(directory, fileCounter)
    defer { unlink(file) }
    let (child, tcpPort, httpPort) = startLogcastHTTP(path, file: file, pin: pin)
    var readers = [Reader(fd: connectClient(port: tcpPort), framing: .prefix(file.utf8.count + 2), expected: lines)]
    browsers?.open(port: httpPort)
    // Synchronized here (the pages' WebSockets are open, so they get the sync lines too),
    // so that the CPU reading is taken just before the clock starts; drive()'s own sync
    // then finds every reader synchronized.
    _ = fcntl(readers[0].fd, F_SETFL, fcntl(readers[0].fd, F_GETFL) | O_NONBLOCK)
    var fds = [pollfd(fd: readers[0].fd, events: Int16(POLLIN), revents: 0)]
    let out = open(file, O_WRONLY | O_APPEND)
    synchronize(&readers, &fds, out: out, name: "costs sync")
    close(out)
    let load = loadAverage()
    let cpu0 = schedCPU(child.pid)
    let wait0 = schedWait(child.pid)
    var lost = 0
    let start = now()
    let seconds = drive(&readers, file: file, payload: payload, name: browsers == nil ? "costs, no web view" : "costs, web view", lost: &lost)
    let cpu1 = schedCPU(child.pid)
    var run = IngestRun(seconds: seconds, cpu: cpu1 - cpu0, wait: schedWait(child.pid) - wait0, load: load)
    if let browsers {
        let got = browsers.wait(for: "M\(lines - 1)", timeout: 600)
        run.browserSeconds = now() - start
        run.browserCPU = schedCPU(child.pid) - cpu0
        run.shown = got.shown
        run.dropped = got.dropped
        run.skipped = got.skipped
    }
    run.peakKB = residentKB(child.pid, field: "VmHWM")
    browsers?.blank()
    close(readers[0].fd)
    _ = stop(child)
    return run
}

// MARK: /metrics scraped

/// One `GET /metrics` on a new connection (`Connection: close`): the body's size; fails the
/// benchmark on anything but a `200` with logcast's samples in it.
func scrape(port: UInt16) -> Int {
    let fd = connectClient(port: port)
    defer { close(fd) }
    writeText(fd, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUser-Agent: logcast-bench\r\nConnection: close\r\n\r\n")
    var response: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    let deadline = now() + 30
    while true {
        if now() > deadline { fail("/metrics: no complete answer in 30 s") }
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&p, 1, 1000) > 0 else { continue }
        let n = read(fd, &chunk, chunk.count)
        if n < 0 && errno == EINTR { continue }
        if n <= 0 { break }
        response += chunk[0..<n]
    }
    let text = String(decoding: response, as: UTF8.self)
    guard text.hasPrefix("HTTP/1.1 200"), text.contains("logcast_file_lines_read_total") else {
        fail("/metrics answered: \(text.prefix(300))")
    }
    return response.count
}

struct MetricsWindow {
    var loaded: Bool
    var scraped: Bool
    var seconds: Double
    var schedCPU: Double
    var statCPU: Double
    var scrapes: Int
    var linesRead: Int
    var load: Double
}

/// A window of `seconds` on a running logcast: `rate` lines/s appended (0: idle) and read by
/// `reader`, `/metrics` fetched once a second when `scraped`.
func metricsWindow(_ child: Child, httpPort: UInt16, reader: Int32, out: Int32, rate: Int, scraped: Bool, seconds: Double,
                   lineCounter: inout Int) -> MetricsWindow {
    let load = loadAverage()
    let sched0 = schedCPU(child.pid), stat0 = statCPU(child.pid)
    let start = now()
    var nextWrite = start
    var nextScrape = start + 0.5
    var scrapes = 0
    var newlines = 0
    var chunk = [UInt8](repeating: 0, count: 1 << 16)
    let batch = max(1, rate / 100)
    while now() < start + seconds {
        if rate > 0 && now() >= nextWrite {
            var text = ""
            for _ in 0..<batch {
                text += "L\(lineCounter) 2026-11-21T12:00:00Z INFO GET /api/v1/items/\(lineCounter % 9973) steady load\n"
                lineCounter += 1
            }
            writeText(out, text)
            nextWrite += 0.01
        }
        if scraped && now() >= nextScrape {
            _ = scrape(port: httpPort)
            scrapes += 1
            nextScrape += 1
        }
        let wake = min(rate > 0 ? nextWrite : start + seconds, scraped ? nextScrape : start + seconds, start + seconds)
        var p = pollfd(fd: reader, events: Int16(POLLIN), revents: 0)
        if poll(&p, 1, Int32(max(0, min(wake - now(), 0.1)) * 1000)) > 0 {
            let n = read(reader, &chunk, chunk.count)
            if n > 0 { newlines += chunk[0..<n].reduce(0) { $1 == 10 ? $0 + 1 : $0 } }
        }
    }
    let elapsed = now() - start
    return MetricsWindow(loaded: rate > 0, scraped: scraped, seconds: elapsed, schedCPU: schedCPU(child.pid) - sched0,
                         statCPU: statCPU(child.pid) - stat0, scrapes: scrapes, linesRead: newlines, load: load)
}

struct MetricsResult {
    var windows: [MetricsWindow] = []
    var burst = 0
    var burstSeconds = 0.0
    var burstCPU = 0.0
    var bodyBytes = 0
}

func runMetrics(_ path: String, directory: String, options: CostsOptions) -> MetricsResult {
    fileCounter += 1
    let file = makeFile(directory, fileCounter)
    defer { unlink(file) }
    let (child, tcpPort, httpPort) = startLogcastHTTP(path, file: file, pin: options.pin)
    var readers = [Reader(fd: connectClient(port: tcpPort), framing: .prefix(file.utf8.count + 2), expected: 0)]
    _ = fcntl(readers[0].fd, F_SETFL, fcntl(readers[0].fd, F_GETFL) | O_NONBLOCK)
    var fds = [pollfd(fd: readers[0].fd, events: Int16(POLLIN), revents: 0)]
    let out = open(file, O_WRONLY | O_APPEND)
    synchronize(&readers, &fds, out: out, name: "metrics sync")
    var result = MetricsResult()
    result.bodyBytes = scrape(port: httpPort)
    var counter = 0
    for round in 0..<options.metricsRuns {
        // Both loads, each without and with the scraper; the order alternates per round.
        let order: [(Int, Bool)] = round % 2 == 0
            ? [(0, false), (0, true), (options.rate, false), (options.rate, true)]
            : [(options.rate, true), (options.rate, false), (0, true), (0, false)]
        for (rate, scraped) in order {
            let w = metricsWindow(child, httpPort: httpPort, reader: readers[0].fd, out: out, rate: rate, scraped: scraped,
                                  seconds: options.window, lineCounter: &counter)
            note("metrics round \(round + 1): \(rate > 0 ? "\(rate) lines/s" : "idle"), \(scraped ? "scraped 1/s" : "not scraped"): logcast CPU \(format(w.schedCPU / w.seconds * 100, 3))% of a core (stat: \(format(w.statCPU / w.seconds * 100, 2))%), \(w.scrapes) scrapes, \(w.linesRead) lines read, load \(format(w.load, 2))")
            result.windows.append(w)
        }
    }
    // Let the last batches drain, then the burst on an idle daemon.
    usleep(500_000)
    var chunk = [UInt8](repeating: 0, count: 1 << 16)
    while read(readers[0].fd, &chunk, chunk.count) > 0 {}
    let cpu0 = schedCPU(child.pid)
    let start = now()
    for _ in 0..<options.burst { _ = scrape(port: httpPort) }
    result.burstSeconds = now() - start
    result.burstCPU = schedCPU(child.pid) - cpu0
    result.burst = options.burst
    note("metrics burst: \(options.burst) scrapes in \(format(result.burstSeconds, 3)) s, logcast CPU \(format(result.burstCPU, 4)) s")
    close(out)
    close(readers[0].fd)
    _ = stop(child)
    return result
}

// MARK: The mode

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return 0 }
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

func runCosts(_ arguments: ArraySlice<String>) -> Never {
    let options = parseCosts(arguments)
    let candidates: [String] = ["Sources/logcast/.build/release/logcast", "../Sources/logcast/.build/release/logcast"]
    let built = candidates.first { access($0, X_OK) == 0 }
    let path = options.logcast ?? built ?? "Sources/logcast/.build/release/logcast"
    guard access(path, X_OK) == 0 else {
        fail("no logcast at \(path): build it first with `swift build -c release --package-path Sources/logcast --product logcast`, or pass --logcast PATH")
    }
    if options.pin {
        guard access("/usr/bin/taskset", X_OK) == 0, sysconf(Int32(_SC_NPROCESSORS_ONLN)) >= 2 else {
            fail("pinning needs /usr/bin/taskset and 2 CPUs; pass --no-pin")
        }
        pinSelf(to: 1)
    }
    var template = Array("/tmp/logcast-costs-XXXXXX".utf8CString)
    guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else { fail("mkdtemp failed") }
    let directory = String(cString: made)
    let startLoad = loadAverage()
    print("logcast-bench costs: logcast \(path), cores \(sysconf(Int32(_SC_NPROCESSORS_ONLN))), \(options.pin ? "logcast and the bench pinned to CPU 1, the browsers to CPU 0" : "not pinned"), load average at start \(format(startLoad, 2))")
    print("")

    if options.parts.contains("ingest") {
        let payload = Payload(lines: options.lines)
        let pool = BrowserPool(pages: options.browsers, cpu: options.pin ? 0 : nil, errors: directory + "/browsers.err")
        var without: [IngestRun] = []
        var with: [IngestRun] = []
        for round in 0..<options.runs {
            for browsers in round % 2 == 0 ? [false, true] : [true, false] {
                let run = runIngest(path, browsers: browsers ? pool : nil, directory: directory, payload: payload, lines: options.lines, pin: options.pin)
                if browsers {
                    with.append(run)
                    note("round \(round + 1): \(options.browsers) browsers: \(format(run.seconds, 3)) s to the TCP client, logcast CPU \(format(run.cpu, 3)) s, waited for a CPU \(format(run.wait, 3)) s; browsers done at \(format(run.browserSeconds, 2)) s (shown \(run.shown), skipped \(run.skipped), dropped \(run.dropped)), logcast CPU by then \(format(run.browserCPU, 3)) s, peak RSS \(run.peakKB) kB, load \(format(run.load, 2))")
                } else {
                    without.append(run)
                    note("round \(round + 1): no browser: \(format(run.seconds, 3)) s, logcast CPU \(format(run.cpu, 3)) s, waited for a CPU \(format(run.wait, 3)) s, peak RSS \(run.peakKB) kB, load \(format(run.load, 2))")
                }
            }
        }
        pool.quit()
        let n = Double(options.lines)
        let rateWithout = n / median(without.map(\.seconds))
        let rateWith = n / median(with.map(\.seconds))
        let cpuWithout = median(without.map(\.cpu)) / n * 1e9
        let cpuWith = median(with.map(\.cpu)) / n * 1e9
        print("Ingest, \(options.lines) lines (\(format(Double(payload.bytes.count) / 1e6, 1)) MB) in 1 MiB writes, medians of \(options.runs) interleaved runs:")
        print("")
        print("| configuration | ingest lines/s (to the TCP client) | logcast CPU per line until then | logcast waiting for a CPU meanwhile (s) | web view: all lines in every page after (s) | logcast CPU per line incl. the pages | lines each page counted | skipped (too fast to show) | dropped | peak RSS (kB) | load avg |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | --- | --- | --- | ---: | --- |")
        print("| `--http`, no web view client | \(grouped(rateWithout)) | \(format(cpuWithout, 0)) ns | \(format(median(without.map(\.wait)), 3)) | – | – | – | – | – | \(grouped(median(without.map { Double($0.peakKB) }))) | \(without.map { format($0.load, 2) }.joined(separator: ", ")) |")
        print("| `--http`, \(options.browsers) Chromium pages on `/` | \(grouped(rateWith)) | \(format(cpuWith, 0)) ns | \(format(median(with.map(\.wait)), 3)) | \(format(median(with.map(\.browserSeconds)), 2)) | \(format(median(with.map(\.browserCPU)) / n * 1e9, 0)) ns | \(with.map { $0.shown.map(String.init).joined(separator: "/") }.joined(separator: "; ")) | \(with.map { $0.skipped.map(String.init).joined(separator: "/") }.joined(separator: "; ")) | \(with.map { $0.dropped.map(String.init).joined(separator: "/") }.joined(separator: "; ")) | \(grouped(median(with.map { Double($0.peakKB) }))) | \(with.map { format($0.load, 2) }.joined(separator: ", ")) |")
        print("")
        print("With \(options.browsers) browsers / without: ingest \(format(rateWith / rateWithout, 3))× (goal ≥ 0.95), logcast CPU per line until the TCP client is done \(format(cpuWith / cpuWithout, 3))×.")
        print("Per run (s, without | with): \(without.map { format($0.seconds, 3) }.joined(separator: " ")) | \(with.map { format($0.seconds, 3) }.joined(separator: " "))")
        print("")
    }

    if options.parts.contains("metrics") {
        let result = runMetrics(path, directory: directory, options: options)
        print("/metrics once a second, windows of \(format(options.window, 0)) s, \(options.metricsRuns) interleaved rounds (logcast's CPU as % of one core, median of the rounds; schedstat, /proc/PID/stat in brackets):")
        print("")
        print("| logcast | not scraped | scraped 1/s | difference (the scrape's cost) | scrapes per window | lines read per window | load avg |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | --- |")
        for loaded in [false, true] {
            let plain = result.windows.filter { $0.loaded == loaded && !$0.scraped }
            let scraped = result.windows.filter { $0.loaded == loaded && $0.scraped }
            func pct(_ ws: [MetricsWindow], _ cpu: (MetricsWindow) -> Double) -> Double { median(ws.map { cpu($0) / $0.seconds * 100 }) }
            let a = pct(plain, \.schedCPU), b = pct(scraped, \.schedCPU)
            let sa = pct(plain, \.statCPU), sb = pct(scraped, \.statCPU)
            print("| \(loaded ? "\(grouped(Double(options.rate))) lines/s" : "idle") | \(format(a, 3))% [\(format(sa, 2))%] | \(format(b, 3))% [\(format(sb, 2))%] | \(format(b - a, 3))% [\(format(sb - sa, 2))%] | \(scraped.map { "\($0.scrapes)" }.joined(separator: "/")) | \(grouped(median(result.windows.filter { $0.loaded == loaded }.map { Double($0.linesRead) }))) | \(result.windows.filter { $0.loaded == loaded }.map { format($0.load, 2) }.joined(separator: ", ")) |")
        }
        let perScrape = result.burstCPU / Double(result.burst)
        print("")
        print("Burst: \(result.burst) scrapes back to back in \(format(result.burstSeconds, 3)) s, logcast CPU \(format(result.burstCPU, 4)) s: \(format(perScrape * 1e6, 1)) µs per scrape (a \(result.bodyBytes)-byte answer), so once a second costs \(format(perScrape * 100, 4))% of a core (goal < 1%).")
        print("")
    }
    print("Load average at the end: \(format(loadAverage(), 2)) (start \(format(startLoad, 2))); the machine is shared.")
    _ = system("rm -rf '\(directory)'")
    exit(0)
}

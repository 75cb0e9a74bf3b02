import Foundation
import Glibc
import ReactiveUVNATSTestKit
import XCTest

/// `--http HOST:PORT` (issue 31): `/metrics` in Prometheus's text format, `/healthz`,
/// `/readyz`, the bearer token on `/metrics` and protected mode. The real daemon, scraped
/// with curl; the scrape also parsed with Prometheus's Python client.
final class LogcastMetricsTests: XCTestCase {
    var dir = ""
    var processes: [LogcastProcess] = []
    var servers: NATSTestServers?

    override func setUp() { dir = temporaryDirectory() }

    override func tearDown() {
        for p in processes { p.stop() }
        processes = []
        servers?.stopAll()
        servers = nil
        try? FileManager.default.removeItem(atPath: dir)
    }

    /// Starts logcast and waits for both its listener and its HTTP endpoint; the
    /// endpoint's port.
    func start(_ arguments: [String]) throws -> (LogcastProcess, Int) {
        let p = try LogcastProcess(arguments)
        processes.append(p)
        _ = try p.waitUntilListening()
        return (p, try p.httpPort())
    }

    /// `curl` (bounded): the status and body of `GET http://127.0.0.1:port/path`.
    func get(_ port: Int, _ path: String, headers: [String] = []) throws -> (status: Int, body: String, contentType: String) {
        let (code, out) = try run("/usr/bin/curl", ["-s", "-S", "--max-time", "30", "-o", dir + "/body",
                                                    "-w", "%{http_code} %{content_type}"]
                                      + headers.flatMap { ["-H", $0] } + ["http://127.0.0.1:\(port)\(path)"])
        XCTAssertEqual(code, 0, "curl failed: \(out)")
        let fields = out.split(separator: " ", maxSplits: 1).map(String.init)
        let body = (try? String(contentsOfFile: dir + "/body", encoding: .utf8)) ?? ""
        return (Int(fields.first ?? "") ?? -1, body, fields.count > 1 ? fields[1] : "")
    }

    /// Runs a program (bounded by `timeout(1)`); its status and standard output.
    func run(_ executable: String, _ arguments: [String], input: String? = nil) throws -> (Int32, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/timeout")
        process.arguments = ["90", executable] + arguments
        let out = Pipe()
        process.standardOutput = out
        let stdin = Pipe()
        process.standardInput = stdin
        try process.run()
        if let input { stdin.fileHandleForWriting.write(Data(input.utf8)) }
        try? stdin.fileHandleForWriting.close()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    /// One sample of a scrape: its name, labels (unescaped) and value.
    struct Sample {
        let name: String
        let labels: [String: String]
        let value: Double
    }

    /// Checks the exposition line by line, as the 0.0.4 text format says, and returns its
    /// samples: each family's HELP and TYPE at most once and before its samples, every
    /// sample's family typed, counters named `_total`, values that parse as floats, label
    /// values whose escapes are only `\\`, `\"` and `\n`, each family's samples one group.
    func parseExposition(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> [Sample] {
        var types: [String: String] = [:]
        var helps: Set<String> = []
        var sampled: Set<String> = []
        var samples: [Sample] = []
        XCTAssertTrue(text.hasSuffix("\n"), "the exposition ends with a line feed", file: file, line: line)
        for row in text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init) {
            if row.hasPrefix("# HELP ") {
                let name = String(row.dropFirst(7).prefix(while: { $0 != " " }))
                XCTAssertTrue(helps.insert(name).inserted, "a second HELP for \(name)", file: file, line: line)
                XCTAssertFalse(sampled.contains(name), "HELP after samples of \(name)", file: file, line: line)
                continue
            }
            if row.hasPrefix("# TYPE ") {
                let parts = row.split(separator: " ")
                XCTAssertEqual(parts.count, 4, row, file: file, line: line)
                let name = String(parts[2])
                XCTAssertNil(types[name], "a second TYPE for \(name)", file: file, line: line)
                XCTAssertFalse(sampled.contains(name), "TYPE after samples of \(name)", file: file, line: line)
                XCTAssertTrue(["counter", "gauge", "untyped", "histogram", "summary"].contains(String(parts[3])), row, file: file, line: line)
                types[name] = String(parts[3])
                continue
            }
            XCTAssertFalse(row.isEmpty || row.hasPrefix("#"), "an unexpected line: '\(row)'", file: file, line: line)
            var chars = Substring(row)
            let name = String(chars.prefix(while: { $0.isLetter || $0.isNumber || $0 == "_" || $0 == ":" }))
            XCTAssertFalse(name.isEmpty, "no metric name: '\(row)'", file: file, line: line)
            chars = chars.dropFirst(name.count)
            var labels: [String: String] = [:]
            if chars.first == "{" {
                chars = chars.dropFirst()
                while chars.first != "}" {
                    let label = String(chars.prefix(while: { $0 != "=" }))
                    chars = chars.dropFirst(label.count)
                    guard chars.hasPrefix("=\"") else { XCTFail("bad label in '\(row)'", file: file, line: line); return samples }
                    chars = chars.dropFirst(2)
                    var value = ""
                    while let c = chars.first, c != "\"" {
                        chars = chars.dropFirst()
                        if c == "\\" {
                            switch chars.first {
                            case "\\": value.append("\\")
                            case "\"": value.append("\"")
                            case "n": value.append("\n")
                            default: XCTFail("a bad escape in '\(row)'", file: file, line: line); return samples
                            }
                            chars = chars.dropFirst()
                        } else {
                            value.append(c)
                        }
                    }
                    guard chars.first == "\"" else { XCTFail("an unterminated label value in '\(row)'", file: file, line: line); return samples }
                    chars = chars.dropFirst()
                    labels[label] = value
                    if chars.first == "," { chars = chars.dropFirst() }
                }
                chars = chars.dropFirst()
            }
            guard chars.first == " " else { XCTFail("no space before the value: '\(row)'", file: file, line: line); return samples }
            let valueText = String(chars.dropFirst())
            let value = valueText == "+Inf" ? Double.infinity : valueText == "-Inf" ? -Double.infinity : Double(valueText)
            XCTAssertNotNil(value, "the value of '\(row)' is not a float", file: file, line: line)
            guard let type = types[name] else { XCTFail("\(name) has no TYPE before its sample", file: file, line: line); continue }
            if type == "counter" { XCTAssertTrue(name.hasSuffix("_total"), "the counter \(name) does not end in _total", file: file, line: line) }
            XCTAssertTrue(helps.contains(name), "\(name) has no HELP", file: file, line: line)
            // A family's samples are one group: a family seen again after another's samples
            // is read by Prometheus's parsers as a second, untyped family.
            if let previous = samples.last?.name, previous != name {
                XCTAssertFalse(sampled.contains(name), "the samples of \(name) are not one group", file: file, line: line)
            }
            sampled.insert(name)
            samples.append(Sample(name: name, labels: labels, value: value ?? .nan))
        }
        return samples
    }

    func value(_ samples: [Sample], _ name: String, _ labels: [String: String] = [:]) -> Double? {
        samples.first { $0.name == name && $0.labels == labels }?.value
    }

    /// The first scrape (bounded) whose samples satisfy `done`.
    func scrape(_ port: Int, headers: [String] = [], until done: ([Sample]) -> Bool) throws -> (String, [Sample]) {
        let deadline = Date().addingTimeInterval(60)
        var last: (String, [Sample]) = ("", [])
        while Date() < deadline {
            let (status, body, contentType) = try get(port, "/metrics", headers: headers)
            XCTAssertEqual(status, 200, body)
            XCTAssertTrue(contentType.hasPrefix("text/plain; version=0.0.4"), contentType)
            last = (body, parseExposition(body))
            if done(last.1) { return last }
            usleep(50_000)
        }
        return last
    }

    /// Appends `sync-K` lines to each file until a client filtering on them gets the last
    /// one appended: the tails (opened off the loop, from the files' ends) then follow, and
    /// nothing appended is still on its way, so a scrape now is a steady baseline.
    func synchronize(_ client: LineClient, files: [String]) {
        _ = client.command("GREP ^sync-", reply: "OK GREP")
        for file in files {
            var k = 0
            var seen = false
            while !seen && k < 300 {
                appendLines(file, ["sync-\(k)"])
                let wanted = "\(file): sync-\(k)"
                k += 1
                seen = !client.readLines(timeout: 0.5) { $0.contains(wanted) }.filter { $0 == wanted }.isEmpty
            }
            XCTAssertTrue(seen, "the tail of \(file) never started")
        }
    }

    func testTheScrapeIsWellFormedAndCountsExactlyTheLinesWrittenPerFileWithAQuoteInItsPath() throws {
        let odd = dir + "/we\"ird\\name.log"
        let plain = dir + "/plain.log"
        // Followed but never written to after start (its lines would hold a line feed in the
        // client protocol's prefix): only its label is checked.
        let broken = dir + "/new\nline.log"
        appendLines(odd, ["before start"])
        appendLines(plain, ["before start"])
        appendLines(broken, ["before start"])
        let (p, http) = try start([odd, plain, broken, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--heartbeat", "0"])
        let client = try LineClient(port: p.port)
        synchronize(client, files: [odd, plain])
        let baseline = try scrape(http) { _ in true }.1
        var before: [String: Double] = [:]
        var beforeBytes: [String: Double] = [:]
        for path in [odd, plain] {
            before[path] = value(baseline, "logcast_file_lines_read_total", ["file": path]) ?? -1
            beforeBytes[path] = value(baseline, "logcast_file_read_bytes_total", ["file": path]) ?? -1
            XCTAssertGreaterThan(before[path]!, 0)
        }
        let readBefore = try scrape(http) { _ in true }.1
        let total = value(readBefore, "logcast_lines_read_total") ?? -1

        let n = 1_000
        let lines = (1...n).map { "line \($0) of the odd file" }
        appendLines(odd, lines)
        appendLines(plain, ["one", "two", "three"])
        let bytes = lines.reduce(0) { $0 + $1.utf8.count + 1 }
        let (text, samples) = try scrape(http) {
            self.value($0, "logcast_lines_read_total") == total + Double(n + 3)
        }
        XCTAssertEqual(value(samples, "logcast_lines_read_total"), total + Double(n + 3), text)
        XCTAssertEqual(value(samples, "logcast_file_lines_read_total", ["file": odd]), before[odd]! + Double(n))
        XCTAssertEqual(value(samples, "logcast_file_read_bytes_total", ["file": odd]), beforeBytes[odd]! + Double(bytes))
        XCTAssertEqual(value(samples, "logcast_file_lines_read_total", ["file": plain]), before[plain]! + 3)
        XCTAssertEqual(value(samples, "logcast_file_read_bytes_total", ["file": plain]),
                       beforeBytes[plain]! + Double("one\ntwo\nthree\n".utf8.count))
        XCTAssertEqual(value(samples, "logcast_file_rotations_total", ["file": odd]), 0)
        XCTAssertEqual(value(samples, "logcast_file_lines_read_total", ["file": broken]), 0)
        // The raw text holds the paths escaped, exactly as the format writes them.
        XCTAssertTrue(text.contains(#"file="\#(dir)/we\"ird\\name.log""#), text)
        XCTAssertTrue(text.contains(#"file="\#(dir)/new\nline.log""#), text)

        // Every STATS field is there, under its Prometheus name, with STATS's value.
        let stats = client.command("STATS", reply: "STATS").last ?? ""
        XCTAssertTrue(stats.contains("lines_read=\(Int(total) + n + 3) "), stats)
        let (_, after) = try scrape(http) { self.value($0, "logcast_clients") == 1 }
        // Each STATS field is in a metric's name (lines_read in logcast_lines_read_total).
        let keys = stats.split(separator: " ").dropFirst().compactMap { $0.split(separator: "=").first.map(String.init) }
        XCTAssertGreaterThanOrEqual(keys.count, 10, stats)
        for key in keys {
            XCTAssertTrue(after.contains { $0.name.hasPrefix("logcast_") && $0.name.contains(key) }, "STATS \(key) has no metric")
        }
        XCTAssertEqual(value(after, "logcast_clients"), 1)
        XCTAssertEqual(value(after, "logcast_clients_connected", ["class": "anonymous"]), 1)
        for name in ["logcast_lines_sent_total", "logcast_lines_dropped_total", "logcast_lines_forwarded_total",
                     "logcast_filter_patterns", "logcast_filter_compiles_total", "logcast_filter_split_scans_total",
                     "logcast_clients_refused_total", "logcast_uptime_seconds", "logcast_filter_scan_seconds_total",
                     "process_resident_memory_bytes", "process_open_fds", "process_start_time_seconds",
                     "process_cpu_seconds_total"] {
            XCTAssertNotNil(value(after, name), "\(name) is missing")
        }
        XCTAssertGreaterThan(value(after, "process_resident_memory_bytes") ?? 0, Double(1 << 20))
        XCTAssertGreaterThan(value(after, "process_open_fds") ?? 0, 3)
        let started = value(after, "process_start_time_seconds") ?? 0
        XCTAssertLessThan(abs(started - Date().timeIntervalSince1970), 3600, "the start time is the epoch seconds of today")

        // Prometheus's own parser reads the same scrape and finds the same counts.
        let script = """
            import sys
            from prometheus_client.parser import text_string_to_metric_families
            for family in text_string_to_metric_families(sys.stdin.read()):
                for s in family.samples:
                    if s.name == 'logcast_file_lines_read_total' and 'new' not in s.labels['file']:
                        print(family.type, repr(s.labels['file']), int(s.value))
            """
        let (status, parsed) = try run("/usr/bin/python3", ["-c", script], input: text)
        guard status == 0 || !parsed.isEmpty else {
            throw XCTSkip("prometheus_client is not importable (scripts/ensure-deps.sh installs it)")
        }
        let expected = ["counter \(pythonRepr(odd)) \(Int(before[odd]!) + n)", "counter \(pythonRepr(plain)) \(Int(before[plain]!) + 3)"]
        XCTAssertEqual(parsed.split(separator: "\n").map(String.init).sorted(), expected.sorted(), parsed)
        let (_, newline) = try run("/usr/bin/python3", ["-c", script.replacingOccurrences(of: " and 'new' not in", with: " and 'new' in")], input: text)
        XCTAssertEqual(newline, "counter \(pythonRepr(broken)) 0\n")
    }

    func testRotationsAndALineTooLongAreCountedPerFile() throws {
        let log = dir + "/app.log"
        appendLines(log, ["before start"])
        let (p, http) = try start([log, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--heartbeat", "0"])
        let client = try LineClient(port: p.port)
        synchronize(client, files: [log])
        let baseline = try scrape(http) { _ in true }.1
        let lines = value(baseline, "logcast_file_lines_read_total", ["file": log]) ?? -1
        let bytes = value(baseline, "logcast_file_read_bytes_total", ["file": log]) ?? -1
        XCTAssertEqual(value(baseline, "logcast_file_rotations_total", ["file": log]), 0)
        XCTAssertNil(value(baseline, "logcast_file_lost_bytes_total", ["file": log, "reason": "line_too_long"]))

        // Over the follower's 1 MiB line limit: left out, counted as lost, and the next
        // line is read.
        let long = 1_200_000
        appendLines(log, [String(repeating: "x", count: long), "after long"])
        let (_, lost) = try scrape(http) { self.value($0, "logcast_file_lines_read_total", ["file": log]) == lines + 1 }
        XCTAssertEqual(value(lost, "logcast_file_lines_read_total", ["file": log]), lines + 1)
        XCTAssertEqual(value(lost, "logcast_file_read_bytes_total", ["file": log]), bytes + Double("after long\n".utf8.count))
        XCTAssertEqual(value(lost, "logcast_file_lost_bytes_total", ["file": log, "reason": "line_too_long"]), Double(long + 1))
        XCTAssertEqual(value(lost, "logcast_file_losses_total", ["file": log, "reason": "line_too_long"]), 1)

        // A rotation by rename: the new file is read from its start.
        XCTAssertEqual(rename(log, log + ".1"), 0)
        appendLines(log, ["new 1", "new 2"])
        let (_, rotated) = try scrape(http) { self.value($0, "logcast_file_lines_read_total", ["file": log]) == lines + 3 }
        XCTAssertEqual(value(rotated, "logcast_file_lines_read_total", ["file": log]), lines + 3)
        XCTAssertEqual(value(rotated, "logcast_file_rotations_total", ["file": log]), 1)
        XCTAssertEqual(value(rotated, "logcast_file_read_bytes_total", ["file": log]),
                       bytes + Double("after long\nnew 1\nnew 2\n".utf8.count))
        XCTAssertEqual(value(rotated, "logcast_file_waiting", ["file": log]), 0)
        XCTAssertEqual(value(rotated, "logcast_file_truncations_total", ["file": log]), 0)

        // copytruncate's cut: shorter than what was read (12 bytes), read again from 0.
        XCTAssertEqual(truncate(log, 0), 0)
        appendLines(log, ["t 1"])
        let (_, cut) = try scrape(http) { self.value($0, "logcast_file_lines_read_total", ["file": log]) == lines + 4 }
        XCTAssertEqual(value(cut, "logcast_file_lines_read_total", ["file": log]), lines + 4)
        XCTAssertEqual(value(cut, "logcast_file_truncations_total", ["file": log]), 1)
        XCTAssertEqual(value(cut, "logcast_file_rotations_total", ["file": log]), 1)
    }

    /// Python's `repr` of a str with no single quote (single-quoted; backslash and line
    /// feed escaped).
    func pythonRepr(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\n", with: "\\n") + "'"
    }

    func testReadyzIs503UntilNATSIsUpThen200ThenAgain503WhenItGoesAwayWhileHealthzAnswers() throws {
        guard natsServerPath() != nil else { throw XCTSkip("nats-server is not installed") }
        let servers = try NATSTestServers(count: 1)
        self.servers = servers
        let log = dir + "/edge.log"
        appendLines(log, ["first"])
        // The NATS server is configured (its port chosen) but not started yet: the edge
        // cannot connect, so the daemon is alive but not ready.
        let (p, http) = try start([log, "--publish", servers.urls[0], "--state-dir", dir + "/state",
                                   "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0"])
        let notReady = try get(http, "/readyz")
        XCTAssertEqual(notReady.status, 503, notReady.body)
        XCTAssertTrue(notReady.body.hasPrefix(#"{"status":"not ready","reasons":["#), notReady.body)
        XCTAssertTrue(notReady.body.contains("NATS edge (--publish) is not connected"), notReady.body)
        XCTAssertTrue(notReady.contentType.hasPrefix("application/json"), notReady.contentType)
        let health = try get(http, "/healthz")
        XCTAssertEqual(health.status, 200)
        XCTAssertEqual(health.body, #"{"status":"ok"}"# + "\n")
        let (_, down) = try scrape(http) { _ in true }
        XCTAssertEqual(value(down, "logcast_nats_edge_connected"), 0)
        XCTAssertEqual(value(down, "logcast_ready"), 0)

        try servers.startAll()
        let deadline = Date().addingTimeInterval(90)
        var ready = try get(http, "/readyz")
        while ready.status != 200 && Date() < deadline {
            XCTAssertEqual(ready.status, 503, ready.body)
            usleep(100_000)
            ready = try get(http, "/readyz")
        }
        XCTAssertEqual(ready.status, 200, "\(ready.body) \(p.errors)")
        XCTAssertEqual(ready.body, #"{"status":"ready"}"# + "\n")
        let (_, up) = try scrape(http) { _ in true }
        XCTAssertEqual(value(up, "logcast_nats_edge_connected"), 1)
        XCTAssertEqual(value(up, "logcast_ready"), 1)
        // The edge follows its file itself (from its first line): counted per file too.
        appendLines(log, ["second", "third"])
        let (_, counted) = try scrape(http) { self.value($0, "logcast_file_lines_read_total", ["file": log]) == 3 }
        XCTAssertEqual(value(counted, "logcast_file_lines_read_total", ["file": log]), 3)
        XCTAssertEqual(value(counted, "logcast_file_read_bytes_total", ["file": log]), Double("first\nsecond\nthird\n".utf8.count))

        // nats-server goes away: not ready again (while the daemon lives and says why).
        servers.stopAll()
        var again = try get(http, "/readyz")
        let until = Date().addingTimeInterval(90)
        while again.status != 503 && Date() < until {
            usleep(100_000)
            again = try get(http, "/readyz")
        }
        XCTAssertEqual(again.status, 503, again.body)
        XCTAssertTrue(again.body.contains("NATS edge (--publish) is not connected"), again.body)
        XCTAssertEqual(try get(http, "/healthz").status, 200)
    }

    func testMetricsAskForTheBearerTokenWhileTheHealthEndpointsStayOpen() throws {
        let log = dir + "/app.log"
        appendLines(log, ["x"])
        let tokenFile = dir + "/token"
        XCTAssertTrue(FileManager.default.createFile(atPath: tokenFile, contents: Data("s3cret-token\n".utf8)))
        let (p, http) = try start([log, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--auth-token-file", tokenFile])
        XCTAssertEqual(try get(http, "/metrics").status, 401)
        XCTAssertEqual(try get(http, "/metrics", headers: ["Authorization: Bearer s3cret-toke"]).status, 401)
        XCTAssertEqual(try get(http, "/metrics", headers: ["Authorization: Bearer s3cret-tokenX"]).status, 401)
        XCTAssertEqual(try get(http, "/metrics", headers: ["Authorization: Basic s3cret-token"]).status, 401)
        let allowed = try get(http, "/metrics", headers: ["Authorization: Bearer s3cret-token"])
        XCTAssertEqual(allowed.status, 200)
        XCTAssertNotNil(value(parseExposition(allowed.body), "logcast_lines_read_total"))
        XCTAssertEqual(try get(http, "/healthz").status, 200)
        XCTAssertEqual(try get(http, "/readyz").status, 200)
        XCTAssertEqual(try get(http, "/nothing").status, 404)
        let (postStatus, postOut) = try run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST",
                                                             "http://127.0.0.1:\(http)/metrics"])
        XCTAssertEqual(postStatus, 0)
        XCTAssertEqual(postOut, "405")
        // The endpoint ends with the daemon: SIGTERM still exits 0 (nothing of HTTP keeps
        // the loop running), and the port is closed.
        p.signal(SIGTERM)
        XCTAssertEqual(p.waitForExit(timeout: 30), 0, p.errors)
        let (closed, _) = try run("/usr/bin/curl", ["-s", "--max-time", "10", "http://127.0.0.1:\(http)/healthz"])
        XCTAssertEqual(closed, 7, "curl: couldn't connect")
    }

    func testAMissingFileIsWaitedOnAndReadyAndCountedOnceItAppears() throws {
        let log = dir + "/later.log"
        let (_, http) = try start([log, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0"])
        XCTAssertEqual(try get(http, "/readyz").status, 200, "a missing file is waited on: ready")
        let (_, waiting) = try scrape(http) { self.value($0, "logcast_file_waiting", ["file": log]) == 1 }
        XCTAssertEqual(value(waiting, "logcast_file_waiting", ["file": log]), 1)
        XCTAssertEqual(value(waiting, "logcast_file_lines_read_total", ["file": log]), 0)
        // It appears: read from its start, and its first appearance is no rotation.
        appendLines(log, ["a", "b", "c"])
        let (_, read) = try scrape(http) { self.value($0, "logcast_file_lines_read_total", ["file": log]) == 3 }
        XCTAssertEqual(value(read, "logcast_file_lines_read_total", ["file": log]), 3)
        XCTAssertEqual(value(read, "logcast_file_waiting", ["file": log]), 0)
        XCTAssertEqual(value(read, "logcast_file_rotations_total", ["file": log]), 0)
    }

    func testHTTPOnANonLoopbackAddressFollowsProtectedMode() throws {
        let log = dir + "/app.log"
        appendLines(log, ["x"])
        let (status, out, err) = try runToExit([log, "--listen", "127.0.0.1:0", "--http", "0.0.0.0:0"])
        XCTAssertEqual(status, 1, out)
        XCTAssertTrue(err.hasPrefix("logcast: error: --http 0.0.0.0 is not a loopback address and no --auth-token-file"), err)
        XCTAssertTrue(err.contains("--allow-unauthenticated"), err)
        XCTAssertFalse(out.contains("http on"), out)

        let (_, open) = try start([log, "--listen", "127.0.0.1:0", "--http", "0.0.0.0:0", "--allow-unauthenticated"])
        XCTAssertEqual(try get(open, "/metrics").status, 200)
        let tokenFile = dir + "/token"
        XCTAssertTrue(FileManager.default.createFile(atPath: tokenFile, contents: Data("t\n".utf8)))
        let (_, guarded) = try start([log, "--listen", "127.0.0.1:0", "--http", "0.0.0.0:0", "--auth-token-file", tokenFile])
        XCTAssertEqual(try get(guarded, "/metrics").status, 401)
        XCTAssertEqual(try get(guarded, "/metrics", headers: ["Authorization: Bearer t"]).status, 200)

        // The port is taken (by the daemon above): a clear start-up error, exit 1.
        let (busyStatus, _, busyErr) = try runToExit([log, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:\(open)",
                                                      "--allow-unauthenticated"])
        XCTAssertEqual(busyStatus, 1, busyErr)
        XCTAssertTrue(busyErr.contains("logcast: error: cannot serve --http on 127.0.0.1:\(open)"), busyErr)

        let (badStatus, _, badErr) = try runToExit([log, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:99999"])
        XCTAssertEqual(badStatus, 64)
        XCTAssertTrue(badErr.contains("--http: port 99999 is out of range"), badErr)
    }
}

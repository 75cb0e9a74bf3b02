import Foundation
import Glibc
import XCTest

/// `--multiline-start` (issue 31, section 5): the real daemon following real files that
/// real stack traces are written to in bursts, read by a plain TCP client. Events are
/// told apart by the `seq=N` in their first lines; a record is a line with the file prefix
/// and the TAB-indented lines after it (the wire form in MultilineAssembler.swift).
final class LogcastMultilineTests: LogcastProcessTestCase {
    /// Starts a line: a date, as the applications below log it, or a sync line.
    static let start = #"^(\d{4}-\d\d-\d\d |sync-)"#

    /// A Java stack trace as the JVM prints one (with a cause), after a log line `seq`.
    static func javaTrace(_ seq: Int) -> [String] {
        [
            "2026-11-28 01:00:\(String(format: "%02d", seq % 60)).123 ERROR [main] seq=\(seq) request failed",
            "java.lang.IllegalStateException: could not load order 42",
            "\tat com.example.orders.OrderService.load(OrderService.java:87)",
            "\tat com.example.orders.OrderController.get(OrderController.java:31)",
            "\tat java.base/jdk.internal.reflect.DirectMethodHandleAccessor.invoke(DirectMethodHandleAccessor.java:103)",
            "\tat java.base/java.lang.reflect.Method.invoke(Method.java:580)",
            "Caused by: java.lang.NullPointerException: Cannot invoke \"String.length()\" because \"name\" is null",
            "\tat com.example.orders.OrderRepository.find(OrderRepository.java:19)",
            "\tat com.example.orders.OrderService.load(OrderService.java:85)",
            "\t... 2 more",
        ]
    }

    /// A real Python traceback (a chained exception), made by python3 itself, after a log
    /// line `seq`.
    static func pythonTrace(_ seq: Int) throws -> [String] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-c", """
            import traceback
            def parse(text):
                return int(text)
            def load(config):
                try:
                    return parse(config["port"])
                except ValueError as e:
                    raise RuntimeError("bad config") from e
            try:
                load({"port": "eighty"})
            except RuntimeError:
                print(traceback.format_exc(), end="")
            """]
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let trace = String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
            .map(String.init).filter { !$0.isEmpty }
        XCTAssertTrue(trace.contains { $0.hasPrefix("Traceback (most recent call last):") }, "not a traceback: \(trace)")
        XCTAssertTrue(trace.contains("RuntimeError: bad config"), "not the traceback expected: \(trace)")
        // A blank line separates the two tracebacks of a chain: blank lines are dropped
        // above (an empty line in a file is a line of its own, kept as is; a test of the
        // traces' text need not depend on it).
        return ["2026-11-28 01:01:\(String(format: "%02d", seq % 60)).456 ERROR worker seq=\(seq) job crashed"] + trace
    }

    /// Starts logcast on `file` with `options`, and a client that gets every event from
    /// now on: the tail follows once the client saw a sync line (each is an event of its
    /// own, sent when the next one comes or after the timeout).
    func startLogcast(_ file: String, _ options: [String]) throws -> (LogcastProcess, LineClient) {
        appendLines(file, ["sync-start"])
        let p = try start([file, "--listen", "127.0.0.1:0", "--heartbeat", "0", "--multiline-start", Self.start] + options)
        let client = try LineClient(port: p.port)
        var seen = false
        for k in 0..<300 where !seen {
            appendLines(file, ["sync-\(k)"])
            seen = !client.readLines(timeout: 0.2) { $0.contains { $0.hasPrefix(file + ": sync-") } }.isEmpty
        }
        XCTAssertTrue(seen, "the tail of \(file) never started")
        // The last sync lines go out with the timeout; the test's events start after them.
        _ = client.readLines(timeout: 0.1) { _ in false }
        return (p, client)
    }

    /// `file`'s lines read so far by `/metrics` (-1 when not listed), after waiting up to
    /// 60 s for it to reach `count`, if given.
    static func linesRead(_ http: Int, file: String, waitingFor count: Double? = nil) throws -> Double {
        let key = "logcast_file_lines_read_total{file=\"\(file)\"}"
        let deadline = Date().addingTimeInterval(60)
        var read = try scrapeMetrics(http)[key] ?? -1
        while let count, read < count, Date() < deadline {
            usleep(50_000)
            read = try scrapeMetrics(http)[key] ?? -1
        }
        return read
    }

    /// Reads until `expected` lines (records' first lines and their continuations) came
    /// from the first record with a `seq=` on (the sync lines before it are left out); the
    /// records, each as its lines (the first without the file prefix, the others without
    /// their TAB). The last event of the file is sent by the timeout.
    func readRecords(_ client: LineClient, file: String, lines expected: Int, timeout: Double = 60) -> [[String]] {
        let prefix = file + ": "
        var from: Int?
        let lines = client.readLines(timeout: timeout) { lines in
            if from == nil, let last = lines.last, last.hasPrefix(prefix), last.contains("seq=") { from = lines.count - 1 }
            guard let from else { return false }
            return lines.count - from >= expected
        }
        var records: [[String]] = []
        for line in lines.dropFirst(from ?? lines.count) {
            if line.hasPrefix(prefix) {
                records.append([String(line.dropFirst(prefix.count))])
            } else if line.hasPrefix("\t"), !records.isEmpty {
                records[records.count - 1].append(String(line.dropFirst()))
            } else {
                XCTFail("a line neither a record nor a continuation: \(line)")
            }
        }
        return records
    }

    /// Writes `lines` in `parts` writes, `pause` seconds apart (a trace written in bursts).
    func writeInBursts(_ path: String, _ lines: [String], parts: Int, pause: Double) {
        let size = (lines.count + parts - 1) / parts
        var index = 0
        while index < lines.count {
            appendLines(path, Array(lines[index..<min(lines.count, index + size)]))
            index += size
            if index < lines.count { usleep(UInt32(pause * 1e6)) }
        }
    }

    /// The `STATS` reply's fields.
    func stats(_ port: Int) throws -> [String: String] {
        let client = try LineClient(port: port)
        _ = client.command("PAUSE", reply: "OK PAUSE")
        let line = client.command("STATS", reply: "STATS").last ?? ""
        var fields: [String: String] = [:]
        for field in line.split(separator: " ").dropFirst() {
            let kv = field.split(separator: "=", maxSplits: 1)
            if kv.count == 2 { fields[String(kv[0])] = String(kv[1]) }
        }
        return fields
    }

    /// Java and Python traces, each written in several bursts with pauses shorter than the
    /// timeout, come out one record per event, every line in it, in order; the last one
    /// (a quiet file) comes with the timeout.
    func testTracesWrittenInBurstsAreOneEventEach() throws {
        let file = dir + "/app.log"
        let (p, client) = try startLogcast(file, ["--multiline-timeout", "1"])
        let python = try Self.pythonTrace(2)
        let events = [Self.javaTrace(1), python, ["2026-11-28 01:02:00.000 INFO seq=3 one line"], Self.javaTrace(4), try Self.pythonTrace(5)]
        for event in events { writeInBursts(file, event, parts: 3, pause: 0.15) }
        let records = readRecords(client, file: file, lines: events.joined().count)
        XCTAssertEqual(records.map { $0[0] }, events.map { $0[0] }, "one record per event, in order")
        XCTAssertEqual(records, events, "every line of every event, as written")
        XCTAssertTrue(records[1].contains("RuntimeError: bad config"))
        let fields = try stats(p.port)
        XCTAssertEqual(fields["multiline_cuts"], "0")
    }

    /// A trace at the end of a file rotated away (renamed, then its writer finishes the
    /// trace in it) stays one event, and comes before the new file's events.
    func testTraceAtTheEndOfARotatedFileStaysOneEvent() throws {
        let file = dir + "/app.log"
        let (p, client) = try startLogcast(file, ["--http", "127.0.0.1:0"])
        let http = try p.httpPort()
        let first = Self.javaTrace(1)
        let second = try Self.pythonTrace(2)
        // The trace's first lines are read (and held, waiting for the rest) before the rename.
        let before = try Self.linesRead(http, file: file)
        appendLines(file, Array(first.prefix(4)))
        XCTAssertEqual(try Self.linesRead(http, file: file, waitingFor: before + 4), before + 4, "the first lines were read")
        XCTAssertEqual(rename(file, file + ".1"), 0)
        // The writer still holds the old file: the rest of its trace goes there.
        appendLines(file + ".1", Array(first.dropFirst(4)))
        appendLines(file, second)
        appendLines(file, ["2026-11-28 01:03:00.000 INFO seq=3 after the rotation"])
        let records = readRecords(client, file: file, lines: first.count + second.count + 1)
        XCTAssertEqual(records.map { $0[0] }, [first[0], second[0], "2026-11-28 01:03:00.000 INFO seq=3 after the rotation"])
        XCTAssertEqual(records.first, first, "the rotated file's trace is one event")
        XCTAssertEqual(records.dropFirst().first, second)
    }

    /// The last event of a quiet file is sent by the timeout (bounded generously: the
    /// assertion is that it arrives whole, not when), and counted as sent by it.
    func testQuietFileLastEventArrivesByTheTimeout() throws {
        let file = dir + "/app.log"
        let (p, client) = try startLogcast(file, ["--multiline-timeout", "0.3"])
        let before = Int(try stats(p.port)["multiline_timeouts"] ?? "") ?? -1
        let event = Self.javaTrace(7)
        appendLines(file, event)
        let records = readRecords(client, file: file, lines: event.count)
        XCTAssertEqual(records, [event])
        XCTAssertGreaterThan(Int(try stats(p.port)["multiline_timeouts"] ?? "") ?? -1, before)
    }

    /// An event over --multiline-max-bytes is cut at the line that would pass it; the rest
    /// goes on as new events, no line lost, and each cut is counted in STATS and /metrics.
    func testEventOverTheMaximumIsCutAndCounted() throws {
        let file = dir + "/app.log"
        let (p, client) = try startLogcast(file, ["--multiline-max-bytes", "1024", "--http", "127.0.0.1:0"])
        let before = Int(try stats(p.port)["multiline_cuts"] ?? "") ?? -1
        let continuation = (1...40).map { String(format: "\tat com.example.deep.Frame%02d.call(Frame.java:%d) padding-padding", $0, $0) }
        let event = ["2026-11-28 01:04:00.000 ERROR seq=1 deep recursion"] + continuation
        appendLines(file, event)
        appendLines(file, ["2026-11-28 01:04:01.000 INFO seq=2 next"])
        // The pieces after a cut begin with a continuation line (no seq=): read them all.
        var lines = client.readLines(timeout: 60) { $0.last?.contains("seq=2 ") == true }
        // (A sync line the timeout sent may come first.)
        lines = Array(lines.drop { !$0.contains("seq=1 ") })
        XCTAssertEqual(lines.last, file + ": 2026-11-28 01:04:01.000 INFO seq=2 next")
        var pieces: [[String]] = []
        for line in lines.dropLast() {
            if line.hasPrefix(file + ": ") { pieces.append([String(line.dropFirst(file.count + 2))]) } else { pieces[pieces.count - 1].append(String(line.dropFirst())) }
        }
        XCTAssertEqual(pieces.flatMap { $0 }, event, "every line, in order")
        XCTAssertGreaterThan(pieces.count, 1, "cut")
        for piece in pieces { XCTAssertLessThanOrEqual(piece.joined(separator: "\n\t").utf8.count, 1024, "each piece within the maximum") }
        let cuts = (Int(try stats(p.port)["multiline_cuts"] ?? "") ?? -1) - before
        XCTAssertEqual(cuts, pieces.count - 1, "each cut counted")
        let samples = try scrapeMetrics(try p.httpPort())
        XCTAssertEqual(samples["logcast_multiline_cuts_total"], Double(cuts + before), "/metrics counts the cuts as STATS does")
        XCTAssertGreaterThanOrEqual(samples["logcast_multiline_events_total"] ?? 0, Double(pieces.count))
    }

    /// GREP with a word that only a continuation line holds returns the whole event, and
    /// only the events holding it.
    func testGrepOnAContinuationLineReturnsTheWholeEvent() throws {
        let file = dir + "/app.log"
        let (p, _) = try startLogcast(file, [])
        let client = try LineClient(port: p.port)
        _ = client.command("GREP NullPointerException", reply: "OK GREP")
        let events = [Self.javaTrace(1), try Self.pythonTrace(2), Self.javaTrace(3), ["2026-11-28 01:05:00.000 INFO seq=4 NullPointerException in one line"]]
        for event in events { writeInBursts(file, event, parts: 2, pause: 0.1) }
        let records = readRecords(client, file: file, lines: events[0].count + events[2].count + events[3].count)
        XCTAssertEqual(records, [events[0], events[2], events[3]])
    }

    /// An alert on a word in a continuation line posts the whole event once.
    func testAlertGetsTheWholeEvent() throws {
        let receiver = try AlertReceiver(dir: dir)
        defer { receiver.stop() }
        let file = dir + "/app.log"
        _ = try startLogcast(file, ["--alert", "npe=NullPointerException,\(receiver.url)", "--alert-delay", "0"])
        let event = Self.javaTrace(1)
        writeInBursts(file, event, parts: 3, pause: 0.1)
        appendLines(file, ["2026-11-28 01:06:00.000 INFO seq=2 next"])
        XCTAssertTrue(receiver.wait { !$0.takenEvents.isEmpty }, "no alert posted")
        let taken = receiver.takenEvents
        XCTAssertEqual(taken.count, 1)
        XCTAssertEqual(taken.first?["file"], file)
        XCTAssertEqual(taken.first?["line"], event.joined(separator: "\n\t"))
    }

    /// SIGTERM sends an event still waiting for its next line (a timeout of 600 s) before the
    /// client's `BYE`: it was read (the file's read counter in `/metrics` says so), then
    /// the drain delivers it.
    func testShutdownSendsThePendingEvent() throws {
        let file = dir + "/app.log"
        let (p, client) = try startLogcast(file, ["--multiline-timeout", "600", "--http", "127.0.0.1:0"])
        let http = try p.httpPort()
        let before = try Self.linesRead(http, file: file)
        XCTAssertGreaterThan(before, 0)
        let event = Self.javaTrace(9)
        appendLines(file, event)
        XCTAssertEqual(try Self.linesRead(http, file: file, waitingFor: before + Double(event.count)),
                       before + Double(event.count), "the event was read")
        p.signal(SIGTERM)
        let lines = client.readLines { $0.last?.hasPrefix("BYE") == true }
        XCTAssertEqual(lines.last, "BYE shutting down")
        let prefix = file + ": "
        let received = lines.dropLast().drop { !$0.contains("seq=9 ") }
            .map { $0.hasPrefix(prefix) ? String($0.dropFirst(prefix.count)) : String($0.dropFirst()) }
        XCTAssertEqual(Array(received), event)
        XCTAssertEqual(p.waitForExit(timeout: 60), 0)
    }


    /// A start pattern Hyperscan refuses, or that is not a regex, is a clear error at
    /// start (exit 1, the option and the reason named), not a crash; so is a bad rule.
    func testBadPatternIsAStartUpError() throws {
        let file = dir + "/app.log"
        appendLines(file, ["x"])
        for (arguments, expected) in [
            (["--multiline-start", "(unclosed"], "--multiline-start '(unclosed'"),
            (["--multiline-start", "^(?=a)b"], "unsupported pattern"),
            (["--multiline-file", "no-equals-sign"], "--multiline-file must be GLOB=REGEX"),
            (["--multiline-start", "x", "--multiline-max-bytes", "10"], "--multiline-max-bytes must be in"),
            (["--multiline-start", "x", "--multiline-timeout", "0"], "--multiline-timeout must be in"),
        ] {
            let result = try runToExit([file, "--listen", "127.0.0.1:0"] + arguments)
            XCTAssertNotEqual(result.status, 0, "\(arguments) was accepted")
            XCTAssertNotNil(result.status, "\(arguments): logcast did not exit")
            XCTAssertTrue(result.err.contains(expected), "\(arguments): \(result.err)")
            XCTAssertFalse(result.out.contains("listening on"), "\(arguments) started serving")
        }
    }

    /// `--multiline-file GLOB=REGEX` applies to the files its glob matches only: another
    /// file's lines go one by one, as without the option.
    func testPerFileRuleAppliesToItsFilesOnly() throws {
        let joined = dir + "/java.log", plain = dir + "/plain.txt"
        appendLines(joined, ["sync-start"])
        appendLines(plain, ["start"])
        let p = try start([joined, plain, "--listen", "127.0.0.1:0", "--heartbeat", "0", "--multiline-file", "*.log=" + Self.start])
        let client = try LineClient(port: p.port)
        var seen = false
        for k in 0..<300 where !seen {
            appendLines(joined, ["sync-\(k)"])
            appendLines(plain, ["plain-sync-\(k)"])
            seen = !client.readLines(timeout: 0.2) { $0.contains { $0.hasPrefix(joined + ": sync-") } }.isEmpty
        }
        XCTAssertTrue(seen)
        appendLines(plain, ["seq=1 first", "\tat not.joined(Plain.java:1)", "seq=2 second"])
        let lines = client.readLines { $0.contains(plain + ": seq=2 second") }
        XCTAssertEqual(lines.filter { $0.contains("seq=") || $0.contains("not.joined") },
                       [plain + ": seq=1 first", plain + ": \tat not.joined(Plain.java:1)", plain + ": seq=2 second"],
                       "the plain file's lines go one by one")
    }
}

import Foundation
import Glibc
import XCTest

/// Runs the real `logcast` binary (built next to this test bundle) and talks to it over
/// loopback sockets, as a user would.
final class LogcastProcess: @unchecked Sendable {
    let process = Process()
    /// The child's standard output and error go to files, not pipes: a pipe nobody drains
    /// fast enough would block the daemon in `write(2)` and stall its loop.
    let outPath: String
    let errPath: String
    private(set) var port = 0

    /// The build folder holding both this test bundle and `logcast`.
    static var binary: String {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var dir = URL(fileURLWithPath: exe).deletingLastPathComponent()
        // The bundle may be a directory (`*.xctest/`) or a file, depending on the platform.
        while !FileManager.default.fileExists(atPath: dir.appendingPathComponent("logcast").path) && dir.path != "/" {
            dir = dir.deletingLastPathComponent()
        }
        return dir.appendingPathComponent("logcast").path
    }

    /// Starts `logcast arguments`, or `wrapper + [logcast] + arguments` (e.g. `prlimit …`).
    init(_ arguments: [String], wrapper: [String] = []) throws {
        let dir = temporaryDirectory()
        outPath = dir + "/stdout"
        errPath = dir + "/stderr"
        _ = FileManager.default.createFile(atPath: outPath, contents: nil)
        _ = FileManager.default.createFile(atPath: errPath, contents: nil)
        if wrapper.isEmpty {
            process.executableURL = URL(fileURLWithPath: Self.binary)
            process.arguments = arguments
        } else {
            process.executableURL = URL(fileURLWithPath: wrapper[0])
            process.arguments = Array(wrapper.dropFirst()) + [Self.binary] + arguments
        }
        process.standardOutput = FileHandle(forWritingAtPath: outPath)
        process.standardError = FileHandle(forWritingAtPath: errPath)
        try process.run()
    }

    var output: String { readFileText(outPath) }
    var errors: String { readFileText(errPath) }

    /// Waits for "listening on HOST:PORT" and returns the port.
    func waitUntilListening(timeout: Double = 30) throws -> Int {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let range = output.range(of: #"listening on [^ ]+:(\d+);"#, options: .regularExpression) {
                let text = output[range]
                let digits = text.split(separator: ":").last!.dropLast()
                port = Int(digits)!
                return port
            }
            if !process.isRunning { throw HarnessError.exited(errors) }
            usleep(10_000)
        }
        throw HarnessError.timedOut("logcast did not start listening: \(errors)")
    }

    /// Waits until standard output holds `text` (a line logcast prints once something is
    /// ready, such as "listening on unix socket PATH"); false after `timeout` seconds.
    func waitForOutput(_ text: String, timeout: Double = 30) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if output.contains(text) { return true }
            if !process.isRunning { return output.contains(text) }
            usleep(10_000)
        }
        return false
    }

    func signal(_ signum: Int32) { kill(process.processIdentifier, signum) }

    /// Waits for the process to exit; returns its status, or nil on timeout.
    func waitForExit(timeout: Double) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(5_000) }
        return process.isRunning ? nil : process.terminationStatus
    }

    func stop() {
        if process.isRunning {
            signal(SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: URL(fileURLWithPath: outPath).deletingLastPathComponent().path)
    }
}

extension LogcastProcess {
    /// The port of its `--http` listener, from its "http on HOST:PORT;" line (waited for up
    /// to `timeout` seconds; throws if it exits first or never says it).
    func httpPort(timeout: Double = 60) throws -> Int {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let range = output.range(of: #"http on [^ ]+:(\d+);"#, options: .regularExpression) {
                return Int(output[range].split(separator: ":").last!.dropLast())!
            }
            if !process.isRunning { throw HarnessError.exited(errors) }
            usleep(10_000)
        }
        throw HarnessError.timedOut("no 'http on' line: \(output) \(errors)")
    }
}

enum HarnessError: Error {
    case exited(String)
    case timedOut(String)
    case socket(String)
}

/// A blocking line-oriented TCP client (one thread at a time).
final class LineClient: @unchecked Sendable {
    let fd: Int32
    private var pending: [UInt8] = []
    private(set) var closedByPeer = false

    init(port: Int, receiveBuffer: Int32? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        if var size = receiveBuffer {
            // Before connect, so the window the peer sees is small from the start.
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        if rc != 0 {
            close(fd)
            throw HarnessError.socket("connect: errno \(errno)")
        }
    }

    deinit { close(fd) }

    func send(_ text: String) { sendBytes(Array(text.utf8)) }

    func sendBytes(_ bytes: [UInt8]) {
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + done, bytes.count - done, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return }
            done += n
        }
    }

    /// Reads lines until `done(lines)` is true, the peer closes, or `timeout` passes.
    ///
    /// `done` is asked after every line, and lines received after the one that satisfied it
    /// stay buffered for the next read: a reply followed in the same segment by other lines
    /// (a broadcast log line) is still the last line returned.
    @discardableResult
    func readLines(timeout: Double = 60, until done: ([String]) -> Bool) -> [String] {
        var lines: [String] = []
        let deadline = Date().addingTimeInterval(timeout)
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        if takeBufferedLines(into: &lines, until: done) { return lines }
        while Date() < deadline && !closedByPeer {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if poll(&poller, 1, 100) <= 0 { continue }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, 0) }
            if n <= 0 {
                closedByPeer = true
                break
            }
            pending.append(contentsOf: buffer[0..<n])
            if takeBufferedLines(into: &lines, until: done) { break }
        }
        return lines
    }

    /// Moves complete buffered lines into `lines` until `done(lines)`; whether it became true.
    private func takeBufferedLines(into lines: inout [String], until done: ([String]) -> Bool) -> Bool {
        if done(lines) { return true }
        while let nl = pending.firstIndex(of: 10) {
            lines.append(String(decoding: pending[0..<nl], as: UTF8.self))
            pending.removeSubrange(0...nl)
            if done(lines) { return true }
        }
        return false
    }

    /// Sends a command and reads until a reply line starting with `prefix`.
    func command(_ text: String, reply prefix: String) -> [String] {
        send(text + "\n")
        return readLines { $0.last?.hasPrefix(prefix) ?? false }
    }
}

func appendLines(_ path: String, _ lines: [String]) {
    let fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0o644)
    defer { close(fd) }
    var text = lines.joined(separator: "\n")
    text += "\n"
    var bytes = Array(text.utf8)
    var done = 0
    while done < bytes.count {
        let n = bytes.withUnsafeMutableBytes { write(fd, $0.baseAddress! + done, $0.count - done) }
        if n <= 0 { return }
        done += n
    }
    bytes.removeAll()
}

func temporaryDirectory() -> String {
    var template = Array("/tmp/logcast-test-XXXXXX".utf8CString)
    return template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
}

/// A client on its own thread that sends `STATS` and waits for the reply, again and again,
/// recording each round trip, until stopped: how long any other client's input held the
/// daemon up. It PAUSEs first, so only replies come back.
final class StatsProbe: @unchecked Sendable {
    private let lock = NSLock()
    private var stopped = false
    private var times: [Double] = []
    private var unanswered = 0
    private let finished = DispatchSemaphore(value: 0)

    init(port: Int) throws {
        let client = try LineClient(port: port)
        _ = client.command("PAUSE", reply: "OK PAUSE")
        let runner = Thread { [unowned self] in
            while !self.isStopped {
                let start = Date()
                let reply = client.command("STATS", reply: "STATS").last ?? ""
                let elapsed = Date().timeIntervalSince(start)
                self.lock.lock()
                if reply.hasPrefix("STATS") { self.times.append(elapsed) } else { self.unanswered += 1 }
                self.lock.unlock()
                usleep(5_000)
            }
            self.finished.signal()
        }
        runner.start()
    }

    private var isStopped: Bool {
        lock.lock()
        defer { lock.unlock() }
        return stopped
    }

    /// Waits for at least `count` answered round trips (bounded by `timeout`).
    func waitForRoundTrips(_ count: Int, timeout: Double = 60) {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            lock.lock()
            let n = times.count
            lock.unlock()
            if n >= count { return }
            usleep(10_000)
        }
    }

    /// Stops the probe; returns the round trips (seconds) and how many got no answer.
    func stop() -> (times: [Double], unanswered: Int) {
        lock.lock()
        stopped = true
        lock.unlock()
        _ = finished.wait(timeout: .now() + 120)
        lock.lock()
        defer { lock.unlock() }
        return (times, unanswered)
    }
}

/// Runs `logcast` with `arguments` until it exits (bounded); its status and output.
func runToExit(_ arguments: [String], timeout: Double = 30) throws -> (status: Int32?, out: String, err: String) {
    let p = try LogcastProcess(arguments)
    let status = p.waitForExit(timeout: timeout)
    let result = (status, p.output, p.errors)
    p.stop()
    return result
}

/// A file's text read with `read(2)`: on Linux `String(contentsOfFile:)` leaks a 4 KiB
/// buffer for every empty file it reads (swift-foundation's `readBytesFromFile`), which
/// LeakSanitizer reports (`make sanitize`), and the output files start empty.
func readFileText(_ path: String) -> String {
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else { return "" }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n < 0 && errno == EINTR { continue }
        if n <= 0 { break }
        bytes.append(contentsOf: chunk[0..<n])
    }
    return String(decoding: bytes, as: UTF8.self)
}

/// The samples of a `/metrics` scrape (curl, bounded), keyed `name{labels}` as written.
func scrapeMetrics(_ port: Int) throws -> [String: Double] {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
    process.arguments = ["-s", "-S", "--max-time", "30", "http://127.0.0.1:\(port)/metrics"]
    let out = Pipe()
    process.standardOutput = out
    try process.run()
    let data = out.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    XCTAssertEqual(process.terminationStatus, 0, "curl failed")
    var samples: [String: Double] = [:]
    for row in String(decoding: data, as: UTF8.self).split(separator: "\n") where !row.hasPrefix("#") {
        guard let space = row.lastIndex(of: " "), let value = Double(row[row.index(after: space)...]) else { continue }
        samples[String(row[..<space])] = value
    }
    return samples
}

/// Waits (bounded) until `process`'s log holds `text`; whether it did (false at once when it exited).
func waitForLog(_ process: LogcastProcess, _ text: String, timeout: Double = 60) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if process.errors.contains(text) { return true }
        if !process.process.isRunning { return false }
        usleep(20_000)
    }
    return false
}

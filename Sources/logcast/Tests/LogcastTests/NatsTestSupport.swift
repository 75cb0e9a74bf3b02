import Foundation
import Glibc
import ReactiveUV
import ReactiveUVNATS
import XCTest

// For the NATS tests of logcast: a writer that appends numbered lines at a steady rate
// (every line carries its sequence number), and a reader of the stream that counts every
// line it holds by that number.

/// Appends `L<n> <padding>` lines to a file from a thread of its own, ~`rate` lines/s.
final class NumberedLineWriter: @unchecked Sendable {
    // Thread-safety: `lock` guards `written`, `path` and `stopAt`.
    private let lock = NSLock()
    private var path: String
    private(set) var written = 0
    private var stopAt: Int
    private let rate: Int
    private let done = DispatchSemaphore(value: 0)

    init(path: String, rate: Int = 20_000) {
        self.path = path
        self.rate = rate
        self.stopAt = 0
    }

    static func line(_ n: Int) -> String { "L\(n) " + String(repeating: "x", count: 80) + "\n" }
    static let padding: [UInt8] = Array((" " + String(repeating: "x", count: 80) + "\n").utf8)

    /// Writes lines up to (not including) `end`, paced, then returns from the thread.
    func start(until end: Int) {
        lock.lock(); stopAt = end; lock.unlock()
        // The thread is not kept: its block holds the writer, and a writer holding its
        // Thread made a cycle that outlived the test (Foundation's Thread keeps its block
        // after it ran), which LeakSanitizer reports. `done` is how the end is awaited.
        Thread { [self] in run() }.start()
    }

    /// Waits until the writer reached its end.
    func wait(timeout: Double = 120) -> Bool { done.wait(timeout: .now() + timeout) == .success }

    var count: Int { lock.lock(); defer { lock.unlock() }; return written }

    /// Lines go to `newPath` from the next batch on (the writer reopens, as after logrotate).
    func switchTo(_ newPath: String) { lock.lock(); path = newPath; lock.unlock() }

    private func run() {
        let batch = max(1, rate / 200)  // every 5 ms
        var next = Date()
        while true {
            lock.lock()
            let from = written, end = stopAt, target = path
            lock.unlock()
            if from >= end { break }
            let upTo = min(end, from + batch)
            // Bytes built by hand: the writer must keep its pace on a loaded machine in a
            // debug build (string interpolation per line could not).
            var bytes: [UInt8] = []
            bytes.reserveCapacity((upTo - from) * 90)
            for n in from..<upTo {
                bytes.append(UInt8(ascii: "L"))
                var digits: [UInt8] = []
                var v = n
                repeat { digits.append(UInt8(48 + v % 10)); v /= 10 } while v > 0
                bytes.append(contentsOf: digits.reversed())
                bytes.append(contentsOf: NumberedLineWriter.padding)
            }
            let fd = open(target, O_WRONLY | O_APPEND | O_CREAT, 0o644)
            _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            close(fd)
            lock.lock(); written = upTo; lock.unlock()
            next = next.addingTimeInterval(0.005)
            let wait = next.timeIntervalSinceNow
            if wait > 0 { usleep(UInt32(wait * 1e6)) }
        }
        done.signal()
    }
}

/// Appends raw text to `path`.
func appendText(_ path: String, _ text: String) {
    let fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0o644)
    _ = text.withCString { write(fd, $0, strlen($0)) }
    close(fd)
}

/// Reads a stream from its start on the main loop and counts each numbered line.
///
/// Why it waits for the stream before consuming, and makes its consumer again when one
/// fails: a new 3-node cluster answers JetStream requests only once it has elected its
/// meta leader, seconds after every server said it was ready; until then requests time
/// out (after the client's 5 s request timeout), and a consumer can also fail later (its
/// creation times out during a leader election). A counter that took 2 s of silence for
/// "started" kept a consumer that had failed 3 s later and counted nothing (the 3-node
/// leader-kill test saw 0 of 60,000 lines). Each stream message is counted once: a new
/// consumer starts after the last sequence counted.
final class StreamLineCounter {
    var counts: [Int: Int] = [:]
    var lines = 0
    var sawEnd = false
    var others: [String] = []
    /// The stream sequence of the last message counted.
    private(set) var lastSequence: UInt64 = 0
    /// Why consumers ended before the counter was closed (shown when a check fails).
    private(set) var consumerErrors: [String] = []
    private var subscriptions: [Disposable] = []
    private var consumer: Disposable?
    private var restart: Disposable?
    private var js: JetStream?
    private let stream: String
    private var closed = false
    var connection: NATSConnection?

    /// Connects to `urls` (with `options`: credentials, for servers that ask) and consumes
    /// `stream` (created by the edge: waits for it).
    init(urls: [String], stream: String, timeout: Double = 120, options: NATSOptions = NATSOptions()) throws {
        self.stream = stream
        let box = ReplayBox<NATSConnection>()
        subscriptions.append(NATS.connect(urls, options: options).subscribe(next: { box.value = $0 }, error: { box.error = $0 }))
        _ = EventLoop.main.run(until: { box.value != nil || box.error != nil }, timeout: 30)
        if let error = box.error { throw error }
        guard let connection = box.value else { throw HarnessError.timedOut("no NATS connection") }
        self.connection = connection
        let js = try connection.jetStream()
        self.js = js
        // The edge creates the stream once connected; until then (and until a new cluster
        // answers at all) the stream's info is an error: ask again.
        let deadline = Date().addingTimeInterval(timeout)
        var lastError: Error?
        while true {
            let info = ReplayBox<JetStreamInfo>()
            let sub = js.streamInfo(stream).subscribe(next: { info.value = $0 }, error: { info.error = $0 })
            _ = EventLoop.main.run(until: { info.value != nil || info.error != nil }, timeout: 30)
            sub.dispose()
            if info.value != nil { break }
            lastError = info.error
            if Date() >= deadline {
                throw HarnessError.timedOut("stream \(stream) never appeared: \(lastError.map { "\($0)" } ?? "no answer")")
            }
            _ = EventLoop.main.run(until: { false }, timeout: 0.3)
        }
        startConsumer()
    }

    /// The consumers `stream` has now (the counter's own among them), or `nil` when the
    /// server does not answer.
    func consumers() -> Int? {
        guard let js else { return nil }
        let info = ReplayBox<JetStreamInfo>()
        let sub = js.streamInfo(stream).subscribe(next: { info.value = $0 }, error: { info.error = $0 })
        defer { sub.dispose() }
        _ = EventLoop.main.run(until: { info.value != nil || info.error != nil }, timeout: 30)
        return info.value?.consumers
    }

    /// A consumer from the message after the last one counted.
    private func startConsumer() {
        guard !closed, let js else { return }
        consumer = js.consume(stream: stream, from: .sequence(lastSequence + 1)).subscribe(
            next: { [weak self] message in self?.received(message) },
            error: { [weak self] error in self?.consumerFailed(error) })
    }

    private func consumerFailed(_ error: any Error) {
        consumer = nil
        guard !closed else { return }
        consumerErrors.append("\(error)")
        restart = Scheduler.main.afterDelay(0.5) { [weak self] in self?.startConsumer() }
    }

    private func received(_ message: NATSMessage) {
        // An ordered consumer delivers in sequence; one made again after a failure starts
        // after `lastSequence`, so nothing is counted twice.
        guard let sequence = message.streamSequence, sequence > lastSequence else { return }
        lastSequence = sequence
        count(message.payload)
    }

    private func count(_ payload: [UInt8]) {
        var start = 0
        for (i, byte) in payload.enumerated() where byte == 10 {
            let line = payload[start..<i]
            start = i + 1
            lines += 1
            if let n = numberedLineNumber(line) {
                counts[n, default: 0] += 1
            } else if String(decoding: line, as: UTF8.self) == "END" {
                sawEnd = true
            } else {
                others.append(String(decoding: line, as: UTF8.self))
            }
        }
    }

    /// Runs the main loop until the END line and `total` distinct numbers arrived; false
    /// when no line arrived for `stall` seconds, or after `timeout` in all.
    ///
    /// The bound is on progress, not on the total: a debug daemon under ThreadSanitizer on a
    /// loaded 2-core machine shipped a 180,000-line backlog at ~800 lines/s (147,837 lines
    /// after a fixed 180 s), slow but moving; a daemon that stopped shipping still fails
    /// after `stall` seconds.
    /// With `end` false, the END line is not waited for (a stream without one).
    func waitForAll(_ total: Int, end: Bool = true, stall: Double = 60, timeout: Double = 900) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        var seen = lines
        var lastProgress = Date()
        while Date() < deadline {
            if EventLoop.main.run(until: { (self.sawEnd || !end) && self.counts.count >= total }, timeout: 5) { return true }
            if lines != seen {
                seen = lines
                lastProgress = Date()
            } else if Date().timeIntervalSince(lastProgress) > stall {
                return false
            }
        }
        return false
    }

    /// Numbers seen more than once, and numbers in 0..<total never seen.
    func check(_ total: Int) -> (duplicated: [Int], missing: [Int]) {
        let duplicated = counts.filter { $0.value > 1 }.map(\.key).sorted()
        let missing = (0..<total).filter { counts[$0] == nil }
        return (duplicated, missing)
    }

    func close() {
        closed = true
        restart?.dispose()
        restart = nil
        consumer?.dispose()
        consumer = nil
        js = nil
        for d in subscriptions { d.dispose() }
        subscriptions = []
        connection?.close()
        _ = EventLoop.main.run(until: { self.connection?.isClosed ?? true }, timeout: 10)
    }
}

/// A value set by a callback on the main loop.
final class ReplayBox<Value> {
    var value: Value?
    var error: Error?
}

/// The number of a line that ``NumberedLineWriter`` wrote (`L<n> ` then padding), or nil for
/// any other line (`END`, a stored copy's header line, ...): the one parse of that format
/// the stream counters, the fault test's reader and its leader probe share.
func numberedLineNumber(_ line: ArraySlice<UInt8>) -> Int? {
    guard line.first == UInt8(ascii: "L"), let space = line.firstIndex(of: 32) else { return nil }
    return Int(String(decoding: line[line.startIndex + 1..<space], as: UTF8.self))
}

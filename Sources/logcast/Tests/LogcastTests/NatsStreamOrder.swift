import Foundation
import Glibc
import ReactiveUV
import ReactiveUVNATS
import XCTest

/// Reads a stream from its start on the main loop, in stream sequence order, and checks
/// the numbered lines (`L<n> …`, ``NumberedLineWriter``) of each file as the stream holds
/// them: every number once, and within a file (the `Logcast-File` header) rising with
/// the stream sequence. Where ``StreamLineCounter`` counts, this one also sees order.
///
/// Why its own consumer (made again after a failure, from the message after the last one
/// read): the same reasons as ``StreamLineCounter``'s — a new cluster answers only once it
/// has a meta leader, and a consumer can fail during an election.
final class StreamOrderReader {
    /// How many times each number was read.
    private(set) var counts: [Int: Int] = [:]
    /// Numbers read after a greater number of the same file (each is one line out of order).
    private(set) var inversions: [(file: String, number: Int, after: Int, sequence: UInt64)] = []
    private(set) var sawEnd = false
    private(set) var lines = 0
    /// The stream sequence of the last message read.
    private(set) var lastSequence: UInt64 = 0
    /// When each number was first read (for the time a backlog took to be stored).
    private(set) var firstSeen: [Int: Date] = [:]
    private(set) var consumerErrors: [String] = []
    /// Times the consumer was made again because it had delivered nothing for
    /// ``stallLimit`` seconds while the stream held messages past the last one read.
    private(set) var stallRestarts = 0
    /// Why: once in the namespaced fault test (2026-11-28) this reader's ordered consumer
    /// delivered nothing more after the stream leader was cut off and healed, with no
    /// error, while the edge went on storing every line; the test then failed on the
    /// reader, not on the stream. The same silence is the hub's known defect (a hub
    /// stopped serving after a fault, nothing in its log). Until the library's `consume`
    /// notices it itself, the reader does, and prints each time it did.
    static let stallLimit = 15.0
    /// The least number not yet read: every number below it was (kept as lines arrive, so
    /// a wait for "everything written before a moment is stored" costs nothing per event).
    private(set) var contiguous = 0
    private var greatest: [String: Int] = [:]
    private var connection: NATSConnection?
    private var js: JetStream?
    private var consumer: Disposable?
    private var restart: Disposable?
    private var connecting: Disposable?
    private let stream: String
    private var closed = false

    /// Connects to `urls` and reads `stream` once it exists (`timeout` seconds at most).
    init(urls: [String], stream: String, timeout: Double = 120) throws {
        self.stream = stream
        let box = ReplayBox<NATSConnection>()
        connecting = NATS.connect(urls).subscribe(next: { box.value = $0 }, error: { box.error = $0 })
        _ = EventLoop.main.run(until: { box.value != nil || box.error != nil }, timeout: 30)
        if let error = box.error { throw error }
        guard let connection = box.value else { throw HarnessError.timedOut("no NATS connection") }
        self.connection = connection
        let js = try connection.jetStream()
        self.js = js
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let info = ReplayBox<JetStreamInfo>()
            let sub = js.streamInfo(stream).subscribe(next: { info.value = $0 }, error: { info.error = $0 })
            _ = EventLoop.main.run(until: { info.value != nil || info.error != nil }, timeout: 30)
            sub.dispose()
            if info.value != nil { break }
            if Date() >= deadline {
                throw HarnessError.timedOut("stream \(stream) never appeared: \(info.error.map { "\($0)" } ?? "no answer")")
            }
            _ = EventLoop.main.run(until: { false }, timeout: 0.3)
        }
        startConsumer()
    }

    /// The stream's current leader (server name), or nil when the servers do not answer.
    func leader() -> String? { streamInfo()?.leader }

    /// The stream's info, or nil when the servers do not answer within 30 s.
    func streamInfo() -> JetStreamInfo? {
        guard let js else { return nil }
        let info = ReplayBox<JetStreamInfo>()
        let sub = js.streamInfo(stream).subscribe(next: { info.value = $0 }, error: { info.error = $0 })
        defer { sub.dispose() }
        _ = EventLoop.main.run(until: { info.value != nil || info.error != nil }, timeout: 30)
        return info.value
    }

    /// Makes the consumer again from the message after the last one read when it has been
    /// silent for ``stallLimit`` seconds while the stream holds more (see ``stallRestarts``).
    private func restartIfStalled(silentFor seconds: Double) {
        guard seconds >= StreamOrderReader.stallLimit, !closed, let info = streamInfo(),
              info.lastSequence > lastSequence else { return }
        stallRestarts += 1
        print("StreamOrderReader: nothing delivered for \(Int(seconds)) s while the stream holds up to #\(info.lastSequence) (read up to #\(lastSequence)): consumer made again (\(stallRestarts) so far)")
        restart?.dispose()
        consumer?.dispose()
        startConsumer()
    }

    private func startConsumer() {
        guard !closed, let js else { return }
        consumer = js.consume(stream: stream, from: .sequence(lastSequence + 1)).subscribe(
            next: { [weak self] message in self?.received(message) },
            error: { [weak self] error in
                guard let self, !self.closed else { return }
                self.consumer = nil
                self.consumerErrors.append("\(error)")
                self.restart = Scheduler.main.afterDelay(0.5) { [weak self] in self?.startConsumer() }
            })
    }

    private func received(_ message: NATSMessage) {
        guard let sequence = message.streamSequence, sequence > lastSequence else { return }
        lastSequence = sequence
        let file = message.headers["Logcast-File"] ?? message.subject
        let now = Date()
        var start = 0
        let payload = message.payload
        for (i, byte) in payload.enumerated() where byte == 10 {
            let line = payload[start..<i]
            start = i + 1
            lines += 1
            if line.first == UInt8(ascii: "L"), let space = line.firstIndex(of: 32),
               let n = Int(String(decoding: line[line.startIndex + 1..<space], as: UTF8.self)) {
                counts[n, default: 0] += 1
                if firstSeen[n] == nil { firstSeen[n] = now }
                if let top = greatest[file], n < top {
                    inversions.append((file, n, top, sequence))
                } else {
                    greatest[file] = n
                }
            } else if String(decoding: line, as: UTF8.self) == "END" {
                sawEnd = true
            }
        }
        while counts[contiguous] != nil { contiguous += 1 }
    }

    /// Runs the main loop until `done` holds; false when no line arrived for `stall`
    /// seconds or after `timeout` in all (the bound is on progress, as in ``StreamLineCounter``).
    func wait(stall: Double = 60, timeout: Double = 600, until done: @escaping () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        var seen = lines
        var lastProgress = Date()
        var lastCheck = Date()
        while Date() < deadline {
            if EventLoop.main.run(until: done, timeout: 2) { return true }
            if lines != seen {
                seen = lines
                lastProgress = Date()
                lastCheck = lastProgress
            } else if Date().timeIntervalSince(lastProgress) > stall {
                return false
            } else if Date().timeIntervalSince(lastCheck) >= StreamOrderReader.stallLimit {
                lastCheck = Date()
                restartIfStalled(silentFor: lastCheck.timeIntervalSince(lastProgress))
            }
        }
        return false
    }

    /// Whether every number below `total` was read.
    func holdsAll(below total: Int) -> Bool {
        counts.count >= total && (0..<total).allSatisfy { counts[$0] != nil }
    }

    /// Numbers below `total` never read, and numbers read more than once.
    func check(_ total: Int) -> (missing: [Int], duplicated: [Int]) {
        ((0..<total).filter { counts[$0] == nil }, counts.filter { $0.value > 1 }.map(\.key).sorted())
    }

    /// When the last of the numbers below `total` was first read (nil if one is missing).
    func lastArrival(below total: Int) -> Date? {
        var latest: Date?
        for n in 0..<total {
            guard let at = firstSeen[n] else { return nil }
            if latest == nil || at > latest! { latest = at }
        }
        return latest
    }

    func close() {
        closed = true
        restart?.dispose()
        consumer?.dispose()
        connecting?.dispose()
        consumer = nil
        js = nil
        connection?.close()
        _ = EventLoop.main.run(until: { self.connection?.isClosed ?? true }, timeout: 10)
        connection = nil
    }
}

import Glibc
import ReactiveUV

/// The edge's side of `--multiline-start`: holds back each file's last, possibly unfinished
/// event, and hands ``NatsEdge`` whole events only, in runs that fit one batch, so that no
/// event is ever split across two NATS messages.
///
/// ```
/// follower chunk ──► gate (per file: device and inode) ──► runs of whole events, each run
///                      │ holds bytes [start of the last event, end)    ≤ --batch-bytes
///                      │ released by the next start line, the timeout, ──► NatsEdge.received
///                      ▼ or a truncation (then at once)                    (EdgeFile.take)
/// ```
///
/// Why runs of at most one batch: `EdgeFile.take` appends a chunk to the last unsent batch
/// when it fits and otherwise starts a new batch with it, cutting only a chunk larger than
/// a batch (at a line). A run of whole events no larger than a batch is therefore never
/// cut, and an event is cut only at `min(--multiline-max-bytes, --batch-bytes)` (counted).
///
/// Why exactly once still holds: held bytes are in no batch, so the file's position is
/// never acknowledged past them; an edge killed while holding them reads them again at its
/// restart. A follower restarted after a pause re-reads from the acknowledged position:
/// what the gate already holds or released is dropped here (the edge drops the rest).
/// The stream keeps the file's bytes as they are (the hub and `SINCE` serve them line by
/// line; a consumer of the stream gets each event in one message).
///
/// Main loop only.
final class MultilineEdgeGate {
    let rules: MultilineRules
    /// The edge's batch size (cut to the server's limit on each connect: NatsEdge+Payload.swift).
    var batchBytes: Int
    /// Gets each run of whole events (``NatsEdge/received(_:)``).
    let release: (TailChunk) -> Void

    private final class Held {
        var identity: FileIdentity
        var path: String
        /// The offset of `bytes[0]` (the held event's first line).
        var offset: Int64
        var bytes: [UInt8]
        var lastInput = SchedulerTime.monotonicNow
        var timer: Disposable?
        var end: Int64 { offset + Int64(bytes.count) }

        init(identity: FileIdentity, path: String, offset: Int64, bytes: [UInt8]) {
            self.identity = identity
            self.path = path
            self.offset = offset
            self.bytes = bytes
        }
    }

    private var held: [String: Held] = [:]
    private var stopped = false

    init(rules: MultilineRules, batchBytes: Int, release: @escaping (TailChunk) -> Void) {
        self.rules = rules
        self.batchBytes = batchBytes
        self.release = release
    }

    private static func key(_ identity: FileIdentity) -> String { "\(identity.device)-\(identity.inode)" }

    /// Takes a chunk of the follower's; passes on the whole events it completes.
    func feed(_ chunk: TailChunk) {
        guard !stopped, let matcher = rules.matcher(for: chunk.path) else {
            release(chunk)
            return
        }
        let key = Self.key(chunk.identity)
        var offset = chunk.offset
        var bytes = chunk.bytes
        if let h = held[key] {
            if offset < h.end {
                // A re-read after a pause: what is below the held end was held or passed on.
                guard chunk.endOffset > h.end else { return }
                bytes.removeFirst(Int(h.end - offset))
                offset = h.end
            } else if offset > h.end {
                // A gap (bytes lost between): the held event ends where the file's bytes did.
                releaseHeld(key)
            }
        }
        var data: [UInt8]
        var start: Int64
        var newFrom: Int
        if let h = held.removeValue(forKey: key) {
            h.timer?.dispose()
            data = h.bytes
            start = h.offset
            newFrom = data.count
            data += bytes
        } else {
            data = bytes
            start = offset
            newFrom = 0
        }
        // Event starts among the new lines (the held bytes begin with one).
        var eventStarts: [Int] = [0]
        data.withUnsafeBufferPointer { buffer in
            let base = buffer.baseAddress!
            var starts: [UInt32] = []
            var ends: [UInt32] = []
            var at = newFrom
            while at < buffer.count {
                let end = memchr(base + at, 10, buffer.count - at).map { UnsafeRawPointer(base).distance(to: UnsafeRawPointer($0)) } ?? buffer.count
                starts.append(UInt32(at))
                ends.append(UInt32(end))
                at = end + 1
            }
            var isStart = [Bool](repeating: false, count: starts.count)
            matcher.mark(base, starts: starts, ends: ends, isStart: &isStart)
            for (i, s) in starts.enumerated() where isStart[i] && s > 0 { eventStarts.append(Int(s)) }
        }
        // Whole events: every event but the last; the last is held.
        let limit = min(rules.maxBytes, batchBytes)
        var run = 0 ..< 0
        var cursor = 0
        func flushRun() {
            guard !run.isEmpty else { return }
            release(TailChunk(identity: chunk.identity, path: chunk.path, offset: start + Int64(run.lowerBound),
                              endOffset: start + Int64(run.upperBound), bytes: Array(data[run])))
            run = run.upperBound ..< run.upperBound
        }
        // Adds an event's bytes to the run, passing the run on first when the event would
        // take it past one batch. (A local function, not one taking `run` inout: flushing
        // inside an inout access of `run` is an exclusivity violation, a trap.)
        func addToRun(_ event: Range<Int>) {
            if run.count + event.count > batchBytes { flushRun() }
            run = run.isEmpty ? event : run.lowerBound ..< event.upperBound
        }
        for i in 0..<eventStarts.count {
            let from = eventStarts[i], to = i + 1 < eventStarts.count ? eventStarts[i + 1] : data.count
            var pieceFrom = from
            // An event over the limit is cut at a line (the rest goes on as a new event).
            while to - pieceFrom > limit {
                var cut = pieceFrom + limit
                if let nl = data[pieceFrom..<cut].lastIndex(of: 10), nl + 1 > pieceFrom { cut = nl + 1 } else {
                    cut = (data[pieceFrom...].firstIndex(of: 10) ?? (data.count - 1)) + 1
                }
                if cut >= to { break }
                addToRun(pieceFrom ..< cut)
                rules.counters.cuts += 1
                rules.counters.events += 1
                pieceFrom = cut
            }
            if i + 1 < eventStarts.count {
                addToRun(pieceFrom ..< to)
                rules.counters.events += 1
            } else {
                flushRun()
                cursor = pieceFrom
            }
        }
        guard cursor < data.count else { return }
        let h = Held(identity: chunk.identity, path: chunk.path, offset: start + Int64(cursor), bytes: Array(data[cursor...]))
        held[key] = h
        arm(key, h, after: rules.timeout)
    }

    private func releaseHeld(_ key: String) {
        guard let h = held.removeValue(forKey: key) else { return }
        h.timer?.dispose()
        rules.counters.events += 1
        release(TailChunk(identity: h.identity, path: h.path, offset: h.offset, endOffset: h.end, bytes: h.bytes))
    }

    /// The file (device and inode) was truncated: its held event is passed on now, before
    /// the edge starts the file's new content.
    func truncated(device: UInt64, inode: UInt64) {
        releaseHeld("\(device)-\(inode)")
    }

    private func arm(_ key: String, _ h: Held, after delay: Double) {
        h.timer = Scheduler.main.afterDelay(delay) { [weak self, weak h] in
            guard let self, let h, self.held[key] === h, !self.stopped else { return }
            h.timer = nil
            let quiet = h.lastInput.distance(to: .monotonicNow)
            if quiet >= self.rules.timeout * 0.99 {
                self.rules.counters.timeouts += 1
                self.releaseHeld(key)
            } else {
                self.arm(key, h, after: self.rules.timeout - quiet)
            }
        }
    }

    /// Stops: the timers are cancelled and held bytes dropped (they were never
    /// acknowledged, so the next run reads them again).
    func stop() {
        stopped = true
        for h in held.values { h.timer?.dispose() }
        held = [:]
    }
}

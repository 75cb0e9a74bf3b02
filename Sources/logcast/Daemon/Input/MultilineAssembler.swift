import Glibc
import ReactiveUV

/// Joins one file's lines into events (`--multiline-start`): a line the start pattern
/// matches begins an event, any other line belongs to the event before it.
///
/// ```
/// chunk of whole lines ──► matcher marks the start lines (one scan per chunk)
///   start line ──► the pending event is complete: emit it; the line begins the next one
///   other line ──► appended to the pending event ("\n\t" + line), or, past
///                  --multiline-max-bytes, the pending event is cut (emitted, counted)
///                  and the line begins a new one
/// the pending event ──► emitted by the next start line, or once the file was quiet for
///                       --multiline-timeout, or at shutdown (``flush()``)
/// ```
///
/// **The wire form.** An event is emitted as one text: its first line as in the file, then
/// each continuation line after `\n\t` (a line feed and a TAB). Sent to a client as
/// `<file>: <text>\n`, that is the first line with the file prefix and every continuation
/// line indented by one TAB, as mail and HTTP fold a header: an `nc` user reads the trace as
/// it was written, and a program reads records line by line, where a line beginning with a
/// TAB continues the record above it (a record's first line always begins with its file
/// name). The fan-out keeps the event as one "line" of its block: one record in a client's
/// write, scanned whole by `GREP`, one alert event.
///
/// **Why a timer per file, re-armed lazily.** The last event of a file cannot be known
/// complete until another start line comes, so a quiet file's last event would wait
/// forever. The timer is armed when an event is left pending and, when it fires, looks at
/// when the file last gave a line: under load it does not re-arm once per chunk.
///
/// Main loop only.
final class MultilineAssembler {
    let matcher: MultilineMatcher
    /// Seconds of quiet after which the pending event is emitted.
    let timeout: Double
    /// The most bytes of an event's text; a continuation line that would pass it starts a
    /// new event (the cut is counted).
    let maxBytes: Int
    let counters: MultilineCounters
    /// Gets each complete event's text (the wire form above, without a trailing `\n`).
    let emit: ([UInt8]) -> Void
    /// Every chunk ends with a whole event (an edge's runs, ``MultilineEdgeGate``): its
    /// last event is emitted at once, no timer armed.
    var wholeEvents = false

    private var pending: [UInt8] = []
    private var hasPending = false
    private var lastInput = SchedulerTime.monotonicNow
    private var timer: Disposable?
    private var stopped = false

    // Scratch arrays reused for every chunk (their capacity stays).
    private var starts: [UInt32] = []
    private var ends: [UInt32] = []
    private var isStart: [Bool] = []

    /// - Parameters:
    ///   - matcher: the start pattern.
    ///   - timeout: seconds of quiet before a pending event is emitted (more than 0).
    ///   - maxBytes: the most bytes of an event's text.
    ///   - counters: counted into (events, cuts, timeouts).
    ///   - emit: receives each complete event.
    init(matcher: MultilineMatcher, timeout: Double, maxBytes: Int, counters: MultilineCounters,
         emit: @escaping ([UInt8]) -> Void) {
        self.matcher = matcher
        self.timeout = timeout
        self.maxBytes = maxBytes
        self.counters = counters
        self.emit = emit
    }

    /// Takes a chunk of whole lines (each ending with `\n`; a last one without is a line).
    ///
    /// - Parameter chunk: bytes as the file follower read them.
    func feed(_ chunk: [UInt8]) {
        guard !chunk.isEmpty, !stopped else { return }
        lastInput = .monotonicNow
        chunk.withUnsafeBufferPointer { buffer in
            let base = buffer.baseAddress!
            let count = buffer.count
            starts.removeAll(keepingCapacity: true)
            ends.removeAll(keepingCapacity: true)
            var offset = 0
            while offset < count {
                let end: Int
                if let nl = memchr(base + offset, 10, count - offset) {
                    end = UnsafeRawPointer(base).distance(to: UnsafeRawPointer(nl))
                } else {
                    end = count
                }
                starts.append(UInt32(offset))
                ends.append(UInt32(end))
                offset = end + 1
            }
            isStart.removeAll(keepingCapacity: true)
            isStart.append(contentsOf: repeatElement(false, count: starts.count))
            matcher.mark(base, starts: starts, ends: ends, isStart: &isStart)
            for i in 0..<starts.count {
                let line = UnsafeBufferPointer(rebasing: buffer[Int(starts[i])..<Int(ends[i])])
                if isStart[i] || !hasPending {
                    complete()
                    begin(line)
                } else if pending.count + 2 + line.count > maxBytes {
                    complete()
                    counters.cuts += 1
                    begin(line)
                } else {
                    pending.append(10)
                    pending.append(9)
                    pending.append(contentsOf: line)
                }
            }
        }
        if wholeEvents { complete() } else if hasPending { arm() }
    }

    /// Emits the pending event now (shutdown: nothing is held back from the drain).
    func flush() {
        complete()
    }

    /// Emits what is pending and stops: later chunks are ignored, the timer is cancelled
    /// (a pending timer would keep the loop, and so the exit, waiting).
    func stop() {
        complete()
        stopped = true
        timer?.dispose()
        timer = nil
    }

    private func begin(_ line: UnsafeBufferPointer<UInt8>) {
        // (Its capacity is kept unless an event grew it past twice the maximum.)
        pending.removeAll(keepingCapacity: pending.capacity / 2 <= maxBytes)
        pending.append(contentsOf: line)
        hasPending = true
    }

    private func complete() {
        guard hasPending else { return }
        hasPending = false
        counters.events += 1
        emit(pending)
    }

    /// Makes sure a timer will look at the pending event within ``timeout``.
    private func arm(after delay: Double? = nil) {
        guard timer == nil, !stopped else { return }
        timer = Scheduler.main.afterDelay(delay ?? timeout) { [weak self] in
            guard let self else { return }
            self.timer = nil
            guard self.hasPending, !self.stopped else { return }
            let quiet = self.lastInput.distance(to: .monotonicNow)
            if quiet >= self.timeout * 0.99 {
                self.counters.timeouts += 1
                self.complete()
            } else {
                self.arm(after: self.timeout - quiet)
            }
        }
    }
}

/// Every file's multi-line counters together (`STATS`, `/metrics`). Main loop only.
final class MultilineCounters {
    /// Events emitted (a one-line event counts as one).
    var events = 0
    /// Events cut at `--multiline-max-bytes` (the rest went on as a new event).
    var cuts = 0
    /// Events emitted by the flush timeout (the file was quiet), not by a next start line.
    var timeouts = 0

    /// ` multiline_events=… multiline_cuts=… multiline_timeouts=…` for `STATS`.
    var statsFields: String { " multiline_events=\(events) multiline_cuts=\(cuts) multiline_timeouts=\(timeouts)" }
}

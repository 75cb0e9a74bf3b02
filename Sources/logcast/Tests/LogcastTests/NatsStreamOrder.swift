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
    /// Lines read in all, rereads from the leader included: what the waits count as progress.
    private var delivered = 0
    /// The stream sequence of the last message read.
    private(set) var lastSequence: UInt64 = 0
    private(set) var consumerErrors: [String] = []
    /// Times the stream was read from its leader, and why (``readFromLeader(_:timeout:)``).
    private(set) var leaderReads: [String] = []
    /// Bumped by every new consumer: a message of an earlier one still queued is dropped.
    private var generation = 0
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
    /// The same connection's JetStream with 1 s requests, for ``lastStoredLine()`` only: a
    /// request sent while the stream has no leader (just after its leader's SIGKILL) is not
    /// answered, and with the 5 s default every fault test "stored" time after a SIGKILL read
    /// 5.11 s, the timeout, whatever the stream did.
    private var probe: JetStream?
    /// The stream's leader as the last ``lastStoredLine()`` found it (its info request was
    /// answered), or nil when that request went unanswered: a stream with no leader, or
    /// one the probe's server cannot reach.
    private(set) var probeLeader: String?
    /// The sequence of the stream's last message as the last ``lastStoredLine()`` read it
    /// (0 before it read one).
    private(set) var probeLastSequence: UInt64 = 0
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
        probe = try connection.jetStream(requestTimeout: 1)
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
    func streamInfo() -> JetStreamInfo? { streamInfo(via: js, timeout: 30) }

    /// The stream's info asked through `context` (this reader's, or the probe's with its 1 s
    /// requests), or nil when it is not answered within `timeout` seconds of the loop.
    private func streamInfo(via context: JetStream?, timeout: Double) -> JetStreamInfo? {
        guard let context else { return nil }
        let info = ReplayBox<JetStreamInfo>()
        let sub = context.streamInfo(stream).subscribe(next: { info.value = $0 }, error: { info.error = $0 })
        defer { sub.dispose() }
        _ = EventLoop.main.run(until: { info.value != nil || info.error != nil }, timeout: timeout)
        return info.value
    }

    /// The number of the last line in the stream's last message, read from the stream's
    /// leader (`STREAM.MSG.GET`), or nil when the leader does not answer within 1 s.
    ///
    /// What the stream has stored, as opposed to what this reader's consumer has delivered
    /// so far: the edge sends each file's batches in order, one at a time, so the last
    /// stored message holding line n says every line before n was sent and acknowledged
    /// first (whether each is really there is what the final count checks). The fault test
    /// times a recovery by it: the reader's own consumer, placed on some server, can take
    /// longer to come back than the stream took to store the lines.
    ///
    /// Sets ``probeLeader``: the leader named by the stream's info, or nil when no leader
    /// answered.
    func lastStoredLine() -> Int? {
        let info = streamInfo(via: probe, timeout: 10)
        probeLeader = info.map { $0.leader ?? "(none named)" }
        guard let probe, let last = info?.lastSequence, last > 0 else { return nil }
        let box = ReplayBox<NATSMessage>()
        let get = probe.message(stream: stream, sequence: last).subscribe(next: { box.value = $0 }, error: { box.error = $0 })
        defer { get.dispose() }
        _ = EventLoop.main.run(until: { box.value != nil || box.error != nil }, timeout: 10)
        guard let payload = box.value?.payload else { return nil }
        probeLastSequence = last
        return StreamOrderReader.lastLineNumber(payload)
    }

    /// The number of the last line in `payload`, or nil when it is not a numbered line.
    private static func lastLineNumber(_ payload: [UInt8]) -> Int? {
        var end = payload.endIndex
        while end > payload.startIndex, payload[end - 1] == 10 { end -= 1 }
        let lastLine = payload[(payload[..<end].lastIndex(of: 10).map { $0 + 1 } ?? payload.startIndex)..<end]
        return numberedLineNumber(lastLine)
    }

    /// When the stream stored the message holding line number `line`, by that message's
    /// own stored time (the leader's clock, `STREAM.MSG.GET`'s "time"), in seconds since
    /// 1970: sought from sequence `through` back (each line is stored once, and the
    /// messages after it hold later lines, or an earlier file's); nil when none of the
    /// 5,000 messages before `through` holds it, or after 60 s of asking.
    ///
    /// Why: ``lastStoredLine()`` is answered on the main loop, which also delivers this
    /// reader's consumer; after a fault the consumer's backlog (megabytes of lines, checked
    /// one by one in a debug build) held the probe's answers back by up to seconds, so the
    /// time the probe *saw* a line stored included the test's own reading (2026-11-29: the
    /// edge's acknowledgement of the batch holding the last line came 0.63 s after the heal,
    /// the probe saw it 1.68 s after it). The stored time does not depend on when it is read.
    func storedTime(ofLine line: Int, through: UInt64) -> Double? {
        guard let probe, through > 0 else { return nil }
        var sequence = through
        let deadline = Date().addingTimeInterval(60)
        while sequence > 0 && through - sequence < 5_000 && Date() < deadline {
            let box = ReplayBox<NATSMessage>()
            let get = probe.message(stream: stream, sequence: sequence).subscribe(next: { box.value = $0 }, error: { box.error = $0 })
            _ = EventLoop.main.run(until: { box.value != nil || box.error != nil }, timeout: 10)
            get.dispose()
            if let message = box.value, let last = StreamOrderReader.lastLineNumber(message.payload),
               let first = numberedLineNumber(message.payload.prefix { $0 != 10 }[...]), first <= line, line <= last {
                return message.timestamp.map { Double($0) / 1e9 }
            }
            sequence -= 1
        }
        return nil
    }

    /// The longest time between two messages stored one after the other (by their stored
    /// times, the leader's clock), from sequence `first` on until a message stored `seconds`
    /// after `first`'s, and the sequence that ended it; nil when fewer than two were read.
    /// Each message is asked for up to 10 times (the probe's server may be the one a fault
    /// just killed); at most 5,000 messages or 60 s of asking.
    ///
    /// The fault test's measure of a stall: while the writer appends every 5 ms the stream
    /// stores a batch every few milliseconds, so a pause in storing shows as a gap, whatever
    /// the lines written around it (issue 33: "a follower's death stalls nothing for more
    /// than 1 s").
    func longestStoreGap(from first: UInt64, over seconds: Double) -> (gap: Double, endedBy: UInt64)? {
        guard let probe, first > 0 else { return nil }
        var sequence = first
        var start: Double?, previous: Double?
        var longest: (gap: Double, endedBy: UInt64)?
        let deadline = Date().addingTimeInterval(60)
        asking: while sequence - first < 5_000 && Date() < deadline {
            var message: NATSMessage?
            for _ in 0..<10 where message == nil {
                let box = ReplayBox<NATSMessage>()
                let get = probe.message(stream: stream, sequence: sequence).subscribe(next: { box.value = $0 }, error: { box.error = $0 })
                _ = EventLoop.main.run(until: { box.value != nil || box.error != nil }, timeout: 5)
                get.dispose()
                message = box.value
                if message == nil { _ = EventLoop.main.run(until: { false }, timeout: 0.2) }
            }
            guard let time = message?.timestamp.map({ Double($0) / 1e9 }) else { break asking }
            if let previous, time - previous > (longest?.gap ?? -1) { longest = (time - previous, sequence) }
            previous = time
            if let start, time - start > seconds { break }
            if start == nil { start = time }
            sequence += 1
        }
        return longest
    }

    /// Makes the consumer again from the message after the last one read when it has been
    /// silent for ``stallLimit`` seconds while the stream holds more (see ``stallRestarts``).
    private func restartIfStalled(silentFor seconds: Double) {
        guard seconds >= StreamOrderReader.stallLimit, !closed, let info = streamInfo() else { return }
        if info.lastSequence < lastSequence {
            _ = readFromLeader("the stream's last sequence (#\(info.lastSequence), leader \(info.leader ?? "none")) is below the last one read (#\(lastSequence)): the reader read another history than the leader's")
            return
        }
        guard info.lastSequence > lastSequence else { return }
        stallRestarts += 1
        print("StreamOrderReader: nothing delivered for \(Int(seconds)) s while the stream holds up to #\(info.lastSequence) (read up to #\(lastSequence)): consumer made again (\(stallRestarts) so far)")
        restart?.dispose()
        consumer?.dispose()
        startConsumer()
    }

    /// Forgets everything read and reads the stream message by message from its leader
    /// (`STREAM.MSG.GET`, which only the stream's leader answers), eight requests at a time,
    /// then goes on with a consumer from the message after the last one; false when the
    /// leader did not answer every sequence within `timeout` seconds.
    ///
    /// Why not a consumer: an ordered consumer is placed on any of the stream's servers
    /// and delivers that server's copy. Debian's nats-server 2.9.10 can leave one copy with
    /// other messages at a few sequences after a leader change (its debug log then says
    /// "skipping message with sequence N with last of M": seen in this test's run of
    /// 2026-11-28, where a reader whose consumer sat on that copy lacked line 2,575 that the
    /// leader held), so only the leader's copy says what the stream holds.
    func readFromLeader(_ why: String, timeout: Double = 300) -> Bool {
        guard !closed, let js, let info = streamInfo() else { return false }
        leaderReads.append(why)
        print("StreamOrderReader: reading the stream's \(info.lastSequence) messages from its leader \(info.leader ?? "none") (\(leaderReads.count) so far): \(why)")
        restart?.dispose()
        consumer?.dispose()
        consumer = nil
        generation += 1
        forget()
        let last = info.lastSequence
        let state = LeaderRead()
        func ask(_ sequence: UInt64) {
            state.pending[sequence] = js.message(stream: stream, sequence: sequence).subscribe(
                next: { state.answers[sequence] = $0 },
                error: { error in
                    state.pending[sequence] = nil
                    if let nats = error as? NATSError, nats.serverCode == 10037 {
                        state.absent.insert(sequence)  // deleted, or never stored: nothing there
                    } else {
                        state.failures[sequence, default: 0] += 1
                        if state.failures[sequence]! < 5 { state.retry.append(sequence) }
                    }
                },
                completed: { state.pending[sequence] = nil })
        }
        var asked: UInt64 = 0, done: UInt64 = 0
        let deadline = Date().addingTimeInterval(timeout)
        while done < last && Date() < deadline && (state.failures[done + 1] ?? 0) < 5 {
            while state.pending.count < 8 {
                if let again = state.retry.popLast() {
                    ask(again)
                } else if asked < last {
                    asked += 1
                    ask(asked)
                } else {
                    break
                }
            }
            let next = done + 1
            _ = EventLoop.main.run(until: { state.answers[next] != nil || state.absent.contains(next) || !state.retry.isEmpty }, timeout: 1)
            while done < last {
                if let message = state.answers.removeValue(forKey: done + 1) {
                    received(message)
                } else if !state.absent.contains(done + 1) {
                    break
                }
                done += 1
            }
        }
        for (_, get) in state.pending { get.dispose() }
        lastSequence = max(lastSequence, done)
        startConsumer()
        return done == last
    }

    /// What a read from the leader has asked and been answered (loop thread).
    private final class LeaderRead {
        var answers: [UInt64: NATSMessage] = [:]
        var absent: Set<UInt64> = []
        var failures: [UInt64: Int] = [:]
        var retry: [UInt64] = []
        var pending: [UInt64: Disposable] = [:]
    }

    /// Forgets every line read (the counts, the order kept, the end marker).
    private func forget() {
        counts = [:]
        inversions = []
        sawEnd = false
        lastSequence = 0
        contiguous = 0
        greatest = [:]
    }

    private func startConsumer() {
        guard !closed, let js else { return }
        generation += 1
        let generation = self.generation
        consumer = js.consume(stream: stream, from: .sequence(lastSequence + 1)).subscribe(
            next: { [weak self] message in
                guard let self, self.generation == generation else { return }
                self.received(message)
            },
            error: { [weak self] error in
                guard let self, !self.closed, self.generation == generation else { return }
                self.consumer = nil
                self.consumerErrors.append("\(error)")
                self.restart = Scheduler.main.afterDelay(0.5) { [weak self] in self?.startConsumer() }
            })
    }

    private func received(_ message: NATSMessage) {
        guard let sequence = message.streamSequence, sequence > lastSequence else { return }
        lastSequence = sequence
        let file = message.headers["Logcast-File"] ?? message.subject
        var start = 0
        let payload = message.payload
        for (i, byte) in payload.enumerated() where byte == 10 {
            let line = payload[start..<i]
            start = i + 1
            delivered += 1
            if let n = numberedLineNumber(line) {
                counts[n, default: 0] += 1
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
    ///
    /// With `expecting`, every number below it is known to be written: when lines go on
    /// arriving but ``contiguous`` stays below it for ``stuckLimit`` seconds, a number is
    /// missing from what was read, so the stream is read again from its leader
    /// (``readFromLeader(_:timeout:)``, once per wait); when it is still missing
    /// ``stuckLimit`` seconds later, with later lines arriving, the stream does not hold
    /// it (it is not on its way either: the edge sends each file in order): the wait ends
    /// at once, false, and ``missingInStream`` says which number.
    func wait(stall: Double = 60, timeout: Double = 600, expecting: Int? = nil, until done: @escaping () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        var seen = delivered
        var lastProgress = Date()
        var lastCheck = Date()
        var stuckAt = contiguous, stuckSince = Date(), arrivedWhileStuck = 0
        var reread = false
        missingInStream = nil
        while Date() < deadline {
            if EventLoop.main.run(until: done, timeout: 2) { return true }
            if contiguous != stuckAt {
                stuckAt = contiguous
                stuckSince = Date()
                arrivedWhileStuck = 0
            }
            arrivedWhileStuck += delivered - seen
            if let expecting, contiguous < expecting, arrivedWhileStuck > 0,
               Date().timeIntervalSince(stuckSince) >= StreamOrderReader.stuckLimit {
                // Lines arrive, the least unread number does not move.
                if !reread {
                    reread = true
                    _ = readFromLeader("number \(contiguous) not read for \(Int(StreamOrderReader.stuckLimit)) s while \(arrivedWhileStuck) other lines arrived")
                    stuckAt = -1
                } else {
                    missingInStream = contiguous
                    return false
                }
                stuckSince = Date()
                arrivedWhileStuck = 0
            }
            if delivered != seen {
                seen = delivered
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

    /// How long lines may arrive while the least unread number stays put before ``wait``
    /// reads the stream again. Longer than a renamed file's catch-up, when the new file's
    /// later numbers are read before the old file's rest.
    static let stuckLimit = 30.0

    /// After a ``wait`` that ended false: the number the stream, read again from its
    /// leader, does not hold (nil when the wait ended for another reason).
    private(set) var missingInStream: Int?

    /// Numbers below `total` never read, and numbers read more than once.
    func check(_ total: Int) -> (missing: [Int], duplicated: [Int]) {
        ((0..<total).filter { counts[$0] == nil }, counts.filter { $0.value > 1 }.map(\.key).sorted())
    }

    func close() {
        closed = true
        restart?.dispose()
        consumer?.dispose()
        connecting?.dispose()
        consumer = nil
        js = nil
        probe = nil
        connection?.close()
        _ = EventLoop.main.run(until: { self.connection?.isClosed ?? true }, timeout: 10)
        connection = nil
    }
}

/// Asks the stream's info every 0.2 s from a thread, loop and connection of its own, and
/// keeps when each answer naming a leader came and which leader it named: when the stream's leader first
/// answered after a heal, unaffected by the test's main loop.
///
/// Why not on the main loop: there the reader's consumer delivers the lines, and after a
/// fault its backlog (megabytes of lines, each checked, in a debug build) held the answers
/// back by up to seconds (2026-11-29: a probe on the main loop "first answered" 4.2 s after a
/// SIGKILLed leader's restart, while the stream stored the edge's lines 1.4 s after it), so
/// the cluster's part looked longer and the edge's shorter than they were. Requests are sent
/// every 0.2 s whether or not the earlier ones were answered (each waits 1 s): a request sent
/// while the stream has no leader is never answered, and waiting it out would hide a leader
/// elected meanwhile.
final class LeaderProbe: @unchecked Sendable {
    // Thread-safety: `lock` guards `answers` and `stopped`.
    private let lock = NSLock()
    private var answers: [(at: Date, leader: String)] = []
    private var stopped = false
    private let done = DispatchSemaphore(value: 0)

    init(urls: [String], stream: String) {
        let thread = Thread { [self] in
            defer { done.signal() }
            guard let loop = try? EventLoop() else { return }
            let box = ReplayBox<NATSConnection>()
            let connecting = NATS.connect(urls, on: loop).subscribe(next: { box.value = $0 }, error: { box.error = $0 })
            _ = loop.run(until: { box.value != nil || box.error != nil }, timeout: 30)
            guard let connection = box.value, let js = try? connection.jetStream(requestTimeout: 1) else {
                connecting.dispose()
                try? loop.close()
                return
            }
            var asks: [Disposable] = []
            while !isStopped {
                asks.append(js.streamInfo(stream).subscribe(next: { [self] info in
                    // An answer naming no leader (a follower's, mid-election) is not the
                    // leader answering: counting it made the cluster's part look shorter.
                    guard let leader = info.leader, !leader.isEmpty else { return }
                    lock.lock()
                    answers.append((Date(), leader))
                    lock.unlock()
                }, error: { _ in }))
                if asks.count > 20 { asks.removeFirst().dispose() }
                _ = loop.run(until: { false }, timeout: 0.2)
            }
            for ask in asks { ask.dispose() }
            connecting.dispose()
            _ = loop.run(until: { connection.isClosed }, timeout: 10)
            try? loop.close()
        }
        thread.start()
    }

    private var isStopped: Bool { lock.lock(); defer { lock.unlock() }; return stopped }

    /// When the stream's leader answered after `moment`: 0 when it was answering at that
    /// moment (an answer in the 0.5 s before it: a fault the cluster went on answering
    /// through, such as the edge's own cut-off, leaves the cluster no part of the wait),
    /// else seconds from it to the first answer after it; and the leader named.
    func firstAnswer(after moment: Date) -> (seconds: Double, leader: String)? {
        lock.lock(); defer { lock.unlock() }
        if let going = answers.last(where: { $0.at <= moment && $0.at > moment.addingTimeInterval(-0.5) }) {
            return (0, going.leader)
        }
        return answers.first { $0.at > moment }.map { ($0.at.timeIntervalSince(moment), $0.leader) }
    }

    /// Stops asking and waits (10 s at most) until its connection and loop are closed.
    func stop() {
        lock.lock(); stopped = true; lock.unlock()
        _ = done.wait(timeout: .now() + 10)
    }
}

import Logging
import ReactiveUV
import ReactiveUVNATS

/// The journal on a NATS edge (`--journal … --publish nats://…`): each entry is published
/// to the edge's stream as a message of its own, and the journal's cursor is saved only
/// once JetStream acknowledged the entry, so a restart ships every entry exactly once.
///
/// ```
/// JournalSource (ship: line, cursor) ─► queue (bounded: reading pauses when full)
///   ─► the first entry: JetStream.publish(subject, "UNIT: MESSAGE\n",
///        id "<subject>/journal/<seqnum id>.<seqnum>", Logcast-Path: journal)
///   ─► ack (stored, or "duplicate": stored before) ─► JournalCursor.save(its cursor) ─► next
///   ─► failure or timeout ─► the same entry again after a pause (0.25 s doubling to 1 s)
/// ```
///
/// Why exactly once holds:
/// - The cursor saved is always that of an entry JetStream acknowledged, and every entry
///   before it was acknowledged first (one entry in flight at a time, in journal order).
///   After a crash the journal is read again from just after it, so every entry not
///   acknowledged is read and published again: none is lost.
/// - An entry's message id is its place in the journal: the sequence-number id and
///   sequence number of its cursor (`s=` and `i=`), the same in every run. An entry
///   published, stored, and not acknowledged before a crash (or whose acknowledgement was
///   lost) is published again under the same id, and the stream answers "duplicate"
///   instead of storing it twice — within the stream's duplicate window (`--dedupe-window`,
///   5 minutes by default), as for files.
/// - Entries are sent in journal order, at most the edge's window in flight
///   (`LOGCAST_NATS_WINDOW`, 1 by default, as for FILEs: NatsEdge+Window.swift says why),
///   and after any failure everything not acknowledged goes out again from the first, one
///   at a time until an acknowledgement comes. With the default window the stream holds
///   the entries in journal order whatever the cluster does; a larger one keeps exactly
///   once, and order except when a leader change loses an earlier entry while a later one
///   is stored (as for FILEs).
///
/// What it costs: one message per entry, where the FILE edge batches lines: 700 to 900
/// entries a second from a debug build to a local server on a loaded 2-core machine, with
/// the default window or 16 (the time goes to cnats's acknowledgement hand-offs between
/// threads, not to this loop). Enough for a journal's usual rate; batching entries under
/// ids that survive a restart is not done yet.
///
/// The edge's connection is the FILE edge's (NatsEdge: its JetStream context, its stream,
/// whether it is connected); nothing is sent while it is not ready, and the next attempt
/// comes after the pause. Main loop only.
final class JournalEdge {
    let edge: NatsEdge
    let source: JournalSource
    let cursor: JournalCursor
    let logger: Logger
    /// Lines also go to the local fan-out (no `--from` in this process), as the edge's
    /// FILE lines do.
    let local: (([UInt8]) -> Void)?
    /// Entries read and not yet acknowledged from `head` on, oldest first (the ones
    /// before `head` are acknowledged, dropped in bulk now and then).
    private var queue: [JournalEdgeEntry] = []
    private var head = 0
    private var queuedBytes = 0
    /// How many entries from `head` on were sent in the current round.
    private var sent = 0
    /// Counts the resends from the first unacknowledged entry: answers to sends of an
    /// earlier round are dropped (the entries went out again).
    private var round = 0
    /// Whether several entries may be in flight: only after an acknowledgement since the
    /// start or the last failure.
    private var opened = false
    private var backoff = JournalEdge.firstBackoff
    private var publishing = CompoundDisposable()
    private var retry: Disposable?
    private var stopped = false
    /// A failed cursor save was said (again only after a save worked).
    private var saveFailing = false

    /// Reading pauses with this many entries or bytes waiting; the journal is the buffer.
    static let maxQueued = 4096
    static let maxQueuedBytes = 8 << 20
    static let firstBackoff = 0.25
    static let longestBackoff = 1.0

    /// - Parameters:
    ///   - edge: the FILE edge whose connection and stream are used.
    ///   - source: the journal (its `ship` is set here; start it after).
    ///   - cursor: where the acknowledged cursor is kept (the edge's state directory).
    ///   - logger: logcast's logger.
    ///   - local: the local fan-out's ingest, when this process serves its own lines.
    init(edge: NatsEdge, source: JournalSource, cursor: JournalCursor, logger: Logger, local: (([UInt8]) -> Void)?) {
        self.edge = edge
        self.source = source
        self.cursor = cursor
        self.logger = logger
        self.local = local
        source.ship = { [weak self] line, cursor in self?.take(line, cursor) ?? false }
        source.counters.shipping = true
    }

    /// Stops sending (what is not acknowledged is read again at the next start). The
    /// source's `ship` stays: it refuses every entry from now on (reading pauses), so the
    /// source can never hand an unshipped entry to the fan-out and save its cursor.
    func stop() {
        stopped = true
        publishing.dispose()
        retry?.dispose()
        retry = nil
    }

    /// The message id of the entry at `cursor`: `<subject>/journal/<s>.<i>` from the
    /// cursor's sequence-number id and sequence number (the whole cursor when it has none:
    /// still the same entry's in every run).
    static func messageID(subject: String, cursor: String) -> String {
        var s: Substring?
        var i: Substring?
        for part in cursor.split(separator: ";") {
            if part.hasPrefix("s=") { s = part.dropFirst(2) }
            if part.hasPrefix("i=") { i = part.dropFirst(2) }
        }
        if let s, let i { return "\(subject)/journal/\(s).\(i)" }
        return "\(subject)/journal/\(cursor)"
    }

    /// One entry read: queued (and served locally); whether reading may go on.
    private func take(_ line: [UInt8], _ entryCursor: String) -> Bool {
        guard !stopped else { return false }
        local?(line)
        queue.append(JournalEdgeEntry(id: Self.messageID(subject: edge.subject, cursor: entryCursor), payload: line + [10], cursor: entryCursor))
        queuedBytes += line.count + 1
        send()
        return waiting < Self.maxQueued && queuedBytes < Self.maxQueuedBytes
    }

    /// Entries read and not yet acknowledged.
    private var waiting: Int { queue.count - head }

    /// Publishes the next entries waiting while the window has room (the edge's window,
    /// `LOGCAST_NATS_WINDOW`, 1 by default; 1 until an acknowledgement after a failure),
    /// unless a pause is under way or the edge is not ready (then it tries again later).
    private func send() {
        guard !stopped, retry == nil, head + sent < queue.count else { return }
        guard edge.ready, edge.linkUp, let js = edge.js else {
            wait(0.25)
            return
        }
        let limit = opened ? edge.window : 1
        while sent < limit, head + sent < queue.count {
            let index = head + sent
            let entry = queue[index]
            sent += 1
            let current = round
            // Held only while it runs (CompoundDisposable+WhileRunning.swift): one per entry.
            publishing.whileRunning(
                js.publish(edge.subject, payload: entry.payload, id: entry.id, headers: ["Logcast-Path": "journal"], retrying: false),
                next: { [weak self] ack in self?.answered(current, entry.id, .success(ack)) },
                error: { [weak self] error in self?.answered(current, entry.id, .failure(error)) })
        }
    }

    /// The answer to one send: an earlier round's is dropped; a failure sends everything
    /// not acknowledged again, from the first, after a pause, one at a time until an
    /// acknowledgement comes (the way to the stream is in doubt: nothing sent behind the
    /// first may overtake it); acknowledgements move the saved cursor over every entry
    /// acknowledged with all the entries before it.
    private func answered(_ answeredRound: Int, _ id: String, _ result: Result<JetStreamAck, any Error>) {
        guard answeredRound == round, !stopped,
              let index = (head..<(head + sent)).first(where: { queue[$0].id == id }) else { return }
        switch result {
        case .failure(let error):
            logger.error("nats: publish of a journal entry failed: \(error); sending what is not acknowledged again in \(backoff) s")
            round += 1
            sent = 0
            opened = false
            for i in head..<queue.count { queue[i].acknowledged = false }
            publishing.dispose()
            publishing = CompoundDisposable()
            wait(backoff)
            backoff = min(backoff * 2, Self.longestBackoff)
        case .success(let ack):
            backoff = Self.firstBackoff
            source.counters.shipped += 1
            if ack.duplicate {
                source.counters.shippedDuplicates += 1
                logger.debug("nats: journal entry \(id) was already in the stream (sequence \(ack.sequence))")
            }
            queue[index].acknowledged = true
            var last: String?
            while head < queue.count, queue[head].acknowledged {
                last = queue[head].cursor
                queuedBytes -= queue[head].payload.count
                head += 1
                sent -= 1
            }
            guard let last else { return }
            save(last)
            opened = true
            if head >= 1024 && head * 2 >= queue.count {
                queue.removeFirst(head)
                head = 0
            }
            if waiting < Self.maxQueued / 2 && queuedBytes < Self.maxQueuedBytes / 2 { source.resume() }
            send()
        }
    }

    /// Tries again after `delay` seconds.
    private func wait(_ delay: Double) {
        guard retry == nil else { return }
        retry = Scheduler.main.afterDelay(delay) { [weak self] in
            self?.retry = nil
            self?.send()
        }
    }

    private func save(_ text: String) {
        cursor.save(text, failing: &saveFailing, logger: logger,
                    consequence: "a restart would publish entries again (deduplicated within the stream's window)")
    }
}

/// One journal entry on its way to the stream (JournalEdge, main loop only).
struct JournalEdgeEntry {
    /// Its message id (``JournalEdge/messageID(subject:cursor:)``).
    let id: String
    /// `UNIT: MESSAGE\n`.
    let payload: [UInt8]
    /// Its cursor, saved once it and every entry before it are acknowledged.
    let cursor: String
    /// Acknowledged in the current round.
    var acknowledged = false
}

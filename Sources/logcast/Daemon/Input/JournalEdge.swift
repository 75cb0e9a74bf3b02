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
/// - Entries are sent one at a time and resent from the first unacknowledged one, so the
///   stream holds them in journal order.
///
/// What it costs: one round trip to JetStream per entry (a few thousand entries a second
/// on a local server), where the FILE edge batches lines. Enough for a journal's usual
/// rate; a backlog after a long outage drains at that rate.
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
    /// Entries read and not yet acknowledged, oldest first: (message id, payload, cursor).
    private var queue: [(id: String, payload: [UInt8], cursor: String)] = []
    private var queuedBytes = 0
    /// Counts sends: an answer to an earlier one (after a failure moved on) is dropped.
    private var round = 0
    private var inFlight = false
    private var backoff = JournalEdge.firstBackoff
    private var publishing: Disposable?
    private var retry: Disposable?
    private var stopped = false
    /// Entries JetStream acknowledged (stored now or before), and of those the duplicates.
    private(set) var acknowledged = 0
    private(set) var duplicates = 0
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
    }

    /// Stops sending (what is not acknowledged is read again at the next start).
    func stop() {
        stopped = true
        publishing?.dispose()
        publishing = nil
        retry?.dispose()
        retry = nil
        source.ship = nil
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
        queue.append((Self.messageID(subject: edge.subject, cursor: entryCursor), line + [10], entryCursor))
        queuedBytes += line.count + 1
        send()
        return queue.count < Self.maxQueued && queuedBytes < Self.maxQueuedBytes
    }

    /// Publishes the first entry waiting, unless one is in flight or the edge is not ready
    /// (then it tries again after the pause).
    private func send() {
        guard !stopped, !inFlight, retry == nil, let first = queue.first else { return }
        guard edge.ready, edge.linkUp, let js = edge.js else {
            wait(0.25)
            return
        }
        inFlight = true
        round += 1
        let sent = round
        publishing = js.publish(edge.subject, payload: first.payload, id: first.id, headers: ["Logcast-Path": "journal"], retrying: false)
            .subscribe(
                next: { [weak self] ack in self?.answered(sent, .success(ack)) },
                error: { [weak self] error in self?.answered(sent, .failure(error)) })
    }

    private func answered(_ sent: Int, _ result: Result<JetStreamAck, any Error>) {
        guard sent == round, inFlight, !stopped, let first = queue.first else { return }
        inFlight = false
        switch result {
        case .failure(let error):
            logger.error("nats: publish of a journal entry failed: \(error); sending it again in \(backoff) s")
            wait(backoff)
            backoff = min(backoff * 2, Self.longestBackoff)
        case .success(let ack):
            backoff = Self.firstBackoff
            acknowledged += 1
            if ack.duplicate {
                duplicates += 1
                logger.debug("nats: journal entry \(first.id) was already in the stream (sequence \(ack.sequence))")
            }
            queue.removeFirst()
            queuedBytes -= first.payload.count
            save(first.cursor)
            if queue.count < Self.maxQueued / 2 && queuedBytes < Self.maxQueuedBytes / 2 { source.resume() }
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
        do {
            try cursor.save(text)
            if saveFailing {
                saveFailing = false
                logger.notice("journal: the cursor is saved again in \(cursor.path)")
            }
        } catch {
            if !saveFailing { logger.error("journal: cannot save the cursor: \(error); a restart would publish entries again (deduplicated within the stream's window)") }
            saveFailing = true
        }
    }
}

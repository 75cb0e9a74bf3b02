import Glibc
import Logging
import ReactiveUV
import ReactiveUVNATS

/// The hub: `logcast --from nats://… --stream LOGS --listen HOST:PORT` serves the stream's
/// lines to logcast clients, and `SINCE <time|sequence>` replays stored lines to one client
/// before its live ones.
///
/// ```
/// stream ─► ordered consumer from "new" ─► LineFanOut ─► every client (GREP applies)
/// SINCE x ─► that client leaves the shared feed ─► its own ordered consumer from x
///            (stored lines in stream order, then live ones, no gap: one consumer)
/// ```
/// Each message holds whole lines of one file; its `Logcast-Path` header becomes the
/// line prefix (`<path>: <line>`), as for local files.
///
/// A replay waits for its client instead of dropping lines: past the queue limit behind,
/// its consumer's ``ConsumerGate`` closes (JetStream's flow control stops the server), and
/// after ``replayHoldLimit`` seconds of waiting the consumer goes; a new one starts from
/// the sequence after the last message taken once the client has read most of its queue.
///
/// A consumer (the live feed's or a replay's) that goes silent while the stream holds more
/// is made again by the library from the first sequence it had not delivered (its stall
/// watch, ``JetStream/defaultStallTimeout``): the hub logs each time and counts it in
/// `STATS consumer_restarts`. Before that watch, a fault of the cluster could leave the
/// live feed silent for good with nothing in the log (issue 33).
final class NatsHub {
    // Main loop only.
    let target: NatsTarget
    let logger: Logger
    let fanOut: LineFanOut
    let running = CompoundDisposable()
    let live = SerialDisposable()
    /// The watch on the current connection's ``JetStream/consumerRestarts``: replaced on
    /// each new connection, so a hub that reconnects often keeps one, not one per
    /// connection it ever had (each held its connection's JetStream).
    let restartWatch = SerialDisposable()
    var js: JetStream?
    /// The current connection (`/metrics` and `/readyz` ask whether it is up).
    var connection: NATSConnection?
    /// Per-client replays, by session.
    var replays: [ObjectIdentifier: HubReplay] = [:]
    /// Messages a replay's consumer hands to the loop ahead of the client, at most: what a
    /// client may get beyond the queue limit before its replay is held back.
    static let replayBufferLimit = 8
    /// Seconds a replay's consumer may be held back by its gate before it is let go (less
    /// than the ordered consumer's 5 s heartbeat: see ``ConsumerGate``).
    static let replayHoldLimit = 2.0
    var messages = 0
    /// Where the live feed goes on after an interruption.
    var livePosition = StreamPosition(start: .new)
    /// Times a replay waited for its client (its gate closed), and times its consumer was
    /// let go after a long wait (to start again when the client has room): `STATS` fields.
    var replayWaits = 0
    var replayRestarts = 0
    /// Times a replay's consumer failed or ended and was made again (`STATS replay_retries`).
    var replayRetries = 0
    /// Seconds before a failed replay consumer is made again.
    static let replayRetryDelay = 1.0
    /// Times the library made a silent consumer again (`STATS consumer_restarts`).
    var consumerRestarts = 0

    /// The hub's `STATS` fields.
    var fields: String {
        " replay_waits=\(replayWaits) replay_restarts=\(replayRestarts) replay_retries=\(replayRetries)"
            + " consumer_restarts=\(consumerRestarts)"
    }

    init(target: NatsTarget, fanOut: LineFanOut, logger: Logger) {
        self.target = target
        self.fanOut = fanOut
        self.logger = logger
    }

    func start() {
        running += live
        running += restartWatch
        running += NatsTarget.connectForever(target, log: { [logger] in logger.info("nats: \($0)") }) { [weak self] c in
            self?.connected(c)
        }
    }

    func stop() {
        for d in replays.values { d.dispose() }
        replays = [:]
        running.dispose()
    }

    private func connected(_ connection: NATSConnection) {
        self.connection = connection
        let js: JetStream
        do {
            js = try connection.jetStream()
        } catch {
            logger.error("nats: \(error)")
            return
        }
        self.js = js
        // The library's stall watch remade a consumer: said, because it means the cluster
        // lost a consumer without telling (nothing was lost or repeated for the clients).
        restartWatch.inner = js.consumerRestarts.subscribeNext { [weak self] restart in
            guard let self else { return }
            self.consumerRestarts += 1
            self.logger.warning("nats: a consumer of \(restart.stream) was silent for \(Int(restart.silentFor)) s while the stream holds up to #\(restart.streamLastSequence): made again from #\(restart.restartedFrom)")
        }
        consumeLive()
    }

    /// Feeds every live client from the stream: new messages, or after an interruption
    /// (a failed consumer, a new connection) the ones after the last fed, so a client
    /// misses nothing stored while the hub was cut off.
    private func consumeLive() {
        guard let js else { return }
        let fanOut = self.fanOut
        live.inner = js.consume(stream: target.stream, from: livePosition.next).subscribe(
            next: { [weak self] message in
                guard let self else { return }
                self.messages += 1
                self.livePosition.took(message)
                fanOut.ingest(prefix: NatsHub.prefix(message), chunk: message.payload)
            },
            error: { [weak self] error in
                guard let self else { return }
                self.logger.error("nats: cannot read stream \(self.target.stream): \(error); retrying in 2 s")
                self.running.afterDelay(2) { [weak self] in self?.consumeLive() }
            })
    }

    static func prefix(_ message: NATSMessage) -> [UInt8] {
        Array(((message.headers["Logcast-Path"] ?? message.subject) + ": ").utf8)
    }

    /// `SINCE <arg>` from `session`: a sequence number (`SINCE 1` is everything stored) or
    /// a time (`2026-11-23T22:00:00Z`, or seconds since the epoch with a fraction: `@1763935200.5`).
    func since(_ session: ClientSession, _ argument: String) {
        guard js != nil else {
            session.reply("ERR SINCE: not connected to NATS yet")
            return
        }
        guard let start = NatsHub.parseStart(argument) else {
            session.reply("ERR SINCE needs a sequence number (1 = all), an ISO time (2026-11-23T22:00:00Z) or @<epoch seconds>")
            return
        }
        let key = ObjectIdentifier(session)
        replays.removeValue(forKey: key)?.dispose()
        // This client now gets the stream from its own consumer: stored, then live.
        session.feed.setPaused(true)
        session.reply("OK SINCE \(argument)")
        let replay = HubReplay(position: StreamPosition(start: start))
        replays[key] = replay
        consume(replay, for: session)
    }

    /// Starts `replay`'s consumer where the replay stands (its start, or after the last
    /// message taken).
    private func consume(_ replay: HubReplay, for session: ClientSession) {
        guard let js else {
            session.reply("ERR SINCE: not connected to NATS")
            return
        }
        replay.gate.open()
        replay.consumer.replace(js.consume(stream: target.stream, from: replay.position.next, bufferLimit: NatsHub.replayBufferLimit,
                                           gate: replay.gate).subscribe(
            next: { [weak self, fanOut] message in
                replay.position.took(message)
                // Through the client's own filter, as the live feed would be.
                // A web view resumes after a reconnect from the message after the last one
                // it got (`SEQ n` follows the message's lines: WebViewTransport.swift); the
                // replay is held back before that reply could cross the queue limit.
                let sequence = (session.transport as? WebViewTransport)?.reportsSequences == true ? message.streamSequence : nil
                if !fanOut.replay(session.feed, prefix: NatsHub.prefix(message), chunk: message.payload)
                    || (sequence != nil && session.feed.outbox.count + 32 > fanOut.queueLimit) {
                    self?.holdBack(replay, for: session)
                }
                if let sequence { session.reply("SEQ \(sequence)") }
            },
            error: { [weak self] error in self?.interrupted(replay, for: session, by: error) },
            completed: { [weak self] in self?.interrupted(replay, for: session, by: nil) }))
    }

    /// `replay`'s consumer failed (`error`) or ended with its connection (`nil`): a
    /// failure a later try may not meet (a timeout, no leader, the connection) is tried
    /// again after ``replayRetryDelay`` from the message after the last one the client
    /// took; any other ends the replay with `ERR SINCE`, and says so in the log.
    ///
    /// Why: a new consumer is a request to the server, and a busy server or machine can
    /// let it time out. Ending the replay then left the client with half of what it
    /// asked for and no way to know where to ask again.
    private func interrupted(_ replay: HubReplay, for session: ClientSession, by error: Error?) {
        if let error, !NatsHub.isTransient(error) {
            // Logged as well: a client may not act on replies (the fault test's `SINCE`
            // client only counts lines), and a replay that ended was then a hub that had
            // stopped serving with nothing in its log.
            logger.warning("nats: a replay ended after #\(replay.position.lastSequence.map(String.init) ?? "nothing"): \(error)")
            session.reply("ERR SINCE: \(error)")
            return
        }
        replayRetries += 1
        logger.warning("nats: a replay \(error.map { "failed: \($0)" } ?? "ended with its connection"); trying again in \(NatsHub.replayRetryDelay) s")
        replay.retry.replace(Scheduler.main.afterDelay(NatsHub.replayRetryDelay) { [weak self] in
            self?.consume(replay, for: session)
        })
    }

    /// Whether `error` may not happen on a later try: no answer, no server, or the
    /// cluster's own "try later" (JetStream 10008, `JetStream system temporarily
    /// unavailable`, HTTP-style 503).
    ///
    /// Why 10008: a consumer's creation first asks for the stream's info, and a clustered
    /// server that is not the stream's leader answers that request with 10008 while the
    /// cluster's meta group has no leader (nats-server's `jsStreamInfoRequest`): during a
    /// meta election, or on a server cut off from the others. A replay made again then
    /// (after a long hold-back, a retry) ended for good, and its client, still connected,
    /// was served nothing more; the hub's log said nothing of it.
    static func isTransient(_ error: Error) -> Bool {
        guard let error = error as? NATSError else { return false }
        if error.serverCode == NatsHub.clusterUnavailable { return true }
        return [.timeout, .noResponders, .noServer, .connectionClosed].contains(error.status)
    }

    /// JetStream's `JSClusterNotAvailErr`: "JetStream system temporarily unavailable".
    static let clusterUnavailable = 10008

    /// The client is a queue limit behind: the replay waits until it has read most of it.
    private func holdBack(_ replay: HubReplay, for session: ClientSession) {
        guard !replay.gate.isClosed, !replay.suspended else { return }
        replay.gate.close()
        replayWaits += 1
        replay.timer.replace(Scheduler.main.afterDelay(NatsHub.replayHoldLimit) { [weak self] in
            // A long wait: let the consumer go rather than have the server's stalled-
            // consumer heartbeat release more of the stream into cnats's memory.
            replay.suspended = true
            replay.consumer.replace(nil)
            self?.replayRestarts += 1
        })
        fanOut.whenRoom(session.feed) { [weak self] in
            replay.timer.replace(nil)
            guard replay.suspended else {
                replay.gate.open()
                return
            }
            replay.suspended = false
            self?.consume(replay, for: session)
        }
    }

    /// The session ended: its replay stops.
    func ended(_ session: ClientSession) {
        replays.removeValue(forKey: ObjectIdentifier(session))?.dispose()
    }

    static func parseStart(_ text: String) -> JetStreamStart? {
        if let sequence = UInt64(text) { return sequence == 0 ? .all : .sequence(sequence) }
        if text.hasPrefix("@"), let seconds = Double(text.dropFirst()) { return .time(Int64(seconds * 1e9)) }
        // ISO 8601 UTC: YYYY-MM-DDTHH:MM:SS[.fff][Z]
        var text = Substring(text)
        if text.hasSuffix("Z") { text = text.dropLast() }
        let halves = text.split(separator: "T")
        guard halves.count == 2 else { return nil }
        let date = halves[0].split(separator: "-").compactMap { Int($0) }
        let timeParts = halves[1].split(separator: ":")
        guard date.count == 3, timeParts.count == 3, let hour = Int(timeParts[0]), let minute = Int(timeParts[1]),
              let second = Double(timeParts[2]) else { return nil }
        var tm = Glibc.tm()
        tm.tm_year = Int32(date[0] - 1900)
        tm.tm_mon = Int32(date[1] - 1)
        tm.tm_mday = Int32(date[2])
        tm.tm_hour = Int32(hour)
        tm.tm_min = Int32(minute)
        tm.tm_sec = 0
        let seconds = Double(timegm(&tm)) + second
        return .time(Int64(seconds * 1e9))
    }
}

/// Where a consumer of the stream goes on when it is made again (after a failure, a new
/// connection, a long wait): after the last message taken, or at its own start when it took
/// none. The hub's live feed and each replay keep one.
struct StreamPosition {
    /// Where the first consumer started.
    let start: JetStreamStart
    /// The stream sequence of the last message taken.
    private(set) var lastSequence: UInt64?

    init(start: JetStreamStart) { self.start = start }

    /// Where a new consumer starts.
    var next: JetStreamStart { lastSequence.map { .sequence($0 + 1) } ?? start }

    /// Notes `message` as taken.
    mutating func took(_ message: NATSMessage) {
        if let sequence = message.streamSequence { lastSequence = sequence }
    }
}

/// One client's replay (`SINCE`): its consumer, the gate that holds it back while the
/// client is behind, and where it stands in the stream (main loop only).
final class HubReplay {
    var position: StreamPosition
    let gate = ConsumerGate()
    let consumer = SerialDisposable()
    /// The hold-back timer (``NatsHub/replayHoldLimit``).
    let timer = SerialDisposable()
    /// The timer that makes a failed consumer again (``NatsHub/replayRetryDelay``).
    let retry = SerialDisposable()
    /// The consumer was let go after a long wait; a new one starts when the client has room.
    var suspended = false

    init(position: StreamPosition) { self.position = position }

    func dispose() {
        timer.dispose()
        retry.dispose()
        consumer.dispose()
        gate.open()
    }
}

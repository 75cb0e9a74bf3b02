import Glibc
import ReactiveUV
import ReactiveUVNATS

// The edge's publishing: a window of batches in flight per file, resent from the first
// unacknowledged one after any failure, timeout, disconnect or new connection.
//
// Why a window: one batch per file in flight waits for each replicated commit in turn
// (a stream with 3 replicas took 197k–304k lines/s that way). Why resends from the first:
// the message ids dedupe what the stream already stored, and sending again in file order
// is what keeps the stream's copy of a file in file order (JetStream's expected-last
// headers cannot: on Debian's 2.9.10 they name the stream's last message or a subject's
// last sequence, and many edges share one stream and one subject per host).
// Why JetStream's own retries are off (`retrying: false`): it would retry a batch that
// got "no responders" while an earlier one still waits out its timeout, and store the
// later one first.

extension NatsEdge {
    /// The window from `LOGCAST_NATS_WINDOW` (1...64), else 1: one batch per file in flight,
    /// the only setting that keeps each file's lines in file order in the stream whatever
    /// the cluster does. Why not more by default: with Debian's nats-server 2.9.10 no
    /// header makes a publish depend on an earlier one still in flight, and a window of 8
    /// had a later batch stored before an earlier one lost to a leader change in both
    /// namespaced fault runs of 2026-11-28 (175 and 625 lines out of file order; the edge
    /// said so, `… (out of order)`). A larger window is for a stream whose readers do not
    /// need file order: ~1.4× the replicated ingest (docs/design/nats-durability.md).
    static func windowSetting() -> Int {
        guard let text = getenv("LOGCAST_NATS_WINDOW").map({ String(cString: $0) }), let n = Int(text),
              (1...64).contains(n) else { return 1 }
        return n
    }

    /// The first pause before resending after a failure, and the longest. Short: the
    /// ids make resends safe, and a leader election answers "no responders" at once
    /// (each resend round is one message per batch in flight, not a storm).
    /// Why at most 0.5 s: a pause runs on after the cluster is whole again (a leader
    /// elected, a partition healed) and nothing tells the edge; with 1 s the fault test's
    /// partitioned leader cost up to a second more after the heal (see ``resendPause``).
    static var firstBackoff: Double { 0.25 }
    static var longestBackoff: Double { 0.5 }

    /// How long a publish waits for its acknowledgement before it is taken as lost and
    /// the file's window is sent again: a leader killed mid-request costs this (once),
    /// not JetStream's 5 s request timeout.
    ///
    /// Why 1 s (2 s before 2026-11-28): a batch sent into a partition just before it heals
    /// is answered by nothing, so its resend waits out this timeout after the heal. In the
    /// fault test's edge log (3 replicas, loaded machine) a 1 MiB batch was acknowledged in
    /// 15–340 ms, and the whole 5 s backlog after a heal in 100 ms, while the heal-to-stored
    /// time was 3.7 s: a publish sent 0.45 s before the heal timed out 2 s later, then a
    /// 1 s back-off, then "duplicate message id is in process" and another 1 s back-off.
    /// A timeout that comes too early only resends the batch under its id: the stream
    /// answers "in process" or "duplicate" (its stored copy is checked), nothing is stored twice.
    ///
    /// The edge keeps this wait itself (``watchAnswer(_:_:_:waited:)``) and asks cnats for
    /// an answer within ``publishAnswerLimit``: a send whose bytes the connection still
    /// holds unsent after this second is given more time, not sent again, and its late
    /// answer still counts.
    static var publishTimeout: Double { 1 }

    /// How long cnats waits for a publish's answer (and the longest the edge lets a send
    /// whose bytes are still on their way go unanswered): after it, the send is taken as
    /// lost whatever the link is doing.
    ///
    /// Why longer than ``publishTimeout`` (2026-11-29): on a link 200 ms slower each way and
    /// losing 5% of its packets (the fault test), one batch of 180 KB–1 MiB takes seconds to
    /// cross. Every 1 s timeout queued another copy of the same batch behind the first one,
    /// cnats's pings waited behind those copies until the connection was taken as stale
    /// (every ~4 s), and nothing at all was acknowledged for the whole 20 s fault.
    static var publishAnswerLimit: Double { 8 }

    /// The pause before the resend after a failed publish, and the back-off after it.
    ///
    /// - A timeout (``publishTimeout``) was itself the wait: the resend goes out after
    ///   ``firstBackoff``, and the back-off does not grow (a partition that heals is found
    ///   one timeout after the heal, not one timeout plus a grown back-off).
    /// - JetStream's 10158 ("duplicate message id is in process"): the leader holds the batch
    ///   and is committing it; the resend after ``firstBackoff`` is answered "duplicate".
    /// - Anything else ("no responders" during an election, a refused publish): the
    ///   back-off, doubled per failure up to ``longestBackoff``.
    ///
    /// Never 0: one message per batch in flight per pause at most, not a storm, whatever
    /// the cluster answers.
    ///
    /// - Parameters:
    ///   - error: why the publish failed.
    ///   - backoff: the file's back-off now.
    /// - Returns: the pause before resending, and the file's back-off after this failure.
    static func resendPause(after error: any Error, backoff: Double) -> (delay: Double, backoff: Double) {
        if let nats = error as? NATSError, nats.status == .timeout || nats.serverCode == 10158 {
            return (firstBackoff, backoff)
        }
        return (backoff, min(backoff * 2, longestBackoff))
    }

    /// The pause before a batch whose stored copy could not be read is sent (and its copy
    /// read) again: ``firstBackoff`` after a timeout or JetStream's 10008 ("JetStream system
    /// temporarily unavailable", what a server answers for a moment after a leader
    /// resumes), 1 s after anything else (a refusal such as a missing permission would
    /// not pass sooner).
    ///
    /// Why not 1 s for all: in the fault test (leader SIGSTOPped 5 s) the resend after the
    /// SIGCONT was answered "duplicate", the read of its stored copy got 10008, and the 1 s
    /// pause made the whole wait after the heal 1.10 s; the next read succeeded.
    static func storedCopyRetryPause(after error: any Error) -> Double {
        if let nats = error as? NATSError, nats.status == .timeout || nats.serverCode == 10008 { return firstBackoff }
        return 1
    }

    func connected(_ connection: NATSConnection) {
        self.connection = connection
        ready = false
        linkUp = true
        do {
            let context = try connection.jetStream(requestTimeout: 5, window: 1024)
            context.publishTimeout = NatsEdge.publishAnswerLimit
            js = context
            streamLookup = try connection.jetStream(requestTimeout: NatsEdge.lookupTimeout, window: 1)
        } catch {
            logger.error("nats: \(error)")
            return
        }
        // Sends on the old connection are answered (if ever) on it: stale.
        for file in files.values { file.restartRound(closing: true) }
        // This server's max_payload (with nothing in flight: batches may be cut again).
        applyPayloadLimit(connection)
        running.whileRunning(connection.events, next: { [weak self] event in self?.connectionEvent(event) })
        // A new stream leader: whatever was in flight to the old one is lost or stored, and
        // the ids sort that out; resending now instead of after the publish timeout is
        // what keeps a failover's stall near the election's own length. (Without the
        // permission to subscribe, e.g. a restricted user, the timeout still does it.)
        running.whileRunning(
            connection.subscribe("$JS.EVENT.ADVISORY.STREAM.LEADER_ELECTED.\(target.stream)", bufferLimit: 16),
            next: { [weak self] _ in self?.leaderElected() },
            error: { [weak self] error in self?.logger.info("nats: no leader advisories (\(error)); a failover is noticed by the publish timeout") })
        ensureStream()
    }

    /// The stream has a new leader: every file's window goes out again at once.
    private func leaderElected() {
        guard ready, linkUp else { return }
        logger.info("nats: stream \(target.stream) has a new leader; resending what was in flight")
        for file in files.values where (file.sent > 0 || file.held) && !file.checking {
            // A back-off pause (no responders while there was no leader) ends here too.
            file.restartRound(closing: true)
            file.held = false
            file.backoff = NatsEdge.firstBackoff
            fill(file)
        }
    }

    /// A disconnect stops sending; a reconnect sends every file's window again at once:
    /// what was in flight on the lost socket is lost or stored, and the ids sort that out
    /// without waiting for a timeout.
    ///
    /// A back-off pause under way ends there too: the way to the servers is open again,
    /// and the pause was taken for a failure on the old socket. In the fault test (edge cut
    /// off) a publish with a 1 s timeout, sent before the disconnect was found, was failed
    /// as timed out about 4–5 s after it was sent, just before the reconnect (cnats queues
    /// that timeout on the reply subscription, whose delivery apparently waited for the
    /// reconnect; not traced further), and its 0.25 s pause held the resend back after
    /// the reconnect.
    private func connectionEvent(_ event: NATSConnectionEvent) {
        switch event {
        case .disconnected:
            linkUp = false
        case .reconnected(let url):
            logger.info("nats: reconnected to \(url); resending what was in flight")
            linkUp = true
            for file in files.values {
                file.restartRound(closing: true)
                // The pause's timer still runs out later: `fill` then sends nothing more
                // than the window allows.
                file.held = false
                file.backoff = NatsEdge.firstBackoff
            }
            // Another server of the list may accept less (or more).
            if let connection { applyPayloadLimit(connection) }
            for file in files.values { fill(file) }
        case .closed, .error:
            break
        }
    }

    /// How long one lookup (or creation) of the stream waits for its answer before it is
    /// asked again, for the first ``quickLookups`` tries after a connect.
    ///
    /// Why short: a freshly started cluster answers no JetStream request until it has
    /// elected its meta leader, and a request sent before that is never answered. The edge
    /// asked with the 5 s request timeout and paused 2 s after it: on a cluster started
    /// with the edge (the bench's R3 rows, a data centre powered up) nothing was stored for
    /// 7.1–7.6 s, while the servers' logs had the meta leader 0.45 s after "Server is ready"
    /// and the stream's leader 0.2 s after the creation request. Asked every second, the
    /// edge stalls no longer than the election plus a second. Later tries wait 5 s: a
    /// cluster that is merely slow (a loaded host) still gets to answer.
    static var lookupTimeout: Double { 1 }
    static var quickLookups: Int { 10 }

    /// Finds the stream or creates it (`<first subject token>.>`), then starts sending.
    /// `attempt` counts the tries since the connect (see ``lookupTimeout``).
    func ensureStream(attempt: Int = 0) {
        guard let slow = js else { return }
        let quick = attempt < NatsEdge.quickLookups ? streamLookup : nil
        let js = quick ?? slow
        let prefix = subject.split(separator: ".").first.map(String.init) ?? subject
        let config = JetStreamConfig(name: target.stream, subjects: [prefix + ".>"], replicas: replicas,
                                     duplicateWindow: dedupeWindow)
        let stream = js.streamInfo(target.stream)
            .catch { error -> Signal<JetStreamInfo> in
                if let nats = error as? NATSError, nats.serverCode == 10059 { return js.addStream(config) }
                return .error(error)
            }
        running.whileRunning(
            stream,
            next: { [weak self] info in
                guard let self else { return }
                self.logger.info("nats: stream \(info.name) (\(info.messages) messages) ready")
                self.ready = true
                for file in self.files.values { self.fill(file) }
            },
            error: { [weak self] error in
                guard let self, js === self.js || js === self.streamLookup else { return }
                if quick != nil, let nats = error as? NATSError, nats.status == .timeout {
                    // No meta leader yet (or a busy one): the wait was the pause; ask again.
                    self.logger.debug("nats: stream \(self.target.stream): no answer within \(NatsEdge.lookupTimeout) s (a cluster still electing its leader?); asking again")
                    self.ensureStream(attempt: attempt + 1)
                    return
                }
                self.logger.error("nats: cannot use stream \(self.target.stream): \(error); retrying in 2 s")
                self.running.afterDelay(2) { [weak self] in self?.ensureStream(attempt: attempt + 1) }
            })
    }

    /// New lines were queued: send what the window has room for.
    func sendNext(_ file: EdgeFile) { fill(file) }

    /// Sends the file's batches after the ones in flight, up to the window (one while the
    /// window is not ``EdgeFile/opened``).
    func fill(_ file: EdgeFile) {
        guard ready, linkUp, let js, !file.held, !file.checking else { return }
        let limit = min(file.opened ? window : 1, file.batches.count)
        while file.sent < limit {
            let round = file.round
            let index = file.sent
            // Counted before sending: a publish can fail before `send` returns.
            file.sent += 1
            send(file, index, js)
            if file.round != round { return }
        }
    }

    /// The id of `batch` of `file` (the same on every send, and after a restart for the
    /// same bytes at the same offset).
    func messageID(_ file: EdgeFile, _ batch: EdgeBatch) -> String {
        var id = "\(subject)/\(file.idText).\(batch.tag)@\(batch.start)"
        if batch.salt > 0 {
            // Salt 1 is the id earlier versions salted with, so their stored copies are found.
            id += "~" + EdgeFile.hash(EdgeFile.firstLine(batch.bytes)) + (batch.salt > 1 ? ".\(batch.salt)" : "")
        }
        return id
    }

    private func send(_ file: EdgeFile, _ index: Int, _ js: JetStream) {
        let batch = file.batches[index]
        let round = file.round
        if batch.firstRound == nil { file.batches[index].firstRound = round }
        let headers = ["Logcast-Path": file.path, "Logcast-Range": "\(batch.start)-\(batch.end)", "Logcast-File": file.idText]
        running.whileRunning(
            js.publish(subject, payload: batch.bytes, id: messageID(file, batch), headers: headers, retrying: false),
            next: { [weak self] ack in self?.answered(file, round, batch, .success(ack)) },
            error: { [weak self] error in self?.answered(file, round, batch, .failure(error)) })
        watchAnswer(file, round, batch)
    }

    /// Takes `batch`'s send of `round` as lost (the file's window goes out again, as after
    /// any failure) when it is still unanswered ``publishTimeout`` after it was sent, or
    /// after each further ``publishTimeout`` while the connection still holds bytes it has
    /// not delivered to the server (``NATSConnection/unsentBytes``), up to
    /// ``publishAnswerLimit``.
    ///
    /// Why look at the connection: an answer lost past the server (a leader killed
    /// mid-request) is worth a resend after a second, but a send still crossing a slow link
    /// is not: its copy would queue behind it and slow the link further. The bytes counted
    /// are the connection's, not this batch's (other files' sends count too), so a busy
    /// healthy link also waits longer; a new leader or a reconnect resends at once anyway.
    private func watchAnswer(_ file: EdgeFile, _ round: Int, _ batch: EdgeBatch, waited: Double = 0) {
        running.afterDelay(NatsEdge.publishTimeout) { [weak self] in
            guard let self, file.round == round, !file.checking,
                  let index = file.sentIndex(of: batch),
                  file.batches[index].ack == nil else { return }
            let waited = waited + NatsEdge.publishTimeout
            if waited < NatsEdge.publishAnswerLimit, let unsent = self.connection?.unsentBytes, unsent > 0 {
                return self.watchAnswer(file, round, batch, waited: waited)
            }
            self.answered(file, round, batch, .failure(NATSError(
                status: .timeout, operation: "publish", target: self.subject,
                detail: "no answer within \(Int(waited)) s")))
        }
    }

    /// The answer to one send: stale (an earlier round's) answers are dropped; a failure
    /// sends the window again after a pause; an acknowledgement waits until every batch
    /// before it is acknowledged.
    private func answered(_ file: EdgeFile, _ round: Int, _ batch: EdgeBatch, _ result: Result<JetStreamAck, any Error>) {
        guard file.round == round,
              let index = file.sentIndex(of: batch)
        else { return lateAnswer(file, batch, result) }
        file.unansweredSeconds = 0
        switch result {
        case .failure(let error):
            if let nats = error as? NATSError, nats.status == .maxPayload, refusedAsTooLarge(file, batch) {
                return fill(file)
            }
            let (delay, backoff) = NatsEdge.resendPause(after: error, backoff: file.backoff)
            file.backoff = backoff
            let first = file.batches[0]
            logger.error("nats: publish of \(file.path) [\(batch.start), \(batch.end)) failed: \(error); resending from \(first.start) in \(delay) s")
            hold(file, delay, closing: true)
        case .success(let ack):
            file.batches[index].ack = ack
            advance(file)
        }
    }

    /// An answer to a send of an earlier round. A fresh acknowledgement of the first batch
    /// in line, now sent again, counts: the stream stored that batch under its id, and
    /// nothing before it is unacknowledged, so file order holds. (On a slow link the first
    /// send's answer comes after its resend went out: without this, only the resend's
    /// answer, "duplicate", and a read of the stored copy back over the same link would
    /// move the file on.) Anything else from an earlier round is stale and dropped: the
    /// resend's own answer decides.
    private func lateAnswer(_ file: EdgeFile, _ batch: EdgeBatch, _ result: Result<JetStreamAck, any Error>) {
        guard case .success(let ack) = result, !ack.duplicate, !file.checking, file.sent > 0,
              let first = file.batches.first, first.ack == nil,
              first.start == batch.start, first.end == batch.end, first.generation == batch.generation, first.salt == batch.salt
        else { return }
        lateAcknowledgements += 1
        file.unansweredSeconds = 0
        file.batches[0].ack = ack
        advance(file)
    }

    /// Starts a new round after `delay` seconds (nothing of the file is sent meanwhile);
    /// `closing` closes the window (see ``EdgeFile/restartRound(closing:)``).
    func hold(_ file: EdgeFile, _ delay: Double, closing: Bool = false) {
        file.restartRound(closing: closing)
        file.held = true
        running.afterDelay(delay) { [weak self] in
            file.held = false
            self?.fill(file)
        }
    }

    /// Acknowledges the batches first in line whose answers came, in file order.
    func advance(_ file: EdgeFile) {
        while !file.checking, file.sent > 0, let first = file.batches.first, let ack = first.ack {
            if ack.duplicate {
                file.checking = true
                checkDuplicate(file, first, ack)
                return
            }
            noteOrder(file, ack.sequence, start: first.start)
            file.opened = true
            file.backoff = NatsEdge.firstBackoff
            finished(file, first, through: first.end)
        }
        fill(file)
    }

    /// The id is in the stream: our message stored before (a resend in this run, or before
    /// a restart: the copy says where it ended), or another content's under the same id;
    /// the stored copy tells which.
    private func checkDuplicate(_ file: EdgeFile, _ batch: EdgeBatch, _ ack: JetStreamAck) {
        guard let js else {
            file.checking = false
            return hold(file, 1, closing: true)
        }
        duplicates += 1
        running.whileRunning(
            js.message(stream: ack.stream, sequence: ack.sequence),
            next: { [weak self] stored in
                guard let self else { return }
                let range = stored.headers["Logcast-Range"]?.split(separator: "-").compactMap { Int64($0) } ?? []
                let common = min(stored.payload.count, batch.bytes.count)
                guard range.count == 2, range[0] == batch.start, range[1] >= range[0],
                      stored.payload.prefix(common).elementsEqual(batch.bytes.prefix(common)) else {
                    return self.idTaken(file, batch)
                }
                self.noteOrder(file, ack.sequence, start: batch.start)
                guard range[1] > batch.end, batch.generation == file.generation else {
                    // The copy is the batch or a prefix of it: the bytes agree, so it is our
                    // resend (or the same bytes written again: see the README's known gaps).
                    // A batch of a content since truncated has only its own bytes to go by.
                    // Its own earlier send in this run, stored: the way to the leader works
                    // again, the window opens.
                    if range[1] == batch.end, let first = batch.firstRound, first < file.round { file.opened = true }
                    return self.resent(file, batch, through: range[1])
                }
                // The copy runs past the batch: our message sent before a restart, or an older
                // content's that began with the same lines (a file written again from the same
                // header). Only the file can tell: does it hold the copy's bytes?
                self.checkAgainstFile(file, batch, Array(stored.payload.prefix(Int(range[1] - range[0]))), through: range[1])
            },
            error: { [weak self] error in
                file.checking = false
                let pause = NatsEdge.storedCopyRetryPause(after: error)
                self?.logger.error("nats: cannot read stored message \(ack.sequence): \(error); retrying in \(pause) s")
                self?.hold(file, pause, closing: true)
            })
    }

    /// Compares a stored copy longer than `batch` with the file, off the loop (a read of at
    /// most one batch), then goes on as the file says.
    private func checkAgainstFile(_ file: EdgeFile, _ batch: EdgeBatch, _ copy: [UInt8], through end: Int64) {
        let path = file.path, identity = file.identity, start = batch.start
        let check = Signal<StoredCopyCheck>.startLazily(on: Scheduler.background(name: "logcast.storedCopy")) { subscriber in
            subscriber.sendNext(EdgeFile.check(copy, at: start, path: path, identity: identity))
            subscriber.sendCompleted()
        }
        running.whileRunning(check.deliverOnMainThread(), next: { [weak self] result in
            guard let self else { return }
            switch result {
            case .same:
                self.resent(file, batch, through: end)
            case .different:
                self.idTaken(file, batch)
            case .unknown(let why):
                // Nothing better to go by than the bytes the batch shares with the copy.
                self.logger.notice("nats: \(file.path)@\(batch.start): cannot compare the stored copy with the file (\(why)); taking it as sent before")
                self.resent(file, batch, through: end)
            }
        })
    }

    /// The stream holds `batch`'s bytes (and maybe more of the file) up to `end`, stored
    /// by an earlier send (in this run or before a restart): go on after them.
    private func resent(_ file: EdgeFile, _ batch: EdgeBatch, through end: Int64) {
        logger.info("nats: \(file.path) [\(batch.start), \(end)) was already in the stream (sent before); going on after it")
        file.checking = false
        finished(file, batch, through: end)
        advance(file)
    }

    /// The message under `batch`'s id holds other bytes: another content of this file (a
    /// truncation, the same first line) or another file that had its inode (reused within
    /// the duplicate window). The batch goes out under the next salted id, alone (the
    /// window closes until a batch is stored as new); each salt that is taken as well holds
    /// yet another content, so the salts run out before the stream's messages do, and after
    /// a restart the same tries find the same ids again.
    private func idTaken(_ file: EdgeFile, _ batch: EdgeBatch) {
        file.checking = false
        file.opened = false
        file.restartRound()
        if !file.batches.isEmpty { file.batches[0].salt += 1 }
        let salt = file.batches.first?.salt ?? 0
        logger.notice("nats: \(file.path)@\(batch.start): the stream holds other bytes under this id (an older content of the file or another file with its inode); resending under salt \(salt)")
        fill(file)
    }

    /// The stream holds the bytes of `batch`'s generation of the file before `end`:
    /// acknowledge, drop them, go on. A batch read before the file's last truncation
    /// acknowledges nothing in the store: the store's position is the new content's.
    /// `batch` is the first in line.
    private func finished(_ file: EdgeFile, _ batch: EdgeBatch, through end: Int64) {
        messagesAcknowledged += 1
        file.quietSeconds = 0
        file.nextStallReport = NatsEdge.stallSeconds
        if batch.generation == file.generation { store.acknowledge(file.identity, through: end) }
        let before = file.batches.count
        file.dropThrough(end, generation: batch.generation)
        if end == batch.end && before - file.batches.count == 1 && file.sent > 0 {
            file.sent -= 1
        } else {
            // A stored copy ran past the batch: the batches after it were cut or dropped,
            // so their sends are stale; what is left goes out again (a new round).
            file.restartRound()
        }
        resumeIfDrained(file)
    }
}

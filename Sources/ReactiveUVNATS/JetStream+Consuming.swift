import CNATS
import CSystemShims
import Glibc
import ReactiveUV

// Consuming a stream: `consume` (an ``OrderedConsumer`` per subscription, see its file for
// the stall watch), the off-loop calls it makes (the consumer's creation, the stream check
// behind a stall, a start time's first sequence), and the few consumer management calls a
// caller needs to see what the server holds.

extension JetStream {
    /// How long an ordered consumer may stay silent while its stream holds more before it
    /// is made again, by default: 15 s, past cnats's own recovery (a recreation after 10 s
    /// without heartbeats, and a consumer request that may wait out ``requestTimeout``).
    public static let defaultStallTimeout: Double = 15

    /// An ordered consumer of `stream`: every stored message from `start` on, in stream
    /// order, then the new ones as they are stored, until disposed.
    ///
    /// Ordered consumers are ephemeral and unacknowledged; cnats recreates one from the
    /// last delivered sequence when it sees a gap or loses its server, so the order holds
    /// across reconnects. Sequences only rise: a message at or below one already delivered,
    /// or below `start`, is never delivered (cnats 3.4 recreates a consumer that has
    /// received nothing yet from the stream's first message). A start time is turned into
    /// the first sequence stored at that time before the consumer is made (cnats 3.4
    /// cannot recreate a consumer made from a time). The consumer is created off the loop;
    /// messages arrive on the loop's thread with ``NATSMessage/streamSequence`` and
    /// ``NATSMessage/timestamp`` set. When the loop falls behind by `bufferLimit` messages,
    /// delivery waits (the server's flow control then pauses the stream).
    ///
    /// A consumer that has gone silent is made again: when nothing has arrived for
    /// `stallTimeout` seconds (a closed `gate` or a full buffer is not silence), the
    /// stream's last sequence (a stream info request) is at or beyond the next sequence not
    /// yet delivered, and a short-lived pull consumer from that sequence, with the same
    /// filter, counts at least one message to deliver, a new ordered consumer starts at that
    /// sequence and replaces the silent one — no message twice, none missing, order kept.
    /// cnats 3.4 cannot see such a stall: a server-side consumer that goes on sending idle
    /// heartbeats while it delivers nothing looks healthy to it (the module's overview,
    /// "Consumers that go silent", says more). Each remake is counted in
    /// ``consumerRestartCount`` and sent on ``consumerRestarts``. The check runs at most
    /// once per third of `stallTimeout`, one at a time, so servers that are down cost one
    /// request per tick, no more; a check or remake that fails is tried again at the next
    /// tick (``stallCheckFailures`` counts them), the silent consumer staying meanwhile.
    ///
    /// Fails with a ``NATSError`` when the stream does not exist or the first consumer
    /// cannot be made; completes when the connection closes. Disposing stops the consumer
    /// (the server drops an ordered consumer once nobody listens).
    ///
    /// - Parameters:
    ///   - stream: the stream's name.
    ///   - subject: a filter subject; `nil` for the stream's own subject(s).
    ///   - start: where to start.
    ///   - bufferLimit: messages handed to the loop and not yet delivered, at most.
    ///   - gate: while closed, holds deliveries back (see ``ConsumerGate`` for how long
    ///     that may last); `nil` delivers as fast as the loop takes them.
    ///   - stallTimeout: seconds of silence, while the stream holds more, after which the
    ///     consumer is made again (at least 0.05); `nil` never watches.
    /// - Returns: a cold signal of messages.
    public func consume(stream: String, subject: String? = nil, from start: JetStreamStart = .all,
                        bufferLimit: Int = 1024, gate: ConsumerGate? = nil,
                        stallTimeout: Double? = JetStream.defaultStallTimeout) -> Signal<NATSMessage> {
        if case .time(let t) = start {
            // Start at a time cnats encodes correctly, at or before `t`, and skip what was
            // stored before `t`: the consumer still begins exactly at `t` (also after a
            // restart by cnats from the stream's start: see `MessageRelay.floor`).
            let encodable = JetStream.startTimeCnatsEncodes(t) ?? t
            return orderedConsumer(stream: stream, subject: subject, from: .time(encodable), bufferLimit: bufferLimit,
                                   gate: gate, stallTimeout: stallTimeout)
                .filter { ($0.timestamp ?? t) >= t }
        }
        return orderedConsumer(stream: stream, subject: subject, from: start, bufferLimit: bufferLimit, gate: gate,
                               stallTimeout: stallTimeout)
    }

    /// Ordered consumers made again because they had gone silent while their stream held
    /// more, since this context was made (loop thread; see
    /// ``consume(stream:subject:from:bufferLimit:gate:stallTimeout:)``).
    public var consumerRestarts: Signal<JetStreamConsumerRestart> { restartSubject }

    /// A start time that cnats 3.4 encodes without shifting it, or `nil` when `t` itself is.
    ///
    /// Why: cnats's `nats_EncodeTimeUTC` prints the nanoseconds of a start time with
    /// `".%" PRId64` and no zero padding, so a fraction below 0.1 s loses its leading zeros
    /// and moves later (…:05.012 s is sent as …:05.12 s): a consumer from such a time missed
    /// every message of the first ~0.1–0.9 s, and none at all when the stream ended within
    /// that span (JetStreamTests caught it about one run in ten). Whole seconds encode
    /// exactly, so such a time is rounded down to its second and the messages before `t`
    /// are skipped on delivery.
    static func startTimeCnatsEncodes(_ t: Int64) -> Int64? {
        let fraction = t % 1_000_000_000
        guard fraction > 0 && fraction < 100_000_000 else { return nil }
        return t - fraction
    }

    /// The ordered consumer itself (see ``consume(stream:subject:from:bufferLimit:gate:stallTimeout:)``).
    private func orderedConsumer(stream: String, subject: String?, from start: JetStreamStart,
                                 bufferLimit: Int, gate: ConsumerGate?, stallTimeout: Double?) -> Signal<NATSMessage> {
        Signal.create { [self] subscriber in
            let consumer = OrderedConsumer(jetStream: self, stream: stream, subject: subject, start: start,
                                           bufferLimit: bufferLimit, gate: gate, stallTimeout: stallTimeout,
                                           subscriber: subscriber)
            loop.natsPerform { consumer.begin() }
            return Disposable { [loop] in loop.natsPerform { consumer.stop() } }
        }
    }

    /// A remade consumer is promoted (loop thread): counted and reported.
    func consumerRestarted(_ restart: JetStreamConsumerRestart) {
        consumerRestartCount += 1
        restartSubject.sendNext(restart)
    }

    /// A stall check or a remake failed (loop thread): counted; the next tick tries again.
    func noteStallCheckFailure(_ error: NATSError) {
        stallCheckFailures += 1
        lastStallCheckError = error
    }

    /// What a stall check found: the stream's last sequence, and whether it holds a
    /// message (of the consumer's filter) at or beyond `next`.
    struct StallState: Sendable {
        let lastSequence: UInt64
        let holdsMore: Bool
    }

    /// Asks the server whether `stream` holds a message of `filter` (`nil`: any) at or
    /// beyond `next` (off the loop; one answer on the loop).
    ///
    /// Why a second request once the last sequence is at or beyond `next`: a stream's info
    /// has only the last sequence of all its subjects, and says nothing of messages deleted
    /// or purged between `next` and it; how many messages a consumer from `next` would
    /// deliver is what a consumer's info says, so a pull consumer is made from `next` (with
    /// the filter), read and deleted (the server drops it by itself after 30 s should this
    /// process die first). Without it a consumer behind a purge would be made again at every
    /// check, for nothing. Only a consumer already silent for the whole timeout gets here.
    func stallCheck(stream: String, filter: String?, next: UInt64) -> Signal<StallState> {
        management("consume (stall check)", stream) { js in
            var si: UnsafeMutablePointer<jsStreamInfo>?
            var code = jsErrCode(rawValue: 0)
            let status = js_GetStreamInfo(&si, js, stream, nil, &code)
            guard status == NATS_OK, let si else {
                return .failure(NATSError(status, "consume (stall check)", stream, serverCode: code))
            }
            let last = si.pointee.State.LastSeq
            jsStreamInfo_Destroy(si)
            guard last >= next else { return .success(StallState(lastSequence: last, holdsMore: false)) }
            return JetStream.pending(js, stream: stream, filter: filter, from: next)
                .map { StallState(lastSequence: last, holdsMore: $0 > 0) }
        }
    }

    /// How many messages of `filter` (`nil`: any) `stream` holds from sequence `from` on: a
    /// pull consumer's count of pending messages, the consumer deleted at once (a thread of
    /// its own).
    static func pending(_ js: OpaquePointer, stream: String, filter: String?, from: UInt64) -> Result<UInt64, NATSError> {
        probe(js, stream: stream, filter: filter, operation: "consume (stall check: pending messages)",
              from: { $0.DeliverPolicy = js_DeliverByStartSequence; $0.OptStartSeq = from },
              read: { $0.NumPending })
    }

    /// Makes a pull consumer of `stream` (of `filter`, when given) from where `from` says,
    /// reads its info with `read`, and deletes it at once; the server drops it by itself
    /// after 30 s should this process die first. How the stall check and the start time's
    /// lookup ask the server a question only a consumer can answer (a thread of its own).
    private static func probe<T>(_ js: OpaquePointer, stream: String, filter: String?, operation: String,
                                 from: (inout jsConsumerConfig) -> Void,
                                 read: (jsConsumerInfo) -> T) -> Result<T, NATSError> {
        var config = jsConsumerConfig()
        jsConsumerConfig_Init(&config)
        from(&config)
        config.AckPolicy = js_AckExplicit
        config.InactiveThreshold = 30_000_000_000
        var info: UnsafeMutablePointer<jsConsumerInfo>?
        var code = jsErrCode(rawValue: 0)
        let status: natsStatus
        if let filter {
            status = filter.withCString { subject -> natsStatus in
                config.FilterSubject = subject
                return js_AddConsumer(&info, js, stream, &config, nil, &code)
            }
        } else {
            status = js_AddConsumer(&info, js, stream, &config, nil, &code)
        }
        guard status == NATS_OK, let info else {
            return .failure(NATSError(status, operation, stream, serverCode: code))
        }
        let answer = read(info.pointee)
        if let name = info.pointee.Name { _ = js_DeleteConsumer(js, stream, name, nil, nil) }
        jsConsumerInfo_Destroy(info)
        return .success(answer)
    }

    // MARK: - Consumers on the server

    /// The names of `stream`'s consumers on the server (ordered consumers included, under
    /// the random names the server gave them).
    ///
    /// - Parameter stream: the stream's name.
    /// - Returns: a signal of the names, then completion; fails with JetStream 10059 when
    ///   there is no such stream.
    public func consumerNames(stream: String) -> Signal<[String]> {
        management("consumer names", stream) { js in
            var list: UnsafeMutablePointer<jsConsumerNamesList>?
            var code = jsErrCode(rawValue: 0)
            let status = js_ConsumerNames(&list, js, stream, nil, &code)
            if status == NATS_NOT_FOUND && code.rawValue == 0 { return .success([]) }  // cnats: no consumers
            guard status == NATS_OK, let list else {
                return .failure(NATSError(status, "consumer names", stream, serverCode: code))
            }
            defer { jsConsumerNamesList_Destroy(list) }
            var names: [String] = []
            for i in 0..<Int(list.pointee.Count) {
                if let name = list.pointee.List[i] { names.append(String(cString: name)) }
            }
            return .success(names)
        }
    }

    /// Deletes the consumer `name` of `stream` on the server. An ordered consumer of this
    /// process whose server-side consumer is deleted goes silent until cnats or the stall
    /// watch of ``consume(stream:subject:from:bufferLimit:gate:stallTimeout:)`` makes it again.
    ///
    /// - Parameters:
    ///   - stream: the stream's name.
    ///   - name: the consumer's name (see ``consumerNames(stream:)``).
    /// - Returns: a signal that completes once deleted; fails with JetStream 10014 when
    ///   there is no such consumer.
    public func deleteConsumer(stream: String, name: String) -> Signal<Void> {
        management("delete consumer", "\(stream) \(name)") { js in
            var code = jsErrCode(rawValue: 0)
            let status = js_DeleteConsumer(js, stream, name, nil, &code)
            if status != NATS_OK { return .failure(NATSError(status, "delete consumer", "\(stream) \(name)", serverCode: code)) }
            return .success(())
        }
    }

    /// Creates the ordered push consumer (a thread of its own: it waits for the server), and
    /// sets `relay`'s floor (``MessageRelay/floor``) to the first sequence it may deliver
    /// before cnats can call it. Returns the subscription and that first sequence (0 for
    /// "all").
    static func subscribeOrdered(_ js: OpaquePointer, stream: String, subject: String?, start: JetStreamStart,
                                 relay: MessageRelay, closure: UnsafeMutableRawPointer)
        -> Result<NATSUnchecked<(OpaquePointer, UInt64)>, NATSError> {
        var filter = subject
        var first: UInt64 = 0
        var isNew = false
        if case .new = start { isNew = true }
        if filter == nil || isNew {
            var si: UnsafeMutablePointer<jsStreamInfo>?
            var code = jsErrCode(rawValue: 0)
            let status = js_GetStreamInfo(&si, js, stream, nil, &code)
            guard status == NATS_OK, let si else { return .failure(NATSError(status, "consume (stream info)", stream, serverCode: code)) }
            let info = JetStreamInfo(si)
            jsStreamInfo_Destroy(si)
            if filter == nil { filter = info.subjects.count == 1 ? info.subjects[0] : ">" }
            // "New" is what is stored after now: nothing at or below today's last sequence.
            if isNew { first = info.lastSequence + 1 }
        }
        var start = start
        if case .time(let t) = start {
            // cnats 3.4 cannot restart an ordered consumer made from a time (its restart
            // keeps the start time beside the start sequence it sets, and the server refuses
            // that, at every try): consume from the first sequence at that time instead.
            switch JetStream.firstSequence(js, stream: stream, filter: filter!, at: t) {
            case .success(let n): start = .sequence(n)
            case .failure(let error): return .failure(error)
            }
        }
        if case .sequence(let n) = start { first = n }
        relay.floor = first
        var options = jsSubOptions()
        jsSubOptions_Init(&options)
        options.Ordered = true
        switch start {
        case .all: options.Config.DeliverPolicy = js_DeliverAll
        case .new: options.Config.DeliverPolicy = js_DeliverNew
        case .sequence(let n):
            options.Config.DeliverPolicy = js_DeliverByStartSequence
            options.Config.OptStartSeq = max(1, n)
        case .time(let t):
            options.Config.DeliverPolicy = js_DeliverByStartTime
            options.Config.OptStartTime = t
        }
        var sub: OpaquePointer?
        var code = jsErrCode(rawValue: 0)
        let status = stream.withCString { name -> natsStatus in
            options.Stream = name
            return js_Subscribe(&sub, js, filter, MessageRelay.onMessage, closure, nil, &options, &code)
        }
        guard status == NATS_OK, let sub else { return .failure(NATSError(status, "consume", stream, serverCode: code)) }
        return .success(NATSUnchecked((sub, first)))
    }

    /// The sequence of the first message of `filter` in `stream` stored at or after `time`
    /// (the next one to be stored when there is none yet): the server's own answer, read
    /// from a pull consumer made from that time, which is deleted at once (and which the
    /// server drops by itself after 30 s should this process die first). A pool thread.
    static func firstSequence(_ js: OpaquePointer, stream: String, filter: String, at time: Int64)
        -> Result<UInt64, NATSError> {
        // A new consumer has delivered nothing: its "delivered" stream sequence is the one
        // before its first.
        probe(js, stream: stream, filter: filter, operation: "consume (find the start time's sequence)",
              from: { $0.DeliverPolicy = js_DeliverByStartTime; $0.OptStartTime = time },
              read: { $0.Delivered.Stream + 1 })
    }
}

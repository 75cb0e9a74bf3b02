import CNATS
import CSystemShims
import Glibc
import ReactiveUV

/// JetStream on one ``NATSConnection``: stream management, acknowledged publishing with a
/// bounded window, and ordered consumers for replay (made again when they go silent).
///
/// Made by ``NATSConnection/jetStream(requestTimeout:window:)``; it lives until its
/// connection closes. Everything it sends arrives on the connection's loop thread.
///
/// Why management calls run off the loop: cnats's JetStream requests (`js_AddStream`,
/// `js_GetStreamInfo`, consumer creation) block until their reply, which is read by the
/// very loop they would block (NATS-NOTES pitfall 1). They run on a short-lived thread each and
/// their results come back on the loop. Publishing is asynchronous (`js_PublishMsgAsync`)
/// and happens on the loop; cnats delivers acknowledgements on a thread of its own, which
/// hands them to the loop (pitfall 5).
public final class JetStream: @unchecked Sendable {
    // Thread-safety: every mutable property is touched only on the connection's loop
    // thread. `js` is also used by pool threads during management calls (cnats's context
    // is thread-safe); `busy` counts those so the context is destroyed only after them.

    /// The connection this context belongs to.
    public unowned let connection: NATSConnection
    let loop: EventLoop
    var js: OpaquePointer?
    /// How long management requests and acknowledgements may take (seconds).
    public let requestTimeout: Double
    /// Publishes sent and not yet acknowledged, at most (see ``publish(_:payload:id:headers:retrying:)``).
    public let window: Int
    /// The first pause after a "no responders" or timed-out publish, doubled per failure
    /// up to ``maximumBackoff``, reset by the next acknowledgement.
    public var initialBackoff: Double = 0.25
    /// The longest pause between retries.
    public var maximumBackoff: Double = 2
    /// How long a publish waits for its acknowledgement, in seconds; `nil` for
    /// ``requestTimeout``. Why apart from it: a publisher that resends unacknowledged
    /// messages itself (under ids that dedupe them) wants to learn soon that an
    /// acknowledgement is lost (a stream leader killed mid-request), while stream
    /// management during an election needs the longer wait. Read when a publish is sent.
    public var publishTimeout: Double?

    let relay: AckRelay
    /// Management calls running on the pool.
    var busy = 0
    var connectionGone = false
    /// Publishes cnats has, by the address of their `natsMsg`.
    var inCnats: [UInt: PendingPublish] = [:]
    /// Publishes waiting for room in the window or for a back-off pause to end (FIFO).
    var waiting: [PendingPublish] = []
    var waitingHead = 0
    /// The order publishes were made in (loop thread): a retry goes back in line by it.
    private var publishCount: UInt64 = 0
    var paused = false
    var backoff: Double
    var backoffTimer: Disposable?
    /// Callbacks run when an acknowledgement frees room in the window.
    var roomWatchers: [() -> Void] = []
    /// Sends ``consumerRestarts``.
    let restartSubject = Subject<JetStreamConsumerRestart>()

    /// How many ordered consumers of this context were made again because they had gone
    /// silent while their stream held more (see
    /// ``consume(stream:subject:from:bufferLimit:gate:stallTimeout:)``). Loop thread.
    public internal(set) var consumerRestartCount = 0

    /// How many times a silent ordered consumer's stream was checked for more messages
    /// (each is one stream info request, and when the stream's last sequence is at or beyond
    /// the next one to deliver, a short-lived pull consumer's count). Loop thread.
    public internal(set) var stallChecks = 0

    /// How many stall checks or remakes of a silent consumer failed (the servers did not
    /// answer, or the new consumer could not be made); each is tried again at the next
    /// tick. Loop thread.
    public internal(set) var stallCheckFailures = 0

    /// The error of the last failed stall check or remake, if any. Loop thread.
    public internal(set) var lastStallCheckError: NATSError?

    init(connection: NATSConnection, nc: OpaquePointer, requestTimeout: Double, window: Int) throws {
        self.connection = connection
        self.loop = connection.loop
        self.requestTimeout = requestTimeout
        self.window = max(1, window)
        self.backoff = 0.25
        self.relay = AckRelay(loop: connection.loop)
        var options = jsOptions()
        jsOptions_Init(&options)
        options.Wait = milliseconds(requestTimeout)
        // No limit inside cnats (its stall waits would block the loop thread: pitfall 3);
        // the window below bounds what is in flight.
        options.PublishAsync.MaxPending = 0
        options.PublishAsync.AckHandler = AckRelay.onAck
        options.PublishAsync.AckHandlerClosure = Unmanaged.passUnretained(relay).toOpaque()
        var out: OpaquePointer?
        try NATSError.check(natsConnection_JetStream(&out, nc, &options), "JetStream context", connection.servers)
        js = out
        relay.target = self
        AckRelay.keep(relay)
    }

    /// Publishes sent to the server and not yet acknowledged (at most ``window``).
    public var unacknowledged: Int { inCnats.count }

    /// How many times a publish was sent again after "no responders", a timeout or a
    /// disconnect (each after a back-off pause).
    public private(set) var retries = 0

    /// Publishes in flight (sent, not yet acknowledged) plus those waiting for room.
    public var inFlight: Int { inCnats.count + waiting.count - waitingHead }

    /// Whether a new publish would be sent at once (the window is not full and no
    /// back-off pause is under way).
    public var hasRoom: Bool { inFlight < window && !paused }

    /// Runs `body` on the loop each time an acknowledgement (or a failure) frees room in
    /// the window, until the connection closes. A producer that must not grow memory
    /// publishes while ``hasRoom`` and resumes here.
    public func whenRoom(_ body: @escaping () -> Void) {
        loop.natsPerform { [self] in roomWatchers.append(body) }
    }

    // MARK: - Stream management (off the loop)

    /// Creates a stream, or finds the existing one when its configuration is the same.
    ///
    /// Fails with a ``NATSError`` carrying JetStream's code and text when the server
    /// refuses (10058 a stream of that name exists with another configuration, 10074 more
    /// than one replica without a cluster, 10065 subjects overlap another stream's).
    ///
    /// - Parameter config: the stream's configuration.
    /// - Returns: a signal of the stream's info, then completion, on the loop's thread.
    public func addStream(_ config: JetStreamConfig) -> Signal<JetStreamInfo> {
        management("add stream", config.name) { js in
            var cfg = jsStreamConfig()
            jsStreamConfig_Init(&cfg)
            let name = strdup(config.name)
            let subjects = CStringArray(config.subjects)
            defer { free(name) }
            cfg.Name = UnsafePointer(name)
            cfg.Subjects = subjects.pointers
            cfg.SubjectsLen = Int32(subjects.count)
            cfg.Replicas = Int64(config.replicas)
            cfg.Storage = config.storage == .file ? js_FileStorage : js_MemoryStorage
            if let age = config.maxAge { cfg.MaxAge = Int64(age * 1e9) }
            if let bytes = config.maxBytes { cfg.MaxBytes = bytes }
            cfg.Duplicates = Int64(config.duplicateWindow * 1e9)
            var si: UnsafeMutablePointer<jsStreamInfo>?
            var code = jsErrCode(rawValue: 0)
            let status = js_AddStream(&si, js, &cfg, nil, &code)
            return JetStream.info(si, status, code, "add stream", config.name)
        }
    }

    /// Fetches a stream's current state (messages, sequences, cluster leader).
    ///
    /// - Parameter name: the stream's name.
    /// - Returns: a signal of the info, then completion; fails with `NATS_NOT_FOUND`
    ///   (JetStream 10059) when there is no such stream.
    public func streamInfo(_ name: String) -> Signal<JetStreamInfo> {
        management("stream info", name) { js in
            var si: UnsafeMutablePointer<jsStreamInfo>?
            var code = jsErrCode(rawValue: 0)
            let status = js_GetStreamInfo(&si, js, name, nil, &code)
            return JetStream.info(si, status, code, "stream info", name)
        }
    }

    /// Deletes a stream and everything it stores.
    ///
    /// - Parameter name: the stream's name.
    /// - Returns: a signal that completes once deleted.
    public func deleteStream(_ name: String) -> Signal<Void> {
        management("delete stream", name) { js in
            var code = jsErrCode(rawValue: 0)
            let status = js_DeleteStream(js, name, nil, &code)
            if status != NATS_OK { return .failure(NATSError(status, "delete stream", name, serverCode: code)) }
            return .success(())
        }
    }

    /// Fetches the message stored at `sequence` in `stream` (with its headers, and
    /// ``NATSMessage/timestamp``: when the stream stored it, by the server's clock).
    ///
    /// - Parameters:
    ///   - stream: the stream's name.
    ///   - sequence: the message's sequence number.
    /// - Returns: a signal of the message, then completion; fails with JetStream 10037
    ///   when there is no message at that sequence.
    public func message(stream: String, sequence: UInt64) -> Signal<NATSMessage> {
        management("get message", "\(stream) #\(sequence)") { js in
            var msg: OpaquePointer?
            var code = jsErrCode(rawValue: 0)
            let status = js_GetMsg(&msg, js, stream, sequence, nil, &code)
            guard status == NATS_OK, let msg else {
                return .failure(NATSError(status, "get message", "\(stream) #\(sequence)", serverCode: code))
            }
            let copy = NATSMessage(copying: msg, jetStream: false)
            // The stored time, from the answer's "time" (0 when the server gave none).
            let time = natsMsg_GetTime(msg)
            natsMsg_Destroy(msg)
            return .success(NATSMessage(subject: copy.subject, payload: copy.payload, messageID: copy.messageID,
                                        headers: copy.headers, streamSequence: sequence, timestamp: time > 0 ? time : nil))
        }
    }

    private static func info(_ si: UnsafeMutablePointer<jsStreamInfo>?, _ status: natsStatus, _ code: jsErrCode,
                             _ operation: String, _ name: String) -> Result<JetStreamInfo, NATSError> {
        guard status == NATS_OK, let si else { return .failure(NATSError(status, operation, name, serverCode: code)) }
        defer { jsStreamInfo_Destroy(si) }
        return .success(JetStreamInfo(si))
    }

    /// Runs a blocking cnats call on the pool and sends its result on the loop.
    func management<Value>(_ operation: String, _ target: String,
                                    _ call: @escaping (OpaquePointer) -> Result<Value, NATSError>) -> Signal<Value> {
        Signal.create { [self] subscriber in
            loop.natsPerform { [self] in
                guard !subscriber.isDisposed else { return }
                guard let js, !connectionGone else {
                    subscriber.sendError(NATSError(status: .connectionClosed, operation: operation, target: target))
                    return
                }
                busy += 1
                let context = NATSUnchecked(js)
                loop.runOffLoop({ call(context.value) }, done: { [self] result in
                    busy -= 1
                    if connectionGone && busy == 0 { destroyContext() }
                    switch result {
                    case .success(let value):
                        subscriber.sendNext(value)
                        subscriber.sendCompleted()
                    case .failure(let error):
                        subscriber.sendError(error)
                    }
                })
            }
            return nil
        }
    }

    // MARK: - Publishing

    /// Publishes `payload` to `subject` with the de-duplication id `id`, and sends the
    /// server's acknowledgement when the stream has stored it (then completes).
    ///
    /// At most ``window`` publishes are in flight; later ones wait (in order) for room.
    /// "No responders" (no stream leader yet, during an election) and acknowledgement
    /// timeouts are retried after a pause that doubles from ``initialBackoff`` to
    /// ``maximumBackoff`` — all sending pauses meanwhile, so an election is not met with
    /// a storm of retries (NATS-NOTES pitfall 6). Because the id names the message, a
    /// retry of a message the stream did store is acknowledged as a duplicate, not stored
    /// twice (within the stream's duplicate window). Other server errors (a subject no
    /// stream stores, a full stream) fail the signal with a ``NATSError``. Disposing does
    /// not recall a message already sent. Events arrive on the loop's thread.
    ///
    /// - Parameters:
    ///   - subject: the subject (a stream must store it).
    ///   - payload: the bytes.
    ///   - id: the `Nats-Msg-Id`; `nil` for none (no de-duplication).
    ///   - headers: more headers to send (e.g. what the payload holds).
    ///   - retrying: `false` to fail the signal at once on "no responders", a timeout or a
    ///     disconnect (with the ``NATSError``) instead of retrying it here; other publishes
    ///     are not paused. For a publisher keeping several messages of one sequence in
    ///     flight: a retry made here for one message, while an earlier one still waits
    ///     for its timeout, would store them out of order; such a publisher resends from
    ///     its first unacknowledged message itself.
    /// - Returns: a cold signal of one ``JetStreamAck``.
    public func publish(_ subject: String, payload: [UInt8], id: String?, headers: [String: String] = [:],
                        retrying: Bool = true) -> Signal<JetStreamAck> {
        Signal.create { [self] subscriber in
            let entry = PendingPublish(subject: subject, payload: payload, id: id, headers: headers, subscriber: subscriber)
            entry.retrying = retrying
            loop.natsPerform { [self] in
                guard !subscriber.isDisposed else { return }
                if connectionGone || js == nil {
                    subscriber.sendError(NATSError(status: .connectionClosed, operation: "publish", target: subject))
                    return
                }
                publishCount += 1
                entry.order = publishCount
                waiting.append(entry)
                pump()
            }
            return nil
        }
    }

    /// Sends waiting publishes while the window has room and no pause is under way.
    private func pump() {
        while !paused, waitingHead < waiting.count, inCnats.count < window, let js, !connectionGone {
            let entry = waiting[waitingHead]
            waitingHead += 1
            if waitingHead > 1024 && waitingHead * 2 > waiting.count {
                waiting.removeFirst(waitingHead)
                waitingHead = 0
            }
            send(entry, js)
        }
    }

    private func send(_ entry: PendingPublish, _ js: OpaquePointer) {
        var msg: OpaquePointer?
        var status = entry.payload.withUnsafeBufferPointer { bytes in
            bytes.withMemoryRebound(to: CChar.self) {
                natsMsg_Create(&msg, entry.subject, nil, $0.baseAddress, Int32($0.count))
            }
        }
        guard status == NATS_OK, let created = msg else {
            entry.fail(NATSError(status, "publish (message)", entry.subject))
            return
        }
        for (name, value) in entry.headers { natsMsgHeader_Set(created, name, value) }
        let key = UInt(bitPattern: created)
        var options = jsPubOptions()
        jsPubOptions_Init(&options)
        options.MaxWait = milliseconds(publishTimeout ?? requestTimeout)
        if let id = entry.id {
            status = id.withCString { idPointer in
                options.MsgId = idPointer
                return js_PublishMsgAsync(js, &msg, &options)
            }
        } else {
            status = js_PublishMsgAsync(js, &msg, &options)
        }
        if status == NATS_OK {
            inCnats[key] = entry
            return
        }
        natsMsg_Destroy(msg)  // still ours: cnats did not take it
        if JetStream.isRetryable(status) && entry.retrying {
            retry(entry)
        } else {
            entry.fail(NATSError(status, "publish", entry.subject))
            roomFreed()
        }
    }

    /// Statuses after which the same message is sent again after a pause.
    static func isRetryable(_ status: natsStatus) -> Bool {
        status == NATS_NO_RESPONDERS || status == NATS_TIMEOUT || status == NATS_INSUFFICIENT_BUFFER
            || status == NATS_NOT_YET_CONNECTED || status == NATS_CONNECTION_DISCONNECTED
    }

    /// Puts `entry` back in line, ahead of every later publish, and pauses sending.
    ///
    /// In the order the publishes were made, not first: a window of publishes whose
    /// acknowledgements time out together (a leader change) fails in order, and putting
    /// each first reversed them (m164, m163, … m101 stored after a leader's SIGKILL in
    /// JetStreamStallTests). Waiting publishes are always in that order, so the place is
    /// found among the few retries at the front.
    private func retry(_ entry: PendingPublish) {
        entry.attempts += 1
        retries += 1
        var place = waitingHead
        while place < waiting.count && waiting[place].order < entry.order { place += 1 }
        if place == waitingHead && waitingHead > 0 {
            waitingHead -= 1
            waiting[waitingHead] = entry
        } else {
            waiting.insert(entry, at: place)
        }
        pause()
    }

    private func pause() {
        guard !paused else { return }
        paused = true
        let delay = backoff
        backoff = min(backoff * 2, maximumBackoff)
        backoffTimer = loop.scheduler.afterDelay(delay) { [self] in
            backoffTimer = nil
            paused = false
            pump()
            roomFreed()
        }
    }

    /// An acknowledgement or failure from cnats, handed over from its thread (loop thread).
    func acknowledged(_ msg: OpaquePointer, _ outcome: AckOutcome) {
        let entry = inCnats.removeValue(forKey: UInt(bitPattern: msg))
        // Destroyed only now, after leaving `inCnats`: its address cannot be reused by a
        // new message while a key still names it.
        natsMsg_Destroy(msg)
        guard let entry else { return }
        switch outcome {
        case .stored(let ack):
            backoff = initialBackoff
            entry.succeed(ack)
        case .failed(let status, let code, let text):
            if JetStream.isRetryable(status) && entry.retrying && !connectionGone {
                retry(entry)
            } else {
                entry.fail(NATSError(status: .init(rawValue: status.rawValue), operation: "publish", target: entry.subject,
                                     serverCode: Int(code.rawValue), detail: text))
            }
        }
        pump()
        roomFreed()
    }

    private func roomFreed() {
        guard hasRoom else { return }
        for watcher in roomWatchers { watcher() }
    }

    // MARK: - The connection's end

    /// The connection is about to close (loop thread): publishes still waiting fail.
    func connectionClosing() {
        let error = NATSError(status: .connectionClosed, operation: "publish", target: connection.servers)
        let pendingWaiting = waiting[waitingHead...]
        waiting = []
        waitingHead = 0
        for entry in pendingWaiting { entry.fail(error) }
        backoffTimer?.dispose()
        backoffTimer = nil
    }

    /// The connection closed (loop thread): in-flight publishes fail, the context goes.
    func connectionClosed() {
        connectionClosing()
        connectionGone = true
        let error = NATSError(status: .connectionClosed, operation: "publish", target: connection.servers)
        let flying = inCnats.values
        inCnats = [:]
        for entry in flying { entry.fail(error) }
        roomWatchers = []
        restartSubject.sendCompleted()
        if busy == 0 { destroyContext() }
    }

    func destroyContext() {
        guard let js else { return }
        self.js = nil
        relay.target = nil
        jsCtx_Destroy(js)
    }
}

/// One publish on its way: kept until acknowledged or failed (loop thread).
final class PendingPublish {
    let subject: String
    let payload: [UInt8]
    let id: String?
    let headers: [String: String]
    let subscriber: Subscriber<JetStreamAck>
    var attempts = 0
    /// When it was published, among this JetStream's publishes (1, 2, …).
    var order: UInt64 = 0
    /// Whether retryable failures are retried here (``JetStream/publish(_:payload:id:headers:retrying:)``).
    var retrying = true

    init(subject: String, payload: [UInt8], id: String?, headers: [String: String], subscriber: Subscriber<JetStreamAck>) {
        self.subject = subject
        self.payload = payload
        self.id = id
        self.headers = headers
        self.subscriber = subscriber
    }

    func succeed(_ ack: JetStreamAck) {
        subscriber.sendNext(ack)
        subscriber.sendCompleted()
    }

    func fail(_ error: NATSError) { subscriber.sendError(error) }
}

/// What cnats said about one publish.
enum AckOutcome: Sendable {
    case stored(JetStreamAck)
    case failed(natsStatus, jsErrCode, String?)
}

/// The closure cnats's acknowledgement handler gets: it outlives its ``JetStream``.
///
/// Why relays are kept for the whole process: cnats may still be running an acknowledgement
/// handler when `jsCtx_Destroy` returns (its reply subscription delivers on its own
/// thread), so the pointer it was given must stay valid. A relay is a few words; one is
/// made per JetStream context.
final class AckRelay: @unchecked Sendable {
    // Thread-safety: `target` is read and written only on `loop`'s thread.
    let loop: EventLoop
    weak var target: JetStream?

    init(loop: EventLoop) { self.loop = loop }

    nonisolated(unsafe) private static var kept: [AckRelay] = []
    nonisolated(unsafe) private static let keptLock = csys_mutex_create(false)

    static func keep(_ relay: AckRelay) {
        csys_mutex_lock(keptLock)
        kept.append(relay)
        csys_mutex_unlock(keptLock)
    }

    /// cnats's acknowledgement handler (a cnats thread): copies the outcome, hands it over.
    static let onAck: jsPubAckHandler = { _, msg, pa, pae, closure in
        guard let msg, let closure else { return }
        let relay = Unmanaged<AckRelay>.fromOpaque(closure).takeUnretainedValue()
        let outcome: AckOutcome
        if let pa {
            outcome = .stored(JetStreamAck(stream: pa.pointee.Stream.map { String(cString: $0) } ?? "",
                                           sequence: pa.pointee.Sequence, duplicate: pa.pointee.Duplicate))
        } else if let pae {
            outcome = .failed(pae.pointee.Err, pae.pointee.ErrCode, pae.pointee.ErrText.map { String(cString: $0) })
        } else {
            outcome = .failed(NATS_ERR, jsErrCode(rawValue: 0), "acknowledgement without a result")
        }
        let message = NATSUnchecked(msg)
        relay.loop.execute {
            if let target = relay.target {
                target.acknowledged(message.value, outcome)
            } else {
                natsMsg_Destroy(message.value)
            }
        }
    }
}

import CLibUV
import CNATS
import CNATSLibuv
import Glibc
import ReactiveUV

/// One connection to a NATS server (or cluster), made by ``NATS/connect(_:options:on:)``.
///
/// Its socket IO runs on ``loop`` through cnats's libuv adapter; its events
/// (``events``), messages (``subscribe(_:queue:bufferLimit:)``) and JetStream acknowledgements arrive on
/// that loop's thread, whichever cnats thread produced them. Its methods may be called from
/// any thread (they hop to the loop), except ``jetStream(requestTimeout:window:)`` and the
/// properties, which are read on the loop's thread. It closes when the subscription that made it is
/// disposed, or with ``close()``.
public final class NATSConnection: @unchecked Sendable {
    // Thread-safety: every mutable property is touched only on `loop`'s thread; cnats's
    // threads reach this object only through `loop.execute` (see the callbacks below).

    /// The loop this connection's IO and events run on.
    public let loop: EventLoop
    /// The server list it was made with (comma-separated), for error messages.
    public let servers: String
    /// cnats's connection; `nil` once destroyed.
    var nc: OpaquePointer?
    /// Set by ``close()``; the close completes in cnats's closed callback.
    private(set) var closeRequested = false
    /// Set when cnats reported the connection closed (then `nc` is destroyed).
    public private(set) var isClosed = false
    private let eventSubject = Subject<NATSConnectionEvent>()
    /// Called once when the connection has closed (the connect signal completes then).
    var onClosed: (() -> Void)?
    /// The pause between rounds of reconnect attempts (cnats's threads; set before the connect).
    var pacing: ReconnectPacing?
    /// JetStream contexts made on this connection, destroyed when it closes.
    var contexts: [ObjectIdentifier: JetStream] = [:]

    init(loop: EventLoop, servers: String) {
        self.loop = loop
        self.servers = servers
    }

    /// Disconnects, reconnects and the final close, on the loop's thread. A hot signal:
    /// a subscriber sees what happens after it subscribed; it completes when the
    /// connection has closed.
    public var events: Signal<NATSConnectionEvent> { eventSubject }

    /// The URL of the server currently connected to, or `nil` while disconnected (read on
    /// the loop's thread).
    public var connectedURL: String? {
        guard let nc, !isClosed else { return nil }
        var buffer = [CChar](repeating: 0, count: 256)
        guard natsConnection_GetConnectedUrl(nc, &buffer, buffer.count) == NATS_OK, buffer[0] != 0 else { return nil }
        return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    /// Whether the connection is up right now (not reconnecting, not closed; read on the
    /// loop's thread).
    public var isConnected: Bool {
        guard let nc, !isClosed else { return false }
        return natsConnection_Status(nc) == NATS_CONN_STATUS_CONNECTED
    }

    /// How many bytes published on this connection have not reached the server yet: what
    /// cnats holds unflushed plus the socket's send queue (written, not yet acknowledged by
    /// the server's TCP). `nil` once the connection is closed. Read on the loop's thread.
    ///
    /// What it tells a publisher waiting for an answer: while it is above zero the link is
    /// still carrying what was sent (a slow or lossy link, a peer cut off); once it is zero
    /// the server has every byte, so a missing answer was lost past the server (a stream
    /// leader killed mid-request). Resending in the first case only queues a second copy
    /// behind the first.
    public var unsentBytes: Int? {
        guard let nc, !isClosed else { return nil }
        let unsent = ruvnats_unsent_bytes(nc)
        return unsent >= 0 ? unsent : nil
    }

    /// The most bytes the connected server accepts in one message, headers and payload
    /// together (its `max_payload`, 1 MiB unless its operator set another), or `nil` once
    /// the connection is closed. Read on the loop's thread.
    ///
    /// The server says it in the INFO it sends on every connect, so after a
    /// ``NATSConnectionEvent/reconnected(_:)`` this is the new server's limit, which may
    /// differ from the last one's: read it again then. A publish over it fails at once
    /// (cnats: "Payload … greater than maximum allowed"); a JetStream message's headers
    /// (its id and whatever ``JetStream/publish(_:payload:id:headers:retrying:)`` adds)
    /// count towards it, so a publisher cutting its payloads to fit leaves room for them.
    /// Wraps cnats's `natsConnection_GetMaxPayload`.
    ///
    /// - Returns: the limit in bytes; `nil` when the connection is closed.
    public var maxPayload: Int? {
        guard let nc, !isClosed else { return nil }
        let limit = natsConnection_GetMaxPayload(nc)
        return limit > 0 ? Int(limit) : nil
    }

    /// Closes the connection (any thread; idempotent). Subscriptions end, unacknowledged
    /// JetStream publishes fail with `NATS_CONNECTION_CLOSED`, and cnats's handles on the
    /// loop are closed; ``events`` sends ``NATSConnectionEvent/closed`` when it is done.
    public func close() {
        loop.natsPerform { [self] in
            guard !closeRequested, !isClosed, let nc else { return }
            closeRequested = true
            for context in contexts.values { context.connectionClosing() }
            natsConnection_Close(nc)
        }
    }

    // MARK: - Publishing and subscribing

    /// Publishes `payload` to `subject` (core NATS: at most once, no acknowledgement).
    ///
    /// The signal completes once cnats has taken the bytes (they leave on the loop's next
    /// turn) and fails with a ``NATSError`` when the connection is closed or the subject
    /// is invalid. For acknowledged, de-duplicated publishing use ``JetStream``.
    ///
    /// - Parameters:
    ///   - subject: a subject without wildcards.
    ///   - payload: the bytes.
    /// - Returns: a cold signal that completes or fails.
    public func publish(_ subject: String, payload: [UInt8]) -> Signal<Void> {
        Signal.create { [self] subscriber in
            loop.natsPerform { [self] in
                guard let nc, !isClosed, !closeRequested else {
                    subscriber.sendError(NATSError(status: .connectionClosed, operation: "publish", target: subject))
                    return
                }
                let status = payload.withUnsafeBytes {
                    natsConnection_Publish(nc, subject, $0.baseAddress, Int32($0.count))
                }
                if status == NATS_OK {
                    subscriber.sendCompleted()
                } else {
                    subscriber.sendError(NATSError(status, "publish", subject))
                }
            }
            return nil
        }
    }

    /// Subscribes to `subject` (wildcards allowed) and sends every message, on the loop's
    /// thread, until disposed.
    ///
    /// cnats delivers on a thread of its own; each message is copied and handed to the
    /// loop. When the loop falls behind by more than `bufferLimit` messages, cnats's
    /// delivery thread waits for it, so memory stays bounded and cnats's own pending
    /// limits then apply (a slow consumer is reported on ``events``). Disposing
    /// unsubscribes. It completes when the connection closes and fails with a
    /// ``NATSError`` when the subject is invalid or the connection is already closed.
    ///
    /// - Parameters:
    ///   - subject: the subject, `*` and `>` allowed.
    ///   - queue: a queue group name: the messages are spread over its members.
    ///   - bufferLimit: messages handed to the loop and not yet delivered, at most.
    /// - Returns: a cold signal of messages.
    public func subscribe(_ subject: String, queue: String? = nil, bufferLimit: Int = 8192) -> Signal<NATSMessage> {
        Signal.create { [self] subscriber in
            let relay = MessageRelay(loop: loop, subscriber: subscriber, jetStream: false, bufferLimit: bufferLimit)
            loop.natsPerform { [self] in
                guard !subscriber.isDisposed else { return }
                guard let nc, !isClosed, !closeRequested else {
                    subscriber.sendError(NATSError(status: .connectionClosed, operation: "subscribe", target: subject))
                    return
                }
                let closure = Unmanaged.passRetained(relay).toOpaque()
                var sub: OpaquePointer?
                let status: natsStatus
                if let queue {
                    status = natsConnection_QueueSubscribe(&sub, nc, subject, queue, MessageRelay.onMessage, closure)
                } else {
                    status = natsConnection_Subscribe(&sub, nc, subject, MessageRelay.onMessage, closure)
                }
                guard status == NATS_OK, let sub else {
                    Unmanaged<MessageRelay>.fromOpaque(closure).release()
                    subscriber.sendError(NATSError(status, "subscribe", subject))
                    return
                }
                relay.attach(sub, closure: closure)
            }
            return Disposable { relay.stop() }
        }
    }

    /// A JetStream context on this connection, for stream management, acknowledged
    /// publishing and consumers. Call on the connection's loop thread (where the
    /// connection is delivered); the context's own methods may be called from any thread.
    ///
    /// - Parameters:
    ///   - requestTimeout: how long management requests and publish acknowledgements may
    ///     take, in seconds.
    ///   - window: the most publishes sent and not yet acknowledged; later ones wait, in
    ///     order, for room (see ``JetStream/window``).
    /// - Returns: the context; it lives until the connection closes.
    /// - Throws: a ``NATSError`` when the connection is closed.
    public func jetStream(requestTimeout: Double = 5, window: Int = 256) throws -> JetStream {
        guard let nc, !isClosed, !closeRequested else {
            throw NATSError(status: .connectionClosed, operation: "JetStream context", target: servers)
        }
        let context = try JetStream(connection: self, nc: nc, requestTimeout: requestTimeout, window: window)
        contexts[ObjectIdentifier(context)] = context
        return context
    }

    // MARK: - Opening and cnats's callbacks

    /// Connects on the loop's thread (see ``NATS/connect(_:options:on:)``).
    static func open(servers: [String], options: NATSOptions, loop: EventLoop, target: String,
                     onClosed: @escaping () -> Void) throws -> NATSConnection {
        var optsOut: OpaquePointer?
        // From here on cnats's library is open (closed only by NATS.closeLibrary).
        NATS.libraryOpened.store(1)
        try NATSError.check(natsOptions_Create(&optsOut), "connect (options)", target)
        guard let opts = optsOut else { throw NATSError(status: .generic, operation: "connect (options)", target: target) }
        defer { natsOptions_Destroy(opts) }
        let urls = CStringArray(servers)
        try NATSError.check(natsOptions_SetServers(opts, urls.pointers, Int32(urls.count)), "connect (server list)", target)
        natsOptions_SetNoRandomize(opts, true)
        natsOptions_SetTimeout(opts, milliseconds(options.connectTimeout))
        natsOptions_SetAllowReconnect(opts, true)
        natsOptions_SetMaxReconnect(opts, Int32(options.maxReconnects))
        natsOptions_SetReconnectWait(opts, milliseconds(options.reconnectWait))
        // cnats's own pause (3.4.1) is always reconnectWait plus jitter after each round of
        // the server list; ours (``ReconnectPacing``) counts the round's own time.
        // cnats's jitter defaults: 0.1 s, 1 s with TLS.
        let secure = options.tls != nil || servers.contains { $0.lowercased().hasPrefix("tls://") }
        let pacing = ReconnectPacing(wait: options.reconnectWait, jitter: secure ? 1 : 0.1)
        natsOptions_SetReconnectBufSize(opts, Int32(options.reconnectBufferBytes))
        natsOptions_SetPingInterval(opts, milliseconds(options.pingInterval))
        if let name = options.name { natsOptions_SetName(opts, name) }
        switch options.credentials {
        case .credentialsFile(let file)?:
            try NATSError.check(natsOptions_SetUserCredentialsFromFiles(opts, file, nil), "connect (credentials file)", file)
        case .userPassword(let user, let password)?:
            try NATSError.check(natsOptions_SetUserInfo(opts, user, password), "connect (user and password)", target)
        case .token(let token)?:
            try NATSError.check(natsOptions_SetToken(opts, token), "connect (token)", target)
        case nil:
            break
        }
        if let tls = options.tls {
            // cnats sets OpenSSL up now: its library must not be closed any more (NATS+Library.swift).
            NATS.tlsUsed.store(1)
            try NATSError.check(natsOptions_SetSecure(opts, true), "connect (TLS)", target)
            if let ca = tls.caFile {
                try NATSError.check(natsOptions_LoadCATrustedCertificates(opts, ca), "connect (loading CA file)", ca)
            }
            if let cert = tls.certificateFile, let key = tls.keyFile {
                try NATSError.check(natsOptions_LoadCertificatesChain(opts, cert, key), "connect (loading certificate)", cert)
            }
            if let host = tls.expectedHostname { natsOptions_SetExpectedHostname(opts, host) }
        }
        ruvnats_libuv_init()
        ruvnats_libuv_set_thread_loop(loop.uvLoop)
        try NATSError.check(ruvnats_options_set_libuv_loop(opts, loop.uvLoop), "connect (event loop)", target)

        let connection = NATSConnection(loop: loop, servers: target)
        connection.onClosed = onClosed
        // cnats's callbacks hold this reference until the closed callback (`didClose`).
        let me = Unmanaged.passRetained(connection).toOpaque()
        natsOptions_SetClosedCB(opts, { _, closure in
            NATSConnection.from(closure).hop { $0.didClose() }
        }, me)
        natsOptions_SetDisconnectedCB(opts, { _, closure in
            let connection = NATSConnection.from(closure)
            connection.pacing?.disconnected()
            connection.hop { $0.emit(.disconnected) }
        }, me)
        connection.pacing = pacing
        natsOptions_SetCustomReconnectDelay(opts, { _, _, closure in
            NATSConnection.from(closure).pacing?.pause() ?? 0
        }, me)
        natsOptions_SetReconnectedCB(opts, { nc, closure in
            let url = NATSConnection.url(of: nc)
            NATSConnection.from(closure).hop { $0.emit(.reconnected(url)) }
        }, me)
        natsOptions_SetErrorHandler(opts, { _, sub, status, closure in
            let error = NATSError(status: .init(rawValue: status.rawValue), operation: sub == nil ? "connection" : "subscription")
            NATSConnection.from(closure).hop { $0.emit(.error(error)) }
        }, me)
        var nc: OpaquePointer?
        let status = natsConnection_Connect(&nc, opts)
        guard status == NATS_OK, let nc else {
            let error = NATSError(status, "connect", target)
            if let nc { natsConnection_Destroy(nc) }
            Unmanaged<NATSConnection>.fromOpaque(me).release()
            throw error
        }
        connection.nc = nc
        NATS.liveConnectionCounter.add(1)
        return connection
    }

    private static func from(_ closure: UnsafeMutableRawPointer?) -> NATSConnection {
        Unmanaged<NATSConnection>.fromOpaque(closure!).takeUnretainedValue()
    }

    private static func url(of nc: OpaquePointer?) -> String {
        guard let nc else { return "" }
        var buffer = [CChar](repeating: 0, count: 256)
        guard natsConnection_GetConnectedUrl(nc, &buffer, buffer.count) == NATS_OK else { return "" }
        return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    /// Hands a callback from a cnats thread to the loop.
    private func hop(_ body: @escaping @Sendable (NATSConnection) -> Void) {
        loop.execute { [self] in body(self) }
    }

    private func emit(_ event: NATSConnectionEvent) {
        guard !isClosed else { return }
        eventSubject.sendNext(event)
    }

    /// Destroys cnats's connection once the adapter's wake-up handle has left the loop.
    ///
    /// Why wait: the adapter may still hold poll updates queued before the close; one that
    /// fails (the socket is gone) makes it call `natsConnection_Close(nc)` from its async
    /// callback. Destroyed before that, `nc` would be used after free (it happened here,
    /// under load). Once its handle is off the loop the adapter never touches `nc` again.
    private func destroyWhenDetached(_ nc: OpaquePointer) {
        let handle = ruvnats_adapter_handle(nc)
        if let handle, ruvnats_loop_has_handle(loop.uvLoop, handle) {
            let pointer = NATSUnchecked(nc)
            loop.execute { [self] in destroyWhenDetached(pointer.value) }
            return
        }
        ruvnats_adapter_forget(nc)
        natsConnection_Destroy(nc)
        NATS.liveConnectionCounter.add(-1)
    }

    /// cnats closed the connection (loop thread): destroy it and release cnats's reference.
    private func didClose() {
        guard !isClosed else { return }
        isClosed = true
        for context in contexts.values { context.connectionClosed() }
        contexts.removeAll()
        if let nc { destroyWhenDetached(nc) }
        nc = nil
        eventSubject.sendNext(.closed)
        eventSubject.sendCompleted()
        let done = onClosed
        onClosed = nil
        done?()
        Unmanaged.passUnretained(self).release()
    }
}

/// The pause cnats takes after each round of reconnect attempts over the server list
/// (`natsOptions_SetCustomReconnectDelay`; called on cnats's reconnect thread).
///
/// ``NATSOptions/reconnectWait`` is the least time between two attempts to the same
/// server, counted from the start of the round before (or the disconnect): a round whose
/// attempts were refused at once (servers restarting) is followed by the rest of the wait
/// plus a random jitter (0.1 s, 1 s with TLS: cnats's defaults), so clients do not hammer a
/// server that comes back; a round that took longer than the wait (attempts that ran into
/// their ``NATSOptions/connectTimeout``: a partition that drops packets) is followed by the
/// next round after only ``leastPause``. cnats 3.4.1's own pause is the whole wait plus jitter after every
/// round, which after a partition healed during a round's last attempt cost up to 0.35 s
/// more (the fault test's edge cut off: reconnected 0.94 s after the heal, 0.31 s of it
/// this pause after an attempt's connect timeout).
final class ReconnectPacing: @unchecked Sendable {
    // Thread-safety: `roundStart` (milliseconds, monotonic) is an atomic: stored by cnats's
    // callback thread at a disconnect, read and stored by its reconnect thread (the only
    // caller of `pause`; a disconnect meanwhile only makes the pause longer or shorter
    // by one round).
    private let roundStart = NATSCounter()
    private let wait: Int64
    private let jitter: Int64
    /// Monotonic milliseconds: ``now()``, or a test's own clock (so a test moves time on
    /// instead of sleeping through it).
    private let clock: @Sendable () -> Int64

    /// `wait` and `jitter` in seconds.
    init(wait: Double, jitter: Double, clock: @escaping @Sendable () -> Int64 = ReconnectPacing.now) {
        self.wait = Int64(max(0, wait) * 1_000)
        self.jitter = Int64(max(0, jitter) * 1_000)
        self.clock = clock
        roundStart.store(clock())
    }

    static func now() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000 + Int64(ts.tv_nsec) / 1_000_000
    }

    /// The connection was lost: the first round of attempts starts now.
    func disconnected() {
        roundStart.store(clock())
    }

    /// The least pause, in milliseconds, even after a round slower than the wait.
    ///
    /// Why never 0: cnats holds the connection's lock through a round of attempts and lets
    /// it go only while it pauses (a timed wait on it). With no pause the reconnect thread
    /// took the lock back at once, round after round, and a publish on the loop thread
    /// waited for it for good: `testAStaleConnectionClosedByCnatsOwnThreadNeverLeaves…`
    /// (a SIGSTOPped server: every attempt runs into its connect timeout) hung for minutes.
    static let leastPause: Int64 = 25

    /// Milliseconds to pause before the next round (see the type's doc).
    func pause() -> Int64 {
        let now = clock()
        let rest = wait - (now - roundStart.value)
        let pause = max(ReconnectPacing.leastPause, rest > 0 ? rest + (jitter > 0 ? Int64.random(in: 0..<jitter) : 0) : 0)
        roundStart.store(now + pause)
        return pause
    }
}

import Glibc
import ReactiveUV

/// A WebSocket connection (RFC 6455) over an upgraded HTTP transport, as signals.
///
/// ```
///   transport.reads ──▶ WebSocketFrameReader ──▶ messages (text / binary)
///        │                    │  ping ──▶ pong written back at once
///        │                    │  pong ──▶ the ping timeout is cancelled
///        │                    └─ close ─▶ close echoed, transport closed, `closed` sends
///   send / send(signal) ──▶ frames (deflated, fragmented, masked by a client) ──▶ transport
/// ```
///
/// **Lifecycle.** Subscribing to ``messages`` starts reading (the bytes the HTTP head
/// reader had already taken first). Pings are answered, and the close handshake runs, only
/// while something reads: keep ``messages`` subscribed (``close(code:reason:)`` reads on
/// its own until the peer's close comes). ``closed`` sends how the connection ended, once:
/// the peer's close code and reason, the code we failed it with, or 1006 when the transport
/// ended without a close frame or the peer stopped answering pings. ``messages`` completes
/// after a close frame from either side and fails with a ``WebSocketError`` otherwise.
///
/// **Closing.** ``close(code:reason:)`` sends a close frame and waits up to
/// ``WebSocketOptions/closeTimeout`` for the peer's; a close frame from the peer is
/// echoed with its code. Either way the transport is closed once the close frame we send
/// is flushed. A protocol violation by the peer sends the matching close code (1002, 1007,
/// 1009) and closes the transport at once (RFC 6455 §7.1.7, "fail the connection").
///
/// **Threads.** Every member may be used from any thread; the work happens on the
/// transport's loop, and every event arrives on its thread.
///
/// **Memory.** Per connection, at most: one frame being received (≤ ``WebSocketOptions/maxMessageSize``)
/// plus one read chunk, the message being assembled (≤ `maxMessageSize`), and with
/// permessage-deflate zlib's state (see ``WebSocketCompression``). Sends are bounded by the
/// transport's write queue.
public final class WebSocketConnection: @unchecked Sendable, CustomStringConvertible {
    // Thread-safety: every `var` below is read and written on `loop`'s thread only; public
    // members hop there with `onLoop`. So without the run-time exclusivity check per
    // access (`@exclusivity(unchecked)`), which bought nothing on the per-message path.

    /// The transport the connection runs over; closed when the connection ends.
    public let transport: any HTTPTransport
    /// Which end we are (clients mask their frames).
    public let role: WebSocketRole
    /// The options the connection runs with.
    public let options: WebSocketOptions
    /// permessage-deflate as negotiated, or `nil` when messages are not compressed.
    public let compression: WebSocketDeflateParameters?
    /// The subprotocol agreed in the handshake, if any.
    public let subprotocol: String?
    /// The transport's loop: every event arrives on its thread.
    ///
    /// Stored (the transport's never changes): read through the `any HTTPTransport`
    /// witness it cost a retain and a release per echoed message (`loop.isCurrentThread`
    /// in `send(_:)`; callgrind, ws-instructions-per-message.sh).
    public let loop: EventLoop

    private let reader: WebSocketFrameReader
    /// Where a server's short frame is framed before it is written (`write(opcode:payload:to:)`):
    /// a header and at most 125 bytes. Reused by every such send: the stream's write is
    /// done with the bytes when it returns (taken by the kernel or copied into the write
    /// request), before anything it calls could frame another message here.
    private let sendScratch = UnsafeMutableRawPointer.allocate(byteCount: 128, alignment: 8)
    @exclusivity(unchecked) private var deflater: WebSocketDeflater?
    @exclusivity(unchecked) private var leftover: [UInt8]
    /// The `messages` subscription, if any. Cleared or replaced while a message is being
    /// sent to it (it disposed itself, or the connection finished, inside its handler), the
    /// old one is parked in `retiredSubscribers` until that send returned: `receive` calls
    /// it unretained, and this field's +1 is what keeps it alive.
    @exclusivity(unchecked) private var subscriber: Subscriber<WebSocketMessage>? {
        didSet {
            if messageSendDepth != 0, let oldValue, oldValue !== subscriber { retiredSubscribers.append(oldValue) }
        }
    }
    /// How many `sendNext`s to `subscriber` are under way (nested when a handler starts a
    /// new subscription that is handed leftover bytes at once).
    @exclusivity(unchecked) private var messageSendDepth = 0
    /// Subscribers cleared from `subscriber` during a send, released when it returns.
    /// Internal, not private: tests check that it fills and empties.
    @exclusivity(unchecked) var retiredSubscribers: [Subscriber<WebSocketMessage>] = []
    @exclusivity(unchecked) private var reading: Disposable?
    @exclusivity(unchecked) private var closeSent = false
    @exclusivity(unchecked) private var finished = false
    @exclusivity(unchecked) private var ending: (close: WebSocketClose, error: WebSocketError?)?
    private let closedSubject = ReplaySubject<WebSocketClose>(capacity: 1)
    @exclusivity(unchecked) private var pingTimer: Disposable?
    @exclusivity(unchecked) private var pongDeadline: Disposable?
    @exclusivity(unchecked) private var closeTimer: Disposable?
    @exclusivity(unchecked) private var pingCount: UInt64 = 0

    /// Wraps an upgraded transport.
    ///
    /// - Parameters:
    ///   - upgrade: the transport and the bytes already read past the HTTP head.
    ///   - role: `.server` after a server's `101`, `.client` after a client's handshake.
    ///   - options: limits, fragmentation, pings and timeouts.
    ///   - compression: permessage-deflate as negotiated (from
    ///     ``WebSocket/serverHandshake(method:headers:options:)`` or the client's
    ///     handshake); `nil` for none.
    ///   - subprotocol: the subprotocol agreed, if any.
    public init(
        upgrade: HTTPUpgrade, role: WebSocketRole, options: WebSocketOptions = WebSocketOptions(),
        compression: WebSocketDeflateParameters? = nil, subprotocol: String? = nil
    ) {
        transport = upgrade.transport
        loop = upgrade.transport.loop
        self.role = role
        self.options = options
        self.compression = compression
        self.subprotocol = subprotocol
        leftover = upgrade.leftover
        reader = WebSocketFrameReader(role: role, maxMessageSize: options.maxMessageSize, deflate: compression)
        // The transport closing (for any reason, even while nobody reads) ends the connection.
        _ = transport.closed.subscribe(
            error: { [self] error in onLoop { self.finish(WebSocketClose(code: 1006, reason: "", initiatedByPeer: true), .abnormalClosure) } },
            completed: { [self] in onLoop { self.finish(WebSocketClose(code: 1006, reason: "", initiatedByPeer: true), .abnormalClosure) } })
    }

    deinit { sendScratch.deallocate() }

    /// `WebSocket server 127.0.0.1:51234`.
    public var description: String { "WebSocket \(role) \(transport)" }

    /// Runs `body` on the loop's thread (at once when already there).
    fileprivate func onLoop(_ body: @escaping () -> Void) {
        if loop.isCurrentThread {
            body()
        } else {
            let box = WebSocketBox(body)
            loop.execute { box.value() }
        }
    }

    // MARK: - Receiving

    /// The peer's messages, in order, each whole (fragments joined, inflated, text checked).
    ///
    /// Subscribing starts reading; disposing stops (pings then go unanswered until a new
    /// subscription reads again), except during the close handshake, which reads on. One
    /// subscription at a time: another one made while one is active fails with a
    /// ``/ReactiveUV/UVError`` `EBUSY`; one made after the connection ended gets its end at
    /// once. Completes after a close frame (ours answered or theirs received); fails with ``WebSocketError/protocolViolation(code:reason:)``
    /// when the peer broke the protocol, ``WebSocketError/peerTimedOut`` when it stopped
    /// answering pings, ``WebSocketError/abnormalClosure`` or the transport's error when the
    /// transport ended first. Events arrive on ``loop``'s thread.
    ///
    /// `--text("hi")--binary(3 bytes)--|`
    public var messages: Signal<WebSocketMessage> {
        Signal.create { [self] subscriber in
            onLoop { [self] in
                if subscriber.isDisposed { return }
                if let ending {
                    if let error = ending.error { subscriber.sendError(error) } else { subscriber.sendCompleted() }
                    return
                }
                if self.subscriber != nil {
                    subscriber.sendError(UVError(code: -EBUSY, operation: "WebSocket messages (another subscription is reading)", target: "\(transport)"))
                    return
                }
                self.subscriber = subscriber
                startReading()
            }
            return Disposable { [self] in
                onLoop { [self] in
                    guard self.subscriber === subscriber else { return }
                    self.subscriber = nil
                    // Keep reading through a close handshake; otherwise pause.
                    if !closeSent && !finished {
                        reading?.dispose()
                        reading = nil
                    }
                }
            }
        }
    }

    /// Sends how the connection ended, once, then completes (a replay: late subscribers get
    /// it too). Events arrive on ``loop``'s thread.
    public var closed: Signal<WebSocketClose> { closedSubject }

    /// Reads the transport (loop thread): leftover bytes first.
    private func startReading() {
        guard reading == nil, !finished else { return }
        let placeholder = CompoundDisposable()
        reading = placeholder
        if !leftover.isEmpty {
            let bytes = leftover
            leftover = []
            receive(bytes)
            if finished || reading !== placeholder { return }
        }
        placeholder.add(transport.reads.subscribe(WebSocketReadForwarder(connection: self)))
        schedulePing()
    }

    /// The transport's reads ended (an error, or the end of stream) without a close frame.
    fileprivate func readsEnded() {
        finish(WebSocketClose(code: 1006, reason: "", initiatedByPeer: true), .abnormalClosure)
    }

    /// Feeds bytes to the reader and acts on what comes out (loop thread).
    ///
    /// Not inlined: the reader's `feed` is inlined here, once, with `self` guaranteed.
    /// The handler reaches `self` through an unretained reference: capturing `self`, its
    /// context took it +2 (`swift_retain_n`, and a `swift_release_n`, per read under
    /// callgrind). Sound because `self` is this call's guaranteed argument, alive until it
    /// returns, and the handler does not outlive `feed`.
    @inline(never)
    fileprivate func receive(_ bytes: [UInt8]) {
        let me = Unmanaged.passUnretained(self)
        do {
            try reader.feed(bytes) { inbound in me._withUnsafeGuaranteedRef { $0.handle(inbound) } }
        } catch {
            fail(error)
        }
    }

    /// Acts on one message or control frame from the reader; `false` to stop reading this
    /// chunk (loop thread).
    @inline(__always)
    private func handle(_ inbound: WebSocketInbound) -> Bool {
        switch inbound {
        case .message(let message):
            // Unretained (a retain and a release per message, callgrind): sound
            // because the field's +1 is parked, not dropped, while the send runs
            // (see `subscriber`; WebSocketSubscriberLifetimeTests).
            if let subscriber = subscriber.map({ Unmanaged.passUnretained($0) }) {
                messageSendDepth &+= 1
                subscriber._withUnsafeGuaranteedRef { $0.sendNext(message) }
                messageSendDepth &-= 1
                if messageSendDepth == 0 && !retiredSubscribers.isEmpty { retiredSubscribers.removeAll() }
            }
        case .ping(let payload):
            if !closeSent { write(WebSocketFrameCodec.frame(opcode: .pong, payload: payload, masked: role == .client)) }
        case .pong:
            pongDeadline?.dispose()
            pongDeadline = nil
        case .close(let code, let reason):
            let initiatedByPeer = !closeSent
            closeSent = true
            // Echo the code and reason (RFC 6455 §5.5.1), then close once flushed.
            let frame = initiatedByPeer ? WebSocketFrameCodec.frame(
                opcode: .close, payload: WebSocketFrameCodec.closePayload(code: code, reason: reason), masked: role == .client) : nil
            finish(WebSocketClose(code: code ?? 1005, reason: reason, initiatedByPeer: initiatedByPeer), nil, writing: frame)
            return false
        }
        return !finished
    }

    /// Fails the connection for a violation: close frame with its code, then the transport.
    private func fail(_ violation: WebSocketViolation) {
        guard !finished else { return }
        let alreadySent = closeSent
        closeSent = true
        let frame = alreadySent ? nil : WebSocketFrameCodec.frame(
            opcode: .close, payload: WebSocketFrameCodec.closePayload(code: violation.code, reason: violation.reason), masked: role == .client)
        finish(WebSocketClose(code: violation.code, reason: violation.reason, initiatedByPeer: false),
               .protocolViolation(code: violation.code, reason: violation.reason), writing: frame)
    }

    /// Ends the connection once: timers and reading stopped, then `frame` (our close frame,
    /// if one is still to be sent) written, the transport closed, and `messages` and
    /// ``closed`` told.
    ///
    /// Why the notifications wait for the write: a subscriber that ends the transport's
    /// owner on `messages`' end (a client's `flattenMap` over `connect` failing) would
    /// otherwise close the transport before the close frame left. And why `finished` is
    /// set first: the write may complete, and close the transport (ending its reads and
    /// `closed`, which call `finish` again), before `write` returns.
    private func finish(_ close: WebSocketClose, _ error: WebSocketError?, writing frame: [UInt8]? = nil) {
        guard !finished else { return }
        finished = true
        pingTimer?.dispose()
        pongDeadline?.dispose()
        closeTimer?.dispose()
        pingTimer = nil
        pongDeadline = nil
        closeTimer = nil
        reading?.dispose()
        reading = nil
        let notify = { [self] in
            guard ending == nil else { return }
            ending = (close, error)
            let subscriber = self.subscriber
            self.subscriber = nil
            transport.close()
            if let error { subscriber?.sendError(error) } else { subscriber?.sendCompleted() }
            closedSubject.sendNext(close)
            closedSubject.sendCompleted()
        }
        if let frame {
            _ = transport.write(frame).subscribe(error: { _ in notify() }, completed: { notify() })
        } else {
            notify()
        }
    }

    // MARK: - Pings

    /// Arms the next ping (loop thread).
    private func schedulePing() {
        guard let interval = options.pingInterval, interval > 0, pingTimer == nil, !finished else { return }
        pingTimer = loop.scheduler.afterDelay(interval) { [weak self] in
            guard let self else { return }
            self.pingTimer = nil
            self.sendPing()
            self.schedulePing()
        }
    }

    /// Sends a ping and starts its deadline, unless one is already waiting for its pong.
    private func sendPing() {
        guard !finished, !closeSent, pongDeadline == nil else { return }
        pingCount += 1
        let payload = withUnsafeBytes(of: pingCount.bigEndian) { Array($0) }
        write(WebSocketFrameCodec.frame(opcode: .ping, payload: payload, masked: role == .client))
        pongDeadline = loop.scheduler.afterDelay(options.pingTimeout) { [weak self] in
            guard let self, !self.finished else { return }
            self.pongDeadline = nil
            self.finish(WebSocketClose(code: 1006, reason: "no pong within \(self.options.pingTimeout) s", initiatedByPeer: false), .peerTimedOut)
        }
    }

    // MARK: - Sending

    /// Writes bytes, ignoring the outcome: a failed write ends the transport, which the
    /// reads and ``closed`` report.
    private func write(_ bytes: [UInt8]) {
        _ = transport.write(bytes).subscribe(error: { _ in })
    }

    /// The frames of one message, as one buffer: deflated when negotiated and worth it,
    /// split into ``WebSocketOptions/fragmentSize`` pieces, masked by a client (loop thread).
    func encode(_ message: WebSocketMessage) -> [UInt8] {
        switch message {
        case .text(let text):
            // A native string's bytes are read in place, through its `UTF8Span` (borrowed):
            // `utf8.withContiguousStorageIfAvailable` copied the string into its view, and
            // `withUTF8` needs a `var` copy, each a retain and a release per message under
            // callgrind. `withUTF8` is kept for the strings that are not contiguous UTF-8
            // (bridged or lazily decoded).
            if text.isContiguousUTF8 {
                return text.utf8Span.span.withUnsafeBytes { encode(opcode: .text, payload: $0) }
            }
            var text = text
            return text.withUTF8 { encode(opcode: .text, payload: UnsafeRawBufferPointer($0)) }
        case .binary(let bytes):
            return bytes.withUnsafeBytes { encode(opcode: .binary, payload: $0) }
        }
    }

    private func encode(opcode: WebSocketOpcode, payload: UnsafeRawBufferPointer) -> [UInt8] {
        if let compression, payload.count >= compression.minimumSize {
            if deflater == nil { deflater = WebSocketDeflater(compression) }
            if let deflater {
                let compressed = deflater.compress(payload)
                return compressed.withUnsafeBytes { frames(opcode: opcode, rsv1: true, payload: $0) }
            }
        }
        return frames(opcode: opcode, rsv1: false, payload: payload)
    }

    private func frames(opcode: WebSocketOpcode, rsv1: Bool, payload: UnsafeRawBufferPointer) -> [UInt8] {
        WebSocketFrameCodec.frames(opcode: opcode, rsv1: rsv1, payload: payload, fragmentSize: options.fragmentSize, masked: role == .client)
    }

    /// Writes `message`'s frames (as ``encode(_:)`` makes them) through `sender`: a small
    /// message's are framed on the stack, so the direct send path makes no array per
    /// message (loop thread).
    ///
    /// Why `sender` is a parameter all the way down rather than captured by a closure
    /// handed the bytes: the closure's specialization took its capture owned, a retain and
    /// a release per message under callgrind.
    func write(_ message: WebSocketMessage, to sender: StreamDirectSender) {
        switch message {
        case .text(let text):
            // Borrowed through the `UTF8Span`, as in `encode(_:)` (why there).
            if text.isContiguousUTF8 {
                text.utf8Span.span.withUnsafeBytes { write(opcode: .text, payload: $0, to: sender) }
                return
            }
            var text = text
            text.withUTF8 { write(opcode: .text, payload: UnsafeRawBufferPointer($0), to: sender) }
        case .binary(let bytes):
            bytes.withUnsafeBytes { write(opcode: .binary, payload: $0, to: sender) }
        }
    }

    private func write(opcode: WebSocketOpcode, payload: UnsafeRawBufferPointer, to sender: StreamDirectSender) {
        let masked = role == .client
        if let compression, payload.count >= compression.minimumSize {
            if deflater == nil { deflater = WebSocketDeflater(compression) }
            if let deflater {
                let compressed = deflater.compress(payload)
                compressed.withUnsafeBytes {
                    WebSocketFrameCodec.withFrames(
                        opcode: opcode, rsv1: true, payload: $0, fragmentSize: options.fragmentSize, masked: masked) { sender.write($0) }
                }
                return
            }
        }
        // A server's short unfragmented frame (an echo's): framed in the connection's
        // scratch and written from there. Not a `withUnsafeTemporaryAllocation`: its
        // closure retained and released the sender per message (callgrind).
        let count = payload.count
        if !masked && count < 126 && count <= Swift.max(1, options.fragmentSize ?? count) {
            let out = sendScratch
            out.storeBytes(of: 0x80 | opcode.rawValue, as: UInt8.self)
            out.storeBytes(of: UInt8(truncatingIfNeeded: count), toByteOffset: 1, as: UInt8.self)
            if count > 0 { (out + 2).copyMemory(from: payload.baseAddress!, byteCount: count) }
            sender.write(UnsafeRawBufferPointer(start: out, count: 2 + count))
            return
        }
        WebSocketFrameCodec.withFrames(
            opcode: opcode, payload: payload, fragmentSize: options.fragmentSize, masked: masked) { sender.write($0) }
    }

    /// Sends one message; completes once its frames are flushed to the kernel.
    ///
    /// Fails with ``WebSocketError/closed`` after the close handshake started, or with the
    /// transport's error. Events arrive on ``loop``'s thread; disposing before the write
    /// starts sends nothing.
    ///
    /// - Parameter message: the message.
    /// - Returns: a cold signal that sends no value.
    public func send(_ message: WebSocketMessage) -> Signal<Void> {
        Signal.create { [self] subscriber in
            let lifetime = CompoundDisposable()
            onLoop { [self] in
                if subscriber.isDisposed { return }
                guard !closeSent, !finished else {
                    subscriber.sendError(WebSocketError.closed)
                    return
                }
                lifetime.add(transport.write(encode(message)).subscribe(
                    error: { subscriber.sendError($0) }, completed: { subscriber.sendCompleted() }))
            }
            return lifetime
        }
    }

    /// Sends a text message (see ``send(_:)-(WebSocketMessage)``).
    ///
    /// - Parameter text: the text.
    /// - Returns: a cold signal that completes once the frames are flushed.
    public func send(text: String) -> Signal<Void> { send(.text(text)) }

    /// Sends a binary message (see ``send(_:)-(WebSocketMessage)``).
    ///
    /// - Parameter bytes: the payload.
    /// - Returns: a cold signal that completes once the frames are flushed.
    public func send(binary bytes: [UInt8]) -> Signal<Void> { send(.binary(bytes)) }

    /// Sends every message `source` sends, in order, with the transport's backpressure:
    /// `source` is paused (as ``/ReactiveUV/StreamConnection/send(_:)`` pauses it) while
    /// the write queue is full, so an echo (`c.send(c.messages)`) never outruns a slow peer.
    ///
    /// Completes when `source` has completed and everything is flushed; fails with
    /// `source`'s error, the transport's, or ``WebSocketError/closed`` for a message that
    /// comes after the close handshake started. Events arrive on ``loop``'s thread.
    ///
    /// - Parameter source: the messages.
    /// - Returns: a cold signal that sends no value.
    public func send(_ source: Signal<WebSocketMessage>) -> Signal<Void> {
        // A plain stream (not TLS): each message is framed on the stack and written from
        // there through the stream's sender, with the same policy and pausing, without an
        // array and a subscriber call per message (`StreamConnection.sendDirect`).
        if let stream = transport as? StreamConnection {
            return stream.sendDirect { [self] sender in
                source.subscribe(WebSocketDirectForwarder(connection: self, sender: sender))
            }
        }
        let frames = Signal<[UInt8]>.create { [self] subscriber in
            source.subscribe(WebSocketMessageForwarder(connection: self, frames: subscriber))
        }
        return transport.send(frames)
    }

    /// Hands `message`'s frames to the transport's sender, or fails the send once the close
    /// handshake started (loop thread).
    fileprivate func forward(_ message: WebSocketMessage, to subscriber: Subscriber<[UInt8]>) {
        if closeSent || finished { subscriber.sendError(WebSocketError.closed) } else { subscriber.sendNext(encode(message)) }
    }

    /// Writes `message`'s frames through the stream's sender, or fails the send once the
    /// close handshake started (loop thread).
    fileprivate func forward(_ message: WebSocketMessage, to sender: StreamDirectSender) {
        if closeSent || finished {
            sender.fail(WebSocketError.closed)
        } else {
            // No `isActive` check here: the sender's `write` makes it, once per message.
            write(message, to: sender)
        }
    }

    /// Sends a ping with `payload` (at most 125 bytes; longer payloads are cut).
    ///
    /// The pong is handled by the connection (it cancels the ping timeout); a ping after
    /// the close handshake started is not sent.
    ///
    /// - Parameter payload: the application data echoed in the pong.
    public func ping(_ payload: [UInt8] = []) {
        onLoop { [self] in
            guard !closeSent, !finished else { return }
            write(WebSocketFrameCodec.frame(opcode: .ping, payload: Array(payload.prefix(125)), masked: role == .client))
        }
    }

    // MARK: - Closing

    /// Starts the close handshake: sends a close frame with `code` and `reason`, reads
    /// until the peer's close frame arrives (or ``WebSocketOptions/closeTimeout`` passes),
    /// then closes the transport. ``closed`` then sends the peer's answer.
    ///
    /// A code that may not be sent (below 1000, 1004–1006, 1015, 1016–2999, above 4999)
    /// is replaced by 1000; the reason is cut to fit the frame's 123 bytes. Calling it again,
    /// or after the connection ended, does nothing. Any thread.
    ///
    /// - Parameters:
    ///   - code: the close code (default 1000, normal closure).
    ///   - reason: a short UTF-8 reason.
    public func close(code: UInt16 = 1000, reason: String = "") {
        onLoop { [self] in
            guard !closeSent, !finished else { return }
            closeSent = true
            let code = WebSocketFrameCodec.isValidCloseCode(code) ? code : 1000
            write(WebSocketFrameCodec.frame(
                opcode: .close, payload: WebSocketFrameCodec.closePayload(code: code, reason: reason), masked: role == .client))
            closeTimer = loop.scheduler.afterDelay(options.closeTimeout) { [weak self] in
                guard let self, !self.finished else { return }
                self.finish(WebSocketClose(code: 1006, reason: "no close frame within \(self.options.closeTimeout) s", initiatedByPeer: false), .abnormalClosure)
            }
            startReading()
        }
    }
}

/// The connection's subscriber to the transport's reads: each chunk to `receive`, the
/// reads' end (error or end of stream) to `readsEnded`. Events arrive on the loop's thread.
///
/// Why not `subscribe(next:error:completed:)`: its block subscriber called `next` through
/// its context, a retain and a release per read, and its cross-thread serializing cost
/// ~55 instructions more per read under callgrind (Benchmarks/http/ws-instructions-per-message.sh);
/// the reads come on one thread, and `subscribe(_:)` stops delivering once the reading is
/// disposed. The connection is kept only while reading: disposing `reading` (a pause, or
/// the end) ends the subscription, and the stream drops its reader, so this.
private final class WebSocketReadForwarder: SubscriberProtocol, @unchecked Sendable {
    // Thread-safety: immutable.
    let connection: WebSocketConnection

    init(connection: WebSocketConnection) { self.connection = connection }

    func sendNext(_ bytes: [UInt8]) { connection.receive(bytes) }
    func sendError(_ error: any Error) { connection.readsEnded() }
    func sendCompleted() { connection.readsEnded() }
    /// Nothing to keep: `subscribe(_:)` ends the subscription on a terminal event itself.
    func didSubscribe(with disposable: Disposable) {}
}

/// `send(_:)`'s subscriber to its source of messages: each message's frames go to the
/// transport's sender (`frames`), at once when it arrives on the loop's thread (an echo's
/// do), else hopping there; the source's end goes there too.
///
/// Why a subscriber of its own rather than `subscribe(next:error:completed:)`: the block
/// subscriber that makes serializes deliveries from any thread and calls the `next`
/// closure through its context, a retain and a release per message and ~60 instructions
/// under callgrind (Benchmarks/http/ws-instructions-per-message.sh), none of which this
/// needs: the frames' subscriber serializes what it is sent, and `subscribe(_:)` stops
/// delivering once the subscription is disposed. Nothing here is kept past the
/// subscription: the source drops its observer (and so this) when it ends or is disposed.
private final class WebSocketMessageForwarder: SubscriberProtocol, @unchecked Sendable {
    // Thread-safety: immutable.
    let connection: WebSocketConnection
    let frames: Subscriber<[UInt8]>
    /// The connection's loop, kept here: read as `connection.loop` it was retained and
    /// released around every `isCurrentThread` (callgrind).
    let loop: EventLoop

    init(connection: WebSocketConnection, frames: Subscriber<[UInt8]>) {
        self.connection = connection
        self.frames = frames
        loop = connection.loop
    }

    func sendNext(_ message: WebSocketMessage) {
        // An echo's messages arrive on the loop's thread: the frames go out at once there,
        // without the closure `onLoop` would allocate per message.
        if loop.isCurrentThread {
            connection.forward(message, to: frames)
        } else {
            let connection = connection, frames = frames
            connection.onLoop { connection.forward(message, to: frames) }
        }
    }

    func sendError(_ error: any Error) {
        let frames = frames
        connection.onLoop { frames.sendError(error) }
    }

    func sendCompleted() {
        let frames = frames
        connection.onLoop { frames.sendCompleted() }
    }

    /// Nothing to keep: `subscribe(_:)` ends the subscription on a terminal event itself.
    func didSubscribe(with disposable: Disposable) {}
}

/// `send(_:)`'s subscriber to its source of messages on a plain stream: each message's
/// frames are written through the stream's sender (``StreamDirectSender``) at once when it
/// arrives on the loop's thread (an echo's do), else after a hop there; the source's end
/// goes there too. Kept only by the source's subscription, as `WebSocketMessageForwarder`.
private final class WebSocketDirectForwarder: SubscriberProtocol, @unchecked Sendable {
    // Thread-safety: immutable; `sender` is used on the loop's thread only.
    let connection: WebSocketConnection
    let sender: StreamDirectSender
    /// The connection's loop, kept here (see `WebSocketMessageForwarder.loop`).
    let loop: EventLoop

    init(connection: WebSocketConnection, sender: StreamDirectSender) {
        self.connection = connection
        self.sender = sender
        loop = connection.loop
    }

    func sendNext(_ message: WebSocketMessage) {
        if loop.isCurrentThread {
            connection.forward(message, to: sender)
        } else {
            let connection = connection, sender = UncheckedSender(sender)
            connection.onLoop { connection.forward(message, to: sender.value) }
        }
    }

    func sendError(_ error: any Error) {
        let sender = UncheckedSender(sender)
        connection.onLoop { sender.value.fail(error) }
    }

    func sendCompleted() {
        let sender = UncheckedSender(sender)
        connection.onLoop { sender.value.complete() }
    }

    /// Nothing to keep: `subscribe(_:)` ends the subscription on a terminal event itself.
    func didSubscribe(with disposable: Disposable) {}
}

/// Carries the stream's sender to the loop's thread, where only it is used.
private struct UncheckedSender: @unchecked Sendable {
    let value: StreamDirectSender
    init(_ value: StreamDirectSender) { self.value = value }
}

/// Carries a non-Sendable closure to the loop's thread, where it runs alone.
final class WebSocketBox<Value>: @unchecked Sendable {
    // Thread-safety: written once at creation, read once on the loop's thread.
    let value: Value
    init(_ value: Value) { self.value = value }
}

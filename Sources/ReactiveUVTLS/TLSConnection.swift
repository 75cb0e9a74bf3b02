import Glibc
import ReactiveUV

/// A TLS connection over a TCP connection, from ``TLS/listen(host:port:certificate:key:clientCertificateAuthorities:options:handshakeTimeout:on:onListening:onHandshakeError:)``
/// or ``TLS/connect(host:port:serverName:trust:options:handshakeTimeout:on:)``: the same
/// `reads` / `lines` / `write` / `send` / `shutdown` surface as ``/ReactiveUV/StreamConnection``,
/// with plaintext in and out.
///
/// The handshake has finished when you get one. Its ``tcp`` connection carries the
/// records; ownership, threads and backpressure are the TCP connection's: it belongs to the
/// subscription that delivered it, every member may be used from any thread (OpenSSL work
/// hops to ``loop``'s thread), events arrive on ``loop``'s thread, and the write queue,
/// high-water mark and policy count *ciphertext* bytes (a record adds ~22–29 bytes to each
/// write).
public final class TLSConnection: @unchecked Sendable, CustomStringConvertible {
    // Thread-safety: `session` and `reading` are touched on `loop`'s thread only (every
    // entry point hops there with `onLoop`); the rest is immutable.

    /// The TCP connection carrying the records.
    public let tcp: TCPConnection
    /// The loop the connection lives on; its events arrive on this loop's thread.
    public var loop: EventLoop { tcp.loop }
    let session: TLSSession
    /// Whether a ``reads`` subscription is active (loop thread).
    private var reading = false
    /// The line splitting kept between ``lines`` subscriptions (loop thread; made by the
    /// first).
    private var lineSplitting: ConnectionLines?

    init(tcp: TCPConnection, session: TLSSession) {
        self.tcp = tcp
        self.session = session
    }

    /// The peer as errors name it: `127.0.0.1:7070`.
    public var description: String { tcp.description }

    /// The negotiated protocol version, `TLSv1.3` or `TLSv1.2`.
    public var protocolVersion: String { session.protocolVersion }
    /// The negotiated cipher suite, such as `TLS_AES_256_GCM_SHA384`.
    public var cipher: String { session.cipherName }
    /// The peer certificate's subject (`CN = localhost`), if the peer presented one.
    public var peerSubject: String? { session.peerSubject }

    /// Runs `body` on the loop's thread (at once when already there).
    private func onLoop(_ body: @escaping () -> Void) {
        if loop.isCurrentThread {
            body()
        } else {
            let box = UncheckedBox(body)
            loop.execute { box.value() }
        }
    }

    /// Writes what OpenSSL produced on its own (alerts, key updates) to the socket.
    func flushOutput() {
        if let output = session.takeOutput() { _ = tcp.write(output).subscribe() }
    }

    // MARK: - Reading

    /// The peer's plaintext, chunk by chunk, until it ends its side (close_notify, or the
    /// TCP connection's end of stream): completion.
    ///
    /// As ``/ReactiveUV/StreamConnection/reads``: subscribing reads (the TCP connection's
    /// `reads`, decrypted), disposing stops reading and leaves the connection open; one
    /// subscription at a time (`EBUSY` for another); a chunk holds everything decryptable
    /// from one TCP read. A record that fails its integrity check fails the subscription
    /// with a ``TLSError`` (`.protocolError`) and closes the connection. Events arrive on
    /// ``loop``'s thread.
    public var reads: Signal<[UInt8]> {
        Signal.create { [self] subscriber in
            let lifetime = CompoundDisposable()
            onLoop { [self] in
                if subscriber.isDisposed { return }
                if reading {
                    subscriber.sendError(UVError(code: EBUSY, operation: "TLS read (another subscription is reading)", target: description))
                    return
                }
                reading = true
                lifetime.add(Disposable { [self] in onLoop { self.reading = false } })
                // Records that arrived with the handshake's last bytes, or after an earlier
                // subscription stopped, are decrypted before reading more.
                let delivery = PlaintextDelivery(subscriber)
                if !deliverPlaintext(to: delivery) { return }
                lifetime.add(tcp.reads.subscribe(
                    next: { [self] chunk in
                        session.feed(chunk)
                        _ = deliverPlaintext(to: delivery)
                    },
                    error: { delivery.end(.error($0)) },
                    // The TCP stream ended without close_notify: a truncation attack is
                    // only a concern for length-less protocols; lines and byte streams end
                    // here as they would in plain TCP.
                    completed: { delivery.end(.completed) }))
            }
            return lifetime
        }
    }

    /// Decrypts what is buffered and sends it; `false` once the subscription ended.
    private func deliverPlaintext(to delivery: PlaintextDelivery) -> Bool {
        switch session.decryptAvailable() {
        case .data(let plaintext, let peerClosed):
            flushOutput()
            if !plaintext.isEmpty { delivery.next(plaintext) }
            if peerClosed {
                delivery.end(.completed)
                return false
            }
            return !delivery.subscriber.isDisposed
        case .failed(let error):
            flushOutput()
            delivery.end(.error(error))
            tcp.close()
            return false
        }
    }

    /// The peer's plaintext as UTF-8 lines, without their breaks (as
    /// ``/ReactiveUV/StreamConnection/lines``; at most 1 MiB a line). The lines a
    /// subscription did not take go to the next `lines` subscription.
    public var lines: Signal<String> { lines(maxLength: LineBuffer.defaultMaxLength) }

    /// The peer's plaintext as UTF-8 lines with a chosen length limit.
    ///
    /// - Parameter maxLength: the longest line accepted, in bytes.
    /// - Returns: the lines; fails with ``/ReactiveUV/LineError`` at a longer line.
    public func lines(maxLength: Int) -> Signal<String> {
        ConnectionLines.signal(loop: loop, target: description, maxLength: maxLength) { [self] in
            if let lines = lineSplitting { return lines }
            let lines = ConnectionLines(loop: loop, target: description, reads: { [unowned self] in reads })
            lineSplitting = lines
            return lines
        }
    }

    // MARK: - Writing

    /// Encrypts and writes `bytes` when subscribed; completes once the records are flushed
    /// to the kernel (as ``/ReactiveUV/StreamConnection/write(_:)-([UInt8])``, whose backpressure and
    /// errors apply to the ciphertext).
    ///
    /// - Parameter bytes: the plaintext.
    /// - Returns: a cold signal that sends no value and completes on ``loop``'s thread.
    public func write(_ bytes: [UInt8]) -> Signal<Void> {
        Signal.create { [self] subscriber in
            let lifetime = CompoundDisposable()
            onLoop { [self] in
                if subscriber.isDisposed { return }
                let ciphertext: [UInt8]
                do { ciphertext = try session.encrypt(bytes) } catch {
                    subscriber.sendError(error)
                    return
                }
                lifetime.add(tcp.write(ciphertext).subscribe(
                    error: { subscriber.sendError($0) }, completed: { subscriber.sendCompleted() }))
            }
            return lifetime
        }
    }

    /// Writes the UTF-8 bytes of `text` (see ``write(_:)-([UInt8])``).
    ///
    /// - Parameter text: the text; no line break is added.
    /// - Returns: a cold signal that completes when the records are flushed.
    public func write(_ text: String) -> Signal<Void> { write(Array(text.utf8)) }

    /// Encrypts and writes every chunk `source` sends, in order; completes when `source`
    /// has completed and everything is flushed (as ``/ReactiveUV/StreamConnection/send(_:)``:
    /// with `.pauseSource` the reads `source` subscribes to, such as another connection's
    /// or this one's ``reads``, pause while the ciphertext queue is above the mark).
    ///
    /// - Parameter source: the plaintext chunks.
    /// - Returns: a cold signal that sends no value and terminates on ``loop``'s thread.
    public func send(_ source: Signal<[UInt8]>) -> Signal<Void> {
        let encrypted = Signal<[UInt8]>.create { [self] subscriber in
            // The TCP connection's send subscribes this on the loop thread; a source that
            // sends from another thread is hopped over in order (OpenSSL state is the loop's).
            source.subscribe(
                next: { [self] chunk in
                    onLoop { [self] in
                        do { subscriber.sendNext(try session.encrypt(chunk)) } catch { subscriber.sendError(error) }
                    }
                },
                error: { [self] error in onLoop { subscriber.sendError(error) } },
                completed: { [self] in onLoop { subscriber.sendCompleted() } })
        }
        return tcp.send(encrypted)
    }

    /// Ends our direction: sends close_notify after the queued records, then half-closes
    /// the TCP connection (`uv_shutdown`). Completes when both are done; the peer's
    /// ``reads`` complete. Writes afterwards fail with `EPIPE`.
    ///
    /// - Returns: a cold signal that sends no value and terminates on ``loop``'s thread.
    public func shutdown() -> Signal<Void> {
        Signal.create { [self] subscriber in
            let lifetime = CompoundDisposable()
            onLoop { [self] in
                if subscriber.isDisposed { return }
                let alert = session.closeNotify() ?? []
                let write: Signal<Void> = alert.isEmpty ? .empty() : tcp.write(alert)
                lifetime.add(write.concat(tcp.shutdown()).subscribe(
                    error: { subscriber.sendError($0) }, completed: { subscriber.sendCompleted() }))
            }
            return lifetime
        }
    }

    /// Closes the connection at once (the TCP connection's `close()`): no close_notify.
    public func close() { tcp.close() }

    /// Whether the connection has started closing. Safe from any thread.
    public var isClosed: Bool { tcp.isClosed }

    /// Completes once the TCP connection is closed (fails with the error that closed it).
    public var closed: Signal<Void> { tcp.closed }
}

/// One `reads` subscription's deliveries (loop thread).
///
/// Why: the subscriber's own reaction to a chunk can end the TCP connection (a `take(1)`
/// downstream disposing the `connect` that owns it), and the connection then ends its reads
/// at once, on this very stack. Sending that end into the downstream operators while they
/// are still handling the chunk would re-enter them (`lines` is in the middle of splitting
/// it), so an end that arrives during a delivery is held and sent right after it.
final class PlaintextDelivery {
    let subscriber: Subscriber<[UInt8]>
    private var delivering = false
    private var heldEnd: Event<Void>?

    init(_ subscriber: Subscriber<[UInt8]>) { self.subscriber = subscriber }

    func next(_ chunk: [UInt8]) {
        delivering = true
        subscriber.sendNext(chunk)
        delivering = false
        if let end = heldEnd {
            heldEnd = nil
            self.end(end)
        }
    }

    func end(_ event: Event<Void>) {
        if delivering {
            if heldEnd == nil { heldEnd = event }
            return
        }
        switch event {
        case .error(let error): subscriber.sendError(error)
        default: subscriber.sendCompleted()
        }
    }
}

/// Carries a non-Sendable value to the loop thread that alone uses it (the threading
/// contract makes that safe).
struct UncheckedBox<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}

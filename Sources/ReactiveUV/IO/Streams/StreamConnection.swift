/// A connected byte stream on an event loop: what TCP connections and Unix domain socket
/// connections share (``TCPConnection``, ``UnixSocketConnection``).
///
/// **Ownership.** A connection belongs to the subscription that delivered it: disposing
/// the `connect` subscription, or the `listen` subscription that accepted it, closes it.
/// Keep that subscription for as long as you use the connection (compose with
/// `flattenMap`; `take(1)` or `first()` on a `connect` signal end the subscription, and
/// so the connection, right after delivering it). A connection also closes by itself when
/// both directions have ended (its reads reached end of stream and its ``shutdown()``
/// finished), when a read or write fails, when its write queue overflows
/// (``BackpressurePolicy``), and on ``close()``.
///
/// **Threads.** Every member may be used from any thread. The connection's handle lives on
/// ``loop``; subscriptions and calls made elsewhere hop there (``EventLoop/execute(_:)``),
/// and every event of ``reads``, ``lines`` and the write signals arrives on the loop's
/// thread.
///
/// **Signals are cold.** Nothing is read or written until the signal returned by ``reads``,
/// ``write(_:)-([UInt8])``, ``send(_:)`` or ``shutdown()`` is subscribed.
public class StreamConnection: @unchecked Sendable, CustomStringConvertible {
    // Thread-safety: immutable; `stream` confines its state to `loop`'s thread and keeps
    // its cross-thread counters in atomics.

    /// The core doing the libuv work.
    let stream: UVStream

    /// The loop the connection's handle lives on; its events arrive on this loop's thread.
    public let loop: EventLoop

    init(stream: UVStream) {
        self.stream = stream
        self.loop = stream.loop
    }

    /// The peer as errors name it: `127.0.0.1:7070`, `[::1]:7070`, a socket path.
    public var description: String { stream.target }

    // MARK: - Reading

    /// The bytes the peer sends, chunk by chunk, until it ends its side: completion.
    ///
    /// Subscribing starts reading (`uv_read_start`); disposing stops (`uv_read_stop`) and
    /// leaves the connection open, so the rest can be read by a later subscription. One
    /// subscription reads at a time: another one made while it is active fails with
    /// `EBUSY`. Chunks are as libuv reads them (up to 64 KiB), not messages: TCP has no
    /// message boundaries. A read error (`ECONNRESET`, ...) fails the subscription with a
    /// ``UVError`` and closes the connection. If the connection is closed without an error
    /// (``close()``, disposing its owner), the subscription completes. Once the end of
    /// stream was read, new subscriptions complete at once.
    ///
    /// Events arrive on ``loop``'s thread.
    ///
    /// `--[104,105]--[10]--|`
    public var reads: Signal<[UInt8]> { stream.readSignal() }

    /// The peer's bytes as UTF-8 lines, without their line breaks (`\n` or `\r\n`).
    ///
    /// ``reads`` split with ``LineBuffer``: a partial line is carried over to the next
    /// chunk; invalid UTF-8 is replaced with U+FFFD; a last line without a break is sent at
    /// the end of stream. A line longer than ``LineBuffer/defaultMaxLength`` (1 MiB) fails
    /// with ``LineError/lineTooLong(maxLength:)``; choose the limit with
    /// ``lines(maxLength:)``. Events arrive on ``loop``'s thread; disposing stops reading.
    ///
    /// The splitting is the connection's, not the subscription's: lines read from the
    /// socket and not yet delivered (the rest of a chunk after the line a subscriber took
    /// last, the partial line) go to the next `lines` subscription first, so
    /// `c.lines.take(1).concat(c.lines)` reads a header line and then every line after it.
    /// (A ``reads`` subscription after a `lines` one does not get them.) One subscription
    /// at a time: another one made while one is active fails with `EBUSY`; one made while
    /// the active one is being given a line takes over if that one is gone once the line is
    /// delivered (`take(n)` then `concat`), each line held to the limit of the subscription
    /// it goes to. A subscription disposed from another thread hands over every line split
    /// after it was disposed; a line being delivered at that very moment may be dropped
    /// by the disposed subscriber, as any value racing a dispose.
    public var lines: Signal<String> { lines(maxLength: LineBuffer.defaultMaxLength) }

    /// The peer's bytes as UTF-8 lines, with a chosen length limit.
    ///
    /// - Parameter maxLength: the longest line accepted, in bytes, without its break.
    /// - Returns: the lines; fails with ``LineError/lineTooLong(maxLength:)`` at the first
    ///   longer line (the subscription ends; the connection stays open).
    public func lines(maxLength: Int) -> Signal<String> {
        let stream = self.stream
        return ConnectionLines.signal(loop: loop, target: stream.target, maxLength: maxLength) { stream.connectionLines() }
    }

    // MARK: - Closing

    /// Closes the connection (`uv_close`), from any thread.
    ///
    /// Bytes still queued are discarded; the active ``reads`` subscription completes;
    /// pending writes fail with `ECANCELED`. Use ``shutdown()`` first for an orderly end.
    /// Calling it again does nothing.
    public func close() {
        let stream = self.stream
        stream.loop.perform { stream.close() }
    }

    /// Whether the connection has started closing (for any reason). Safe from any thread.
    public var isClosed: Bool { stream.isClosed }

    /// Completes once the connection's handle is closed and its memory freed; fails with
    /// the error that closed it, if an error did. Sends no value.
    ///
    /// Events arrive on ``loop``'s thread. Disposing only stops the notification.
    public var closed: Signal<Void> {
        let stream = self.stream
        return AnonymousSignal { observer, lifetime in
            stream.loop.start(observer, lifetime, operation: "closed", target: stream.target) {
                stream.whenClosed { reason in
                    guard !lifetime.isDisposed else { return }
                    if let reason { observer(.error(reason)) } else { observer(.completed) }
                    lifetime.dispose()
                }
            }
        }
    }

    // MARK: - Backpressure

    /// Bytes that may wait in the write queue before ``backpressure`` acts. At least 1;
    /// default 1 MiB. Settable from any thread; applies to the next write.
    public var highWaterMark: Int {
        get { stream.highWaterMark.load() }
        set { stream.highWaterMark.store(max(1, newValue)) }
    }

    /// What happens to writes while the queue is at or above ``highWaterMark``. Settable
    /// from any thread; applies to the next write.
    public var backpressure: BackpressurePolicy {
        get { stream.policy }
        set { stream.policyRaw.store(newValue.rawValue) }
    }

    /// Writes refused by ``BackpressurePolicy/dropAndCount``. Safe from any thread.
    public var droppedWrites: Int { stream.droppedWrites.load() }

    /// Bytes of the writes refused by ``BackpressurePolicy/dropAndCount``.
    public var droppedBytes: Int { stream.droppedBytes.load() }

    /// Bytes queued and not yet taken by the kernel, as of the last write or write
    /// completion. Safe from any thread (a snapshot).
    public var writeQueueSize: Int { stream.writeQueueSnapshot.load() }
}

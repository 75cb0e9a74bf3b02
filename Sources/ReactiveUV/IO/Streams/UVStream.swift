import CLibUV
import Glibc

/// The shared core of every libuv stream ReactiveUV reads or writes: TCP connections,
/// Unix domain sockets, standard input and a subprocess's pipes.
///
/// One object per handle (`uv_tcp_t`, `uv_pipe_t` or `uv_tty_t`). It owns:
/// - the handle's heap memory, freed in the close callback, never earlier;
/// - nothing for reading: every `alloc_cb` hands libuv the loop thread's one read buffer
///   (``ReadScratch``; each read's bytes are copied out into the `[UInt8]` that is sent, so
///   the buffer is free again when `read_cb` returns; an idle connection holds no read
///   memory). The array a chunk was sent in goes back to the thread's scratch and the next
///   read refills it in place unless a subscriber kept it (copy-on-write);
/// - the write requests in flight (each one heap block: `uv_write_t` followed by the bytes
///   it writes, freed in its write callback).
///
/// The handle is held by a ``UVHandle`` (`uv`), which keeps this object alive until the close
/// callback, so libuv can always call back into a live object, and closes it (silently) when
/// the loop closes.
///
/// Reading, writing and the backpressure bookkeeping live in `UVStream+Reading.swift` and
/// `UVStream+Writing.swift`.
final class UVStream: @unchecked Sendable {
    // Thread-safety: every stored `var` belongs to `loop`'s thread. The atomics (`closedFlag`,
    // the limits and the counters) may be read or set from any thread. The fields used on
    // every read and write are `@exclusivity(unchecked)`: confinement to one thread already
    // rules out overlapping access, and the dynamic check would cost more than the field
    // access on the per-chunk path.

    /// Where the handle is in its life (the ``UVHandle``'s state).
    typealias State = UVHandleState

    let loop: EventLoop
    /// The handle's owner: memory, `data`, close, loop shutdown.
    let uv: UVHandle<uv_stream_t>
    /// `UV_TCP`, `UV_NAMED_PIPE` or `UV_TTY`.
    let type: uv_handle_type
    /// What errors name as their target: `127.0.0.1:7070`, a socket path, `stdin`.
    var target: String {
        didSet { uv.target = target }
    }

    /// Why the stream closed: `nil` for a close we asked for or a clean end.
    var closeReason: (any Error)?
    /// Set when the loop shuts down: deliver nothing more to user code.
    @exclusivity(unchecked) var silent = false
    /// Run (in order) by the close callback with `closeReason`.
    var closeHandlers: [((any Error)?) -> Void] = []
    /// 1 once closing started: ``isClosed`` from any thread.
    let closedFlag: UnsafeAtomicInt

    // MARK: Reading (loop thread)
    /// The one subscription reading the stream, if any.
    ///
    /// Replaced or cleared during a delivery (the subscriber disposed itself, closed the
    /// stream, or a new subscription started from inside the old one's sink), the old
    /// reader is parked in `retiredReaders` until the delivery returned: `didRead` calls
    /// the reader through an unretained reference, and this field's +1 is what keeps it
    /// alive (see `didRead`).
    @exclusivity(unchecked) var reader: StreamReader? {
        didSet {
            if deliveryDepth != 0, let oldValue, oldValue !== reader { retiredReaders.append(oldValue) }
        }
    }
    /// How many `didRead` deliveries are under way on this stream (0 or 1: `uv_run` is not
    /// re-entrant, so a second read of the stream cannot start inside a subscriber).
    @exclusivity(unchecked) var deliveryDepth = 0
    /// Readers cleared from `reader` during a delivery, released when it returns.
    @exclusivity(unchecked) var retiredReaders: [StreamReader] = []
    /// Whether `uv_read_start` is in effect.
    @exclusivity(unchecked) var isReading = false
    /// The loop thread's read buffer and spare chunk (``ReadScratch``), set when reading
    /// first starts (on the loop thread, so always that thread's).
    @exclusivity(unchecked) var readScratch: ReadScratch?
    /// Whether the peer's end of stream was read.
    @exclusivity(unchecked) var readEOF = false
    /// The line splitting kept between `lines` subscriptions (``connectionLines()``).
    var lineSplitting: ConnectionLines?

    // MARK: Writing (loop thread)
    /// Where the write side's shutdown is.
    @exclusivity(unchecked) var shutdownState = ShutdownState.none
    /// Waiting for the shutdown request to finish.
    var shutdownWaiters: [((any Error)?) -> Void] = []
    /// `uv_write` requests whose callback has not run.
    @exclusivity(unchecked) var writeRequestsInFlight = 0
    /// Run once when the write queue falls to the low-water mark (or the stream closes).
    var drainListeners: [() -> Void] = []
    /// The largest write queue seen, in bytes (tests check the bound).
    @exclusivity(unchecked) var peakWriteQueueSize = 0

    // MARK: Limits and counters (atomic)
    // Every atomic cell (here and `closedFlag`) is allocated by `init` after the handle,
    // the one step that can throw: a failed init runs no `deinit`, so a cell allocated
    // before the throw (as a property initializer would be) was never freed.
    /// Bytes queued and not flushed above which ``policy`` acts.
    let highWaterMark: UnsafeAtomicInt
    /// The ``BackpressurePolicy`` as its raw value.
    let policyRaw: UnsafeAtomicInt
    /// Writes refused by `.dropAndCount`.
    let droppedWrites: UnsafeAtomicInt
    /// Bytes of those writes.
    let droppedBytes: UnsafeAtomicInt
    /// `uv_stream_get_write_queue_size` as of the last write or write callback.
    let writeQueueSnapshot: UnsafeAtomicInt

    /// The read buffer's size: what libuv suggests for sockets.
    static let readBufferSize = 64 * 1024

    /// Creates the handle on `loop` (loop thread).
    ///
    /// - Parameters:
    ///   - initialize: calls the type's `uv_*_init` on the given memory; a negative result
    ///     means the memory never became a handle and is freed at once.
    /// - Throws: ``UVError`` from `initialize`, with `operation` and `target`.
    init(
        loop: EventLoop, type: uv_handle_type, target: String, operation: String,
        limits: WriteLimits = WriteLimits(),
        initialize: (UnsafeMutableRawPointer) -> Int32
    ) throws {
        self.uv = try UVHandle(loop: loop, type: type, operation: operation, target: target) {
            initialize(UnsafeMutableRawPointer($0))
        }
        self.loop = loop
        self.type = type
        self.target = target
        self.highWaterMark = UnsafeAtomicInt(max(1, limits.highWaterMark))
        self.policyRaw = UnsafeAtomicInt(limits.policy.rawValue)
        self.closedFlag = UnsafeAtomicInt(0)
        self.droppedWrites = UnsafeAtomicInt(0)
        self.droppedBytes = UnsafeAtomicInt(0)
        self.writeQueueSnapshot = UnsafeAtomicInt(0)
        uv.owner = self
        uv.onLoopShutdown = { [unowned self] in
            // The loop is closing: close without telling anyone.
            silent = true
            close()
        }
    }

    deinit {
        closedFlag.destroy()
        highWaterMark.destroy()
        policyRaw.destroy()
        droppedWrites.destroy()
        droppedBytes.destroy()
        writeQueueSnapshot.destroy()
    }

    /// Where the handle is in its life.
    var state: State {
        @inline(__always) get { uv.state }
    }
    /// The handle's memory (valid until the close callback).
    var handle: UnsafeMutableRawPointer { uv.memory }
    /// The handle as a stream.
    var uvStream: UnsafeMutablePointer<uv_stream_t> { uv.pointer }
    /// The handle as a handle.
    var uvHandle: UnsafeMutablePointer<uv_handle_t> { uv.uvHandle }

    /// Whether closing has started. Safe from any thread.
    var isClosed: Bool { closedFlag.load() != 0 }

    /// The stream behind a handle's `data` (callbacks only: valid until the close callback).
    @inline(__always)
    static func from<T>(_ handle: UnsafeMutablePointer<T>) -> UVStream {
        UVHandleCore.owner(of: handle, as: UVStream.self)
    }

    // MARK: - Closing

    /// Closes the handle (loop thread); idempotent.
    ///
    /// The active reader gets `reason` as its error, or completes when `reason` is `nil`.
    /// Write and shutdown requests in flight are finished by libuv with `ECANCELED` before
    /// the close callback (their waiters get `reason`, or `ECANCELED` when there is none).
    /// The close callback frees the memory, unregisters from the loop and runs the close
    /// handlers.
    ///
    /// - Parameters:
    ///   - reason: the error that ends the stream, or `nil` for an orderly close.
    ///   - reset: for TCP, close with `RST` (`uv_tcp_close_reset`, `SO_LINGER` 0) instead of FIN.
    func close(_ reason: (any Error)? = nil, reset: Bool = false) {
        guard state == .open else { return }
        closeReason = reason
        closedFlag.store(1)
        isReading = false
        uv.close(reset: reset && shutdownState == .none) { [self] in didClose() }
        if let reader {
            self.reader = nil
            if !silent && !reader.lifetime.isDisposed {
                if let reason { reader.sink(.error(reason)) } else { reader.sink(.completed) }
            }
            reader.lifetime.dispose()
        }
        let listeners = drainListeners
        drainListeners = []
        for listener in listeners { listener() }
    }

    /// Run by the handle's close callback (after every request callback): runs the close
    /// handlers.
    private func didClose() {
        writeQueueSnapshot.store(0)
        let handlers = closeHandlers
        closeHandlers = []
        if !silent {
            for handler in handlers { handler(closeReason) }
        }
    }

    /// Calls `handler` on the loop thread once the handle is closed (at once if it is).
    func whenClosed(_ handler: @escaping ((any Error)?) -> Void) {
        if state == .closed {
            handler(closeReason)
        } else {
            closeHandlers.append(handler)
        }
    }

    /// The error for an operation on a stream that is closing or closed.
    func closedError(_ operation: String) -> any Error {
        closeReason ?? UVError(code: UV_ENOTCONN.rawValue, operation: "\(operation) (already closed)", target: target)
    }
}

/// How much a stream may queue for a slow peer, and what happens past that.
struct WriteLimits: Sendable {
    var highWaterMark: Int = WriteLimits.defaultHighWaterMark
    var policy: BackpressurePolicy = .pauseSource

    /// 1 MiB.
    static var defaultHighWaterMark: Int { 1 << 20 }
}

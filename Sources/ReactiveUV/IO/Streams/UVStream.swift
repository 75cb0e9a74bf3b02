import CLibUV
import Glibc

/// The shared core of every libuv stream ReactiveUV reads or writes: TCP connections,
/// Unix domain sockets, standard input and a subprocess's pipes.
///
/// One object per handle (`uv_tcp_t`, `uv_pipe_t` or `uv_tty_t`). It owns:
/// - the handle's heap memory, freed in the close callback, never earlier;
/// - one read buffer, allocated on the first read and handed to libuv again by every
///   `alloc_cb` (each read's bytes are copied out into the `[UInt8]` that is sent, so the
///   buffer is free again when `read_cb` returns);
/// - the write requests in flight (each one heap block: `uv_write_t` followed by the bytes
///   it writes, freed in its write callback).
///
/// The handle's `data` holds a +1 reference to this object from `init` until the close
/// callback, so libuv can always call back into a live object. It registers with its loop
/// as a ``LoopResource``, so ``EventLoop/close()`` can close it.
///
/// Reading, writing and the backpressure bookkeeping live in `UVStream+Reading.swift` and
/// `UVStream+Writing.swift`.
final class UVStream: LoopResource, @unchecked Sendable {
    // Thread-safety: every stored `var` belongs to `loop`'s thread. The atomics (`closedFlag`,
    // the limits and the counters) may be read or set from any thread. The fields used on
    // every read and write are `@exclusivity(unchecked)`: confinement to one thread already
    // rules out overlapping access, and the dynamic check would cost more than the field
    // access on the per-chunk path.

    /// Where the handle is in its life.
    enum State {
        /// Usable.
        case open
        /// `uv_close` was called; the close callback has not run yet.
        case closing
        /// The close callback ran; `handle` is freed.
        case closed
    }

    let loop: EventLoop
    /// The handle's memory (`uv_handle_size(type)` bytes).
    let handle: UnsafeMutableRawPointer
    /// `UV_TCP`, `UV_NAMED_PIPE` or `UV_TTY`.
    let type: uv_handle_type
    /// What errors name as their target: `127.0.0.1:7070`, a socket path, `stdin`.
    var target: String

    @exclusivity(unchecked) var state = State.open
    /// Why the stream closed: `nil` for a close we asked for or a clean end.
    var closeReason: (any Error)?
    /// Set when the loop shuts down: deliver nothing more to user code.
    @exclusivity(unchecked) var silent = false
    /// Run (in order) by the close callback with `closeReason`.
    var closeHandlers: [((any Error)?) -> Void] = []
    /// 1 once closing started: ``isClosed`` from any thread.
    let closedFlag = UnsafeAtomicInt(0)

    // MARK: Reading (loop thread)
    /// The one subscription reading the stream, if any.
    @exclusivity(unchecked) var reader: StreamReader?
    /// Whether `uv_read_start` is in effect.
    @exclusivity(unchecked) var isReading = false
    /// Whether the peer's end of stream was read.
    @exclusivity(unchecked) var readEOF = false
    /// Reused by every `alloc_cb` (see the type's discussion).
    @exclusivity(unchecked) var readBuffer: UnsafeMutableRawPointer?

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
    /// Bytes queued and not flushed above which ``policy`` acts.
    let highWaterMark: UnsafeAtomicInt
    /// The ``BackpressurePolicy`` as its raw value.
    let policyRaw: UnsafeAtomicInt
    /// Writes refused by `.dropAndCount`.
    let droppedWrites = UnsafeAtomicInt(0)
    /// Bytes of those writes.
    let droppedBytes = UnsafeAtomicInt(0)
    /// `uv_stream_get_write_queue_size` as of the last write or write callback.
    let writeQueueSnapshot = UnsafeAtomicInt(0)

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
        let memory = allocateHandle(type)
        let rc = initialize(memory)
        if rc < 0 {
            memory.deallocate()
            throw UVError(code: rc, operation: operation, target: target)
        }
        self.loop = loop
        self.handle = memory
        self.type = type
        self.target = target
        self.highWaterMark = UnsafeAtomicInt(max(1, limits.highWaterMark))
        self.policyRaw = UnsafeAtomicInt(limits.policy.rawValue)
        uvHandle.pointee.data = Unmanaged.passRetained(self).toOpaque()
        loop.register(self)
    }

    deinit {
        closedFlag.destroy()
        highWaterMark.destroy()
        policyRaw.destroy()
        droppedWrites.destroy()
        droppedBytes.destroy()
        writeQueueSnapshot.destroy()
    }

    /// The handle as a stream.
    var uvStream: UnsafeMutablePointer<uv_stream_t> { uvCast(handle) }
    /// The handle as a handle.
    var uvHandle: UnsafeMutablePointer<uv_handle_t> { uvCast(handle) }

    /// Whether closing has started. Safe from any thread.
    var isClosed: Bool { closedFlag.load() != 0 }

    /// The stream behind a handle's `data` (callbacks only: valid until the close callback).
    @inline(__always)
    static func from(_ handle: UnsafeMutablePointer<uv_handle_t>) -> UVStream {
        Unmanaged<UVStream>.fromOpaque(handle.pointee.data).takeUnretainedValue()
    }

    /// The stream behind a stream pointer (see ``from(_:)``).
    @inline(__always)
    static func from(_ stream: UnsafeMutablePointer<uv_stream_t>) -> UVStream {
        Unmanaged<UVStream>.fromOpaque(stream.pointee.data).takeUnretainedValue()
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
        state = .closing
        closeReason = reason
        closedFlag.store(1)
        isReading = false
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
        if reset && type == UV_TCP && shutdownState == .none
            && uv_tcp_close_reset(uvCast(handle), UVStream.closeCallback) == 0
        {
            return
        }
        uv_close(uvHandle, UVStream.closeCallback)
    }

    /// Frees everything and lets go of the object (runs after every request callback).
    private static let closeCallback: uv_close_cb = { handle in
        guard let handle else { return }
        let stream = Unmanaged<UVStream>.fromOpaque(handle.pointee.data).takeRetainedValue()
        stream.state = .closed
        if let buffer = stream.readBuffer {
            stream.readBuffer = nil
            buffer.deallocate()
        }
        stream.handle.deallocate()
        stream.writeQueueSnapshot.store(0)
        stream.loop.unregister(stream)
        let handlers = stream.closeHandlers
        stream.closeHandlers = []
        if !stream.silent {
            for handler in handlers { handler(stream.closeReason) }
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

    /// ``LoopResource``: the loop is closing; close without telling anyone.
    func closeForLoopShutdown() {
        silent = true
        close()
    }
}

/// How much a stream may queue for a slow peer, and what happens past that.
struct WriteLimits: Sendable {
    var highWaterMark: Int = WriteLimits.defaultHighWaterMark
    var policy: BackpressurePolicy = .pauseSource

    /// 1 MiB.
    static var defaultHighWaterMark: Int { 1 << 20 }
}

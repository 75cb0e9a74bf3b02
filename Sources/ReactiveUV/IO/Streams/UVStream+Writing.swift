import CLibUV
import CSystemShims
import Glibc

/// Something waiting for one queued write to finish: a `write` subscription or a `send`.
/// `writeFinished` runs on the loop thread, from the write callback.
package class WriteWaiter {
    func writeFinished(_ error: (any Error)?) {}
}

/// Where a stream's write side is.
enum ShutdownState {
    /// Writable.
    case none
    /// `uv_shutdown` requested; waiting for queued writes to flush.
    case pending
    /// Our side sent its FIN (end of stream).
    case done
}

/// What happened to bytes offered to ``UVStream/write(_:_:)``.
enum WriteOutcome {
    /// Written to the kernel at once (`uv_try_write`): flushed, nothing queued.
    case done
    /// Queued with `uv_write`; the waiter hears about it in the write callback.
    case queued
    /// Refused by `.dropAndCount` (counted).
    case dropped
    /// Refused: the stream is closed or shut down, or the write failed (the stream is then
    /// closed with the error).
    case failed(any Error)
}

extension UVStream {
    /// Bytes queued in libuv and not yet written to the kernel (loop thread).
    var writeQueueSize: Int { state == .open ? uv_stream_get_write_queue_size(uvStream) : 0 }

    /// The current policy.
    var policy: BackpressurePolicy { BackpressurePolicy(rawValue: policyRaw.load()) ?? .pauseSource }

    /// Offers `bytes` to the stream (loop thread).
    ///
    /// The policy is applied against the bytes queued *before* this write, so one write is
    /// never split or partly dropped, and the queue never holds more than the limit plus
    /// the last accepted write. When nothing is queued the bytes go straight to the kernel
    /// with `uv_try_write` (no request, no copy); what the kernel does not take is copied
    /// into one heap block with its `uv_write_t` and queued.
    ///
    /// - Parameters:
    ///   - bytes: valid for the duration of the call only.
    ///   - waiter: told when a queued write finishes (not called for the other outcomes).
    func write(_ bytes: UnsafeRawBufferPointer, _ waiter: WriteWaiter?) -> WriteOutcome {
        guard state == .open else { return .failed(closedError("write")) }
        if shutdownState != .none {
            return .failed(UVError(code: UV_EPIPE.rawValue, operation: "write after shutdown", target: target))
        }
        // libuv's public `write_queue_size` field, read in place (what
        // `uv_stream_get_write_queue_size` returns, without the call).
        let queued = uvStream.pointee.write_queue_size
        // With nothing queued no policy can refuse the write (the high-water mark is at
        // least 1): the policy and the mark, two atomic loads and a conversion, are read
        // only when something is queued. That is nearly never on a request/response or
        // echo path, where each write goes to the kernel at once.
        if queued > 0 {
            let limit = highWaterMark.load()
            switch policy {
            case .dropAndCount where queued >= limit:
                droppedWrites.fetchAdd(1)
                droppedBytes.fetchAdd(bytes.count)
                return .dropped
            case .disconnect where queued >= limit:
                return .failed(overflow(queued: queued, limit: limit))
            case .pauseSource where queued >= limit * UVStream.pauseSourceOverflowFactor:
                return .failed(overflow(queued: queued, limit: limit * UVStream.pauseSourceOverflowFactor))
            default:
                break
            }
        }
        guard let base = bytes.baseAddress, bytes.count > 0 else { return .done }

        var offset = 0
        if queued == 0 {
            // uv_buf_t directly: uv_buf_init takes a 32-bit length, which a >4 GiB write
            // would overflow.
            var buffer = uv_buf_t(
                base: UnsafeMutablePointer(mutating: base.assumingMemoryBound(to: CChar.self)), len: bytes.count)
            let written = Int(uv_try_write(uvStream, &buffer, 1))
            if written == bytes.count { return .done }
            if written >= 0 {
                offset = written
            } else if written != Int(UV_EAGAIN.rawValue) {
                let error = uvError(written, "write", target)
                close(error)
                return .failed(error)
            }
        }

        // The bytes the kernel did not take are copied behind the request, in its memory;
        // the request holds the waiter until the write callback.
        let rest = bytes.count - offset
        let request = UVRequest<uv_write_t>(UV_WRITE, owner: waiter, extraBytes: rest)
        request.extra.copyMemory(from: base + offset, byteCount: rest)
        var buffer = uv_buf_t(base: request.extra.assumingMemoryBound(to: CChar.self), len: rest)
        do {
            try request.submit("write", target, on: loop) { uv_write($0, uvStream, &buffer, 1, UVStream.writeCallback) }
        } catch {
            close(error)
            return .failed(error)
        }
        writeRequestsInFlight += 1
        noteWriteQueueSize()
        return .queued
    }

    /// Past this multiple of the high-water mark, `.pauseSource` gives up on a source that
    /// did not pause (one that cannot, or bytes already in flight) and disconnects.
    static let pauseSourceOverflowFactor = 4

    /// The error for a queue past its limit; closes the stream with it.
    private func overflow(queued: Int, limit: Int) -> any Error {
        let error = WriteQueueFullError(queuedBytes: queued, limit: limit, policy: policy, target: target)
        close(error)
        return error
    }

    /// Frees the request, then tells its waiter and the stream.
    private static let writeCallback: uv_write_cb = { request, status in
        guard let request else { return }
        let stream = UVStream.from(request.pointee.handle!)
        let finished = UVRequest<uv_write_t>.finish(request)
        let waiter = finished.owner.map { unsafeDowncast($0, to: WriteWaiter.self) }
        stream.writeRequestFinished(status, waiter)
    }

    private func writeRequestFinished(_ status: Int32, _ waiter: WriteWaiter?) {
        writeRequestsInFlight -= 1
        var error: (any Error)?
        if status == UV_ECANCELED.rawValue {
            // The stream was closed with the write still queued.
            error = closeReason ?? uvError(status, "write (connection closed)", target)
        } else if status < 0 {
            let failure = uvError(status, "write", target)
            close(failure)
            error = failure
        }
        if !silent { waiter?.writeFinished(error) }
        noteWriteQueueSize()
        notifyDrainIfLow()
    }

    /// Records the queue size for other threads and the peak for tests.
    func noteWriteQueueSize() {
        let size = writeQueueSize
        writeQueueSnapshot.store(size, csys_relaxed)
        if size > peakWriteQueueSize { peakWriteQueueSize = size }
    }

    /// Calls `listener` once the queue is at or below half the high-water mark (or the
    /// stream closes). Loop thread.
    func whenDrained(_ listener: @escaping () -> Void) {
        if state != .open || writeQueueSize <= highWaterMark.load() / 2 {
            listener()
        } else {
            drainListeners.append(listener)
        }
    }

    private func notifyDrainIfLow() {
        guard !drainListeners.isEmpty, writeQueueSize <= highWaterMark.load() / 2 else { return }
        let listeners = drainListeners
        drainListeners = []
        for listener in listeners { listener() }
    }

    // MARK: - Shutdown

    /// Ends our side of the stream after the queued writes (`uv_shutdown`); `done` runs on
    /// the loop thread when the FIN went out, or with the error. When the peer's side has
    /// ended too, the stream closes.
    func shutdown(_ done: @escaping ((any Error)?) -> Void) {
        guard state == .open else {
            done(closedError("shutdown"))
            return
        }
        switch shutdownState {
        case .done:
            done(nil)
        case .pending:
            shutdownWaiters.append(done)
        case .none:
            let request = UVRequest<uv_shutdown_t>(UV_SHUTDOWN)
            do {
                try request.submit("shutdown", target, on: loop) {
                    uv_shutdown($0, uvStream) { request, status in
                        guard let request else { return }
                        let stream = UVStream.from(request.pointee.handle!)
                        _ = UVRequest<uv_shutdown_t>.finish(request)
                        stream.shutdownFinished(status)
                    }
                }
            } catch {
                done(error)
                return
            }
            shutdownState = .pending
            shutdownWaiters = [done]
        }
    }

    private func shutdownFinished(_ status: Int32) {
        let waiters = shutdownWaiters
        shutdownWaiters = []
        var error: (any Error)?
        if status == UV_ECANCELED.rawValue {
            error = closeReason ?? uvError(status, "shutdown (connection closed)", target)
        } else if status < 0 {
            let failure = uvError(status, "shutdown", target)
            close(failure)
            error = failure
        } else {
            shutdownState = .done
        }
        if !silent {
            for waiter in waiters { waiter(error) }
        }
        if error == nil && readEOF { close() }
    }
}

/// A read a writer may pause (``FlowControl``): a stream's reads, a file's.
protocol PausableSource: AnyObject, Sendable {
    /// Pauses or resumes the read, from any thread (it hops to its loop).
    func setPaused(_ paused: Bool)
}

/// Collects the read subscriptions made while a writer subscribes to its source, so the
/// writer can pause them when its peer falls behind (``BackpressurePolicy/pauseSource``).
///
/// Why a thread-local: subscription is synchronous, so everything a source subscribes to
/// while `send` attaches it (through `map`, `filter`, `lines`... any chain that subscribes
/// on the same thread) happens inside `collect`. Reads subscribed later or elsewhere
/// (`subscribeOn`, a `flattenMap` inner that arrives later) are not found and so are not
/// paused; the write queue's hard limit still bounds memory.
final class FlowControl {
    // Thread-safety: `sources` is filled on the subscribing thread inside `collect` and
    // read afterwards on the writer's loop thread, which is the same thread (`send`
    // subscribes to its source on its loop).
    private(set) var sources: [any PausableSource] = []

    func add(_ source: any PausableSource) { sources.append(source) }

    /// Forgets the collected reads (the writer is done with them).
    func removeAll() { sources.removeAll() }

    /// The collector active on this thread, if any.
    static var current: FlowControl? {
        guard let p = pthread_getspecific(key) else { return nil }
        return Unmanaged<FlowControl>.fromOpaque(p).takeUnretainedValue()
    }

    /// Runs `body` with `self` as the thread's collector (nesting restores the outer one).
    func collect(_ body: () -> Void) {
        let previous = pthread_getspecific(FlowControl.key)
        pthread_setspecific(FlowControl.key, Unmanaged.passUnretained(self).toOpaque())
        body()
        pthread_setspecific(FlowControl.key, previous)
    }

    /// Pauses or resumes every collected read.
    func setPaused(_ paused: Bool) {
        for source in sources { source.setPaused(paused) }
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()
}

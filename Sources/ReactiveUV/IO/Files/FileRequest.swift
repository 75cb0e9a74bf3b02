import CLibUV
import CSystemShims
import Glibc

/// One reusable libuv file-system request (`uv_fs_t`) with a Swift completion: the only
/// place the file signals talk to libuv's fs API, so submission, cleanup and error codes
/// are handled the same way everywhere.
///
/// Requests run on libuv's thread pool and complete on the loop's thread. One request is
/// in flight at a time; its owner (a ``FileReader`` or ``TailFollower``) chains the next
/// one from the completion. The `uv_fs_t` is a ``UVRequest``: heap memory that never moves,
/// holding itself (and, through its owner, this object) while an operation is in flight, so
/// neither can go away under libuv.
///
/// Besides the fs requests there is one read of another kind,
/// ``read(_:count:at:after:splittingAtLastLineBreak:_:)``: a `pread` into a new array, run with `uv_queue_work` on
/// the same pool (its own `uv_work_t`, same one-at-a-time rule and retain).
///
/// Thread-safety: loop-thread confined, like the libuv calls it makes; the only state a
/// pool thread touches is an ``ArrayRead`` job, handed over through libuv's work queue.
final class FileRequest {
    /// The loop the requests run on.
    let loop: EventLoop
    /// The libuv request, reused for every operation after `uv_fs_req_cleanup` (its
    /// ``UVRequest/owner`` is this object while an operation is in flight).
    private let request = UVRequest<uv_fs_t>(UV_FS)
    /// The completion of the request in flight.
    private var completion: ((Int) -> Void)?
    /// The work request of array reads, made at the first one (its owner is the job in
    /// flight).
    private var work: UVRequest<uv_work_t>?
    /// Whether the request in flight is an array read (on `work`), not an fs request.
    private var workInFlight = false
    /// Whether the last request was a stat, so its `statbuf` is worth keeping.
    private var wantsStat = false
    /// Whether a request is in flight (libuv owes us a callback).
    private(set) var inFlight = false
    /// The result of the last `stat`/`fstat`, valid in its completion.
    private(set) var lastStat = uv_stat_t()

    init(loop: EventLoop) {
        self.loop = loop
    }

    /// `uv_fs_open(path, flags)`; `done` gets the file descriptor or a negative code.
    func open(_ path: String, flags: Int32, _ done: @escaping (Int) -> Void) {
        submit(stat: false, done) { loop, req, cb in
            path.withCString { uv_fs_open(loop, req, $0, flags, 0, cb) }
        }
    }

    /// `uv_fs_read` of at most `buffer.count` bytes at `offset`; `done` gets the byte
    /// count (0 at end of file) or a negative code. `buffer` must stay valid until then.
    func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64, _ done: @escaping (Int) -> Void) {
        // A uv_buf_t length is 32 bits; our buffers are far smaller, clamp anyway.
        let length = UInt32(clamping: buffer.count)
        var buf = uv_buf_init(buffer.baseAddress?.assumingMemoryBound(to: CChar.self), length)
        // libuv copies the uv_buf_t array into the request, so `buf` may live on the stack.
        submit(stat: false, done) { loop, req, cb in uv_fs_read(loop, req, fd, &buf, 1, offset, cb) }
    }

    /// `pread` of at most `count` bytes at `offset` into a **new array** that starts with
    /// `prefix`, run on libuv's thread pool (`uv_queue_work`); `done` gets an
    /// ``ArrayReadResult``: the byte count read (0 at end of file) or a negative libuv
    /// code, and the array — `prefix` followed by the bytes read (just `prefix` on an error
    /// or a cancel).
    ///
    /// With `splittingAtLastLineBreak`, the pool thread also cuts the array just after the
    /// last `\n` among the bytes read, and what follows it (an unfinished line) comes back
    /// apart, in ``ArrayReadResult/partialLine``: the array then holds whole lines only and
    /// can be sent on as it is, never touched again by the loop thread.
    ///
    /// Why not `uv_fs_read`: it reads into memory the caller keeps, and a chunk that is
    /// then sent on as an array (`File.tailChunks`) must be copied into one on the loop
    /// thread: for a 256 KiB chunk that copy and its allocation cost about as much as all
    /// the rest of the loop thread's work. Here the pool thread makes the array and `pread`s
    /// straight into its storage, and the array itself is what the owner sends.
    ///
    /// - Parameters:
    ///   - count: the most bytes to read; at least 1.
    ///   - prefix: bytes the array starts with (a partial line carried over).
    func read(
        _ fd: Int32, count: Int, at offset: Int64, after prefix: [UInt8], splittingAtLastLineBreak: Bool = false,
        _ done: @escaping (ArrayReadResult) -> Void
    ) {
        guard !inFlight else {
            assertionFailure("FileRequest: a request is already in flight")
            done(ArrayReadResult(count: Int(UV_EBUSY.rawValue), bytes: prefix, partialLine: nil))
            return
        }
        let work = self.work ?? {
            let made = UVRequest<uv_work_t>(UV_WORK)
            self.work = made
            return made
        }()
        let job = ArrayRead(
            owner: self, fd: fd, count: max(1, count), offset: offset, prefix: prefix,
            split: splittingAtLastLineBreak, done: done)
        inFlight = true
        workInFlight = true
        // The job holds us until the after-work callback.
        work.owner = job
        do {
            try work.submit("read", on: loop) {
                uv_queue_work(loop.uvLoop, $0, FileRequest.workCallback, FileRequest.afterWorkCallback)
            }
        } catch {
            inFlight = false
            workInFlight = false
            work.owner = nil
            done(ArrayReadResult(count: Int((error as? UVError)?.code ?? UV_EINVAL.rawValue), bytes: prefix, partialLine: nil))
        }
    }

    /// What ``readIfCached(_:count:at:after:splittingAtLastLineBreak:)`` found.
    enum CachedRead {
        /// The read happened (or failed: a negative count), as a pool read would have.
        case read(ArrayReadResult)
        /// Nothing asked for is in the page cache: read on the pool instead. `prefix` is
        /// the prefix given, handed back for that read.
        case wouldWait(prefix: [UInt8])
        /// The file system cannot promise not to wait: read this file on the pool from now on.
        case unsupported(prefix: [UInt8])
    }

    /// ``read(_:count:at:after:splittingAtLastLineBreak:_:)`` done at once on the calling
    /// (loop) thread, if it can be without waiting for storage.
    ///
    /// Why read on the loop thread at all: catching up on a file that is in the page cache,
    /// the pool's round trip (a wake-up of a pool thread, another of the loop) costs more
    /// than the read, and the bytes land in the other core's cache, so the loop thread's
    /// next step (a `write` of the chunk to a pipe, say) reads them cold. Why it is safe:
    /// `preadv2` with `RWF_NOWAIT` (``csys_pread_nowait``) only copies what is already in
    /// memory and returns `EAGAIN` instead of waiting for a disk, a network file system or
    /// a lock, so the loop thread is held for one read's copy at most (a few microseconds
    /// for `File.tail`'s 32 KiB); whatever is not cached goes to the pool as before.
    ///
    /// Only part of the range may be cached: then the read is short, though the file may
    /// hold more.
    static func readIfCached(
        _ fd: Int32, count: Int, at offset: Int64, after prefix: [UInt8], splittingAtLastLineBreak: Bool = false
    ) -> CachedRead {
        let result = ArrayRead.perform(
            fd: fd, count: max(1, count), offset: offset, prefix: prefix, split: splittingAtLastLineBreak,
            withoutWaiting: true)
        switch Int32(clamping: -result.count) {
        case EAGAIN: return .wouldWait(prefix: result.bytes)
        case EOPNOTSUPP, ENOSYS, EINVAL: return .unsupported(prefix: result.bytes)
        default: return .read(result)
        }
    }

    /// Runs on a pool thread: touches the job only.
    /// Runs on a pool thread: the job is reached through the request (held until the
    /// after-work callback, which runs on the loop thread after this returned).
    private static let workCallback: uv_work_cb = { req in
        guard let req, let data = req.pointee.data else { return }
        Unmanaged<UVRequest<uv_work_t>>.fromOpaque(data).takeUnretainedValue().owner(as: ArrayRead.self).run()
    }

    private static let afterWorkCallback: uv_after_work_cb = { req, status in
        guard let req else { return }
        let request = UVRequest<uv_work_t>.finish(req)
        let job = request.owner(as: ArrayRead.self)
        request.owner = nil
        let owner = job.owner
        owner.inFlight = false
        owner.workInFlight = false
        // UV_ECANCELED when `cancel()` took the job off the queue before it ran.
        var result = job.result
        if status < 0 { result.count = Int(status) }
        job.done(result)
    }

    /// `uv_fs_stat(path)`; on success (`0`) the result is in ``lastStat``.
    func stat(_ path: String, _ done: @escaping (Int) -> Void) {
        submit(stat: true, done) { loop, req, cb in
            path.withCString { uv_fs_stat(loop, req, $0, cb) }
        }
    }

    /// `uv_fs_fstat(fd)`; on success (`0`) the result is in ``lastStat``.
    func fstat(_ fd: Int32, _ done: @escaping (Int) -> Void) {
        submit(stat: true, done) { loop, req, cb in uv_fs_fstat(loop, req, fd, cb) }
    }

    /// `uv_fs_close(fd)`; `done` gets 0 or a negative code (the descriptor is gone either way).
    func close(_ fd: Int32, _ done: @escaping (Int) -> Void) {
        submit(stat: false, done) { loop, req, cb in uv_fs_close(loop, req, fd, cb) }
    }

    /// Asks libuv to cancel the request in flight (`uv_cancel`). It succeeds only while
    /// the request still waits for a pool thread; then the completion gets `UV_ECANCELED`.
    /// A request already running finishes normally. The completion runs either way.
    func cancel() {
        guard inFlight else { return }
        // EBUSY (already running or done) is expected: the callback then comes as usual.
        if workInFlight, let work {
            work.cancel()
        } else {
            request.cancel()
        }
    }

    private func submit(
        stat: Bool, _ done: @escaping (Int) -> Void,
        _ start: (UnsafeMutablePointer<uv_loop_t>, UnsafeMutablePointer<uv_fs_t>, uv_fs_cb) -> Int32
    ) {
        // One request at a time is the owners' protocol; breaking it would corrupt the
        // uv_fs_t, so refuse loudly in debug builds and fail the operation otherwise.
        guard !inFlight else {
            assertionFailure("FileRequest: a request is already in flight")
            done(Int(UV_EBUSY.rawValue))
            return
        }
        completion = done
        wantsStat = stat
        inFlight = true
        request.owner = self
        do {
            try request.submit("fs", on: loop) { start(loop.uvLoop, $0, FileRequest.callback) }
        } catch {
            // libuv refused the request: no callback will come, so undo and report now.
            inFlight = false
            request.owner = nil
            completion = nil
            done(Int((error as? UVError)?.code ?? UV_EINVAL.rawValue))
        }
    }

    private static let callback: uv_fs_cb = { req in
        guard let req else { return }
        let request = UVRequest<uv_fs_t>.finish(req)
        let me = request.owner(as: FileRequest.self)
        request.owner = nil
        me.complete()
    }

    private func complete() {
        let result = request.pointer.pointee.result
        if wantsStat && result == 0 { lastStat = request.pointer.pointee.statbuf }
        uv_fs_req_cleanup(request.pointer)
        inFlight = false
        let done = completion
        completion = nil
        done?(result)
    }
}

/// What ``FileRequest/read(_:count:at:after:splittingAtLastLineBreak:_:)`` gives back.
struct ArrayReadResult {
    /// The byte count read (0 at end of file), or a negative libuv code.
    var count: Int
    /// The prefix followed by the bytes read; when split, only up to the last line break.
    var bytes: [UInt8]
    /// When split and the bytes read held a line break: what followed the last one.
    /// `nil` otherwise (then `bytes` ends with an unfinished line, if with anything).
    var partialLine: [UInt8]?
}

/// One ``FileRequest/read(_:count:at:after:splittingAtLastLineBreak:_:)``: its arguments,
/// and after ``run()`` its result.
///
/// Thread-safety: `@unchecked Sendable` because it crosses threads, but never shared: the
/// loop thread fills it in before `uv_queue_work`, one pool thread runs it, and the loop
/// thread reads it back in the after-work callback; libuv's work queue (a mutex) orders the
/// three.
final class ArrayRead: @unchecked Sendable {
    /// Held until the after-work callback, so the `uv_work_t` it owns outlives the job.
    let owner: FileRequest
    let fd: Int32
    let count: Int
    let offset: Int64
    let split: Bool
    let done: (ArrayReadResult) -> Void
    /// The prefix until ``run()`` has read; the outcome after.
    private(set) var result: ArrayReadResult

    init(
        owner: FileRequest, fd: Int32, count: Int, offset: Int64, prefix: [UInt8], split: Bool,
        done: @escaping (ArrayReadResult) -> Void
    ) {
        self.owner = owner
        self.fd = fd
        self.count = count
        self.offset = offset
        self.split = split
        self.done = done
        result = ArrayReadResult(count: 0, bytes: prefix, partialLine: nil)
    }

    /// The read itself, on a pool thread.
    func run() {
        result = ArrayRead.perform(fd: fd, count: count, offset: offset, prefix: result.bytes, split: split, withoutWaiting: false)
    }

    /// A read into a new array, as described at
    /// ``FileRequest/read(_:count:at:after:splittingAtLastLineBreak:_:)``, on the calling
    /// thread: with a plain `pread` (on a pool thread), or `withoutWaiting`, with
    /// ``csys_pread_nowait`` (on the loop thread; then a negative count is that call's code).
    static func perform(
        fd: Int32, count: Int, offset: Int64, prefix: [UInt8], split: Bool, withoutWaiting: Bool
    ) -> ArrayReadResult {
        // Never `Array(unsafeUninitializedCapacity: 0)`: for no capacity the standard
        // library (Swift 6.3) stores the count 0 into the one empty-array object every
        // empty array shares, a write ThreadSanitizer reports as a race with any other
        // thread reading an empty array (it did, against the loop thread's LineBuffer).
        if prefix.isEmpty && count <= 0 {
            return ArrayReadResult(count: 0, bytes: [], partialLine: nil)
        }
        var n = 0
        var partialLine: [UInt8]?
        let filled = [UInt8](unsafeUninitializedCapacity: prefix.count + count) { storage, initialized in
            guard let base = storage.baseAddress else { return }
            prefix.withUnsafeBufferPointer { carried in
                if let from = carried.baseAddress { base.initialize(from: from, count: carried.count) }
            }
            if withoutWaiting {
                n = csys_pread_nowait(fd, base + prefix.count, count, offset)
            } else {
                do throws(UVError) {
                    n = try systemCall("read", on: describe(descriptor: fd)) {
                        pread(fd, base + prefix.count, count, off_t(offset))
                    }
                } catch {
                    n = Int(error.code)  // negative: libuv's codes are negated errnos on Linux
                }
            }
            if n < 0 { return }
            let total = prefix.count + n
            initialized = total
            guard split, n > 0 else { return }
            // The last line break among the new bytes (the prefix, an unfinished line,
            // holds none); usually within the last line, so a plain backward loop.
            var index = total - 1
            while index >= prefix.count && base[index] != 10 { index -= 1 }
            if index >= prefix.count {
                partialLine = Array(UnsafeBufferPointer(start: base + index + 1, count: total - index - 1))
                // The bytes after the break stay in the storage but outside the array
                // (plain bytes: nothing to deinitialize).
                initialized = index + 1
            }
        }
        if n < 0 { return ArrayReadResult(count: n, bytes: prefix, partialLine: nil) }
        // A split array is sent on and may be kept by its receiver: when it holds less
        // than half of its storage (a few lines appended, not a catch-up), it moves into
        // storage of its own size, so a kept chunk never pins 256 KiB.
        let compact = split && filled.count < (prefix.count + count) / 2
            ? filled.isEmpty ? [] : [UInt8](unsafeUninitializedCapacity: filled.count) { storage, initialized in
                filled.withUnsafeBufferPointer { bytes in
                    if let from = bytes.baseAddress, let to = storage.baseAddress { to.initialize(from: from, count: bytes.count) }
                }
                initialized = filled.count
            }
            : filled
        return ArrayReadResult(count: n, bytes: compact, partialLine: partialLine)
    }
}

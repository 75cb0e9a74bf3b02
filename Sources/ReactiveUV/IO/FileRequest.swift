import CLibUV

/// One reusable libuv file-system request (`uv_fs_t`) with a Swift completion: the only
/// place the file signals talk to libuv's fs API, so submission, cleanup and error codes
/// are handled the same way everywhere.
///
/// Requests run on libuv's thread pool and complete on the loop's thread. One request is
/// in flight at a time; its owner (a ``FileReader`` or ``TailFollower``) chains the next
/// one from the completion. The `uv_fs_t` lives in heap memory that never moves; while a
/// request is in flight it holds a retain on this object (released in the callback), so
/// neither the object nor the `uv_fs_t` can go away under libuv, and `deinit` (which frees
/// the memory) can only run once no request is pending.
///
/// Thread-safety: loop-thread confined, like the libuv calls it makes.
final class FileRequest {
    /// The loop the requests run on.
    let loop: EventLoop
    /// The libuv request, reused for every operation after `uv_fs_req_cleanup`.
    private let request: UnsafeMutablePointer<uv_fs_t>
    /// The completion of the request in flight.
    private var completion: ((Int) -> Void)?
    /// Whether the last request was a stat, so its `statbuf` is worth keeping.
    private var wantsStat = false
    /// Whether a request is in flight (libuv owes us a callback).
    private(set) var inFlight = false
    /// The result of the last `stat`/`fstat`, valid in its completion.
    private(set) var lastStat = uv_stat_t()

    init(loop: EventLoop) {
        self.loop = loop
        request = UnsafeMutablePointer<uv_fs_t>.allocate(capacity: 1)
        // Zeroed, so a cleanup after a submission libuv refused reads no garbage.
        request.initialize(to: uv_fs_t())
    }

    deinit {
        // Reachable only with no request in flight (an in-flight request retains us).
        request.deinitialize(count: 1)
        request.deallocate()
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
        _ = uv_cancel(UnsafeMutableRawPointer(request).assumingMemoryBound(to: uv_req_t.self))
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
        let me = Unmanaged.passRetained(self)
        request.pointee.data = me.toOpaque()
        let rc = start(loop.uvLoop, request, FileRequest.callback)
        if rc < 0 {
            // libuv refused the request: no callback will come, so undo and report now.
            inFlight = false
            me.release()
            uv_fs_req_cleanup(request)
            completion = nil
            done(Int(rc))
        }
    }

    private static let callback: uv_fs_cb = { req in
        guard let req, let data = req.pointee.data else { return }
        Unmanaged<FileRequest>.fromOpaque(data).takeRetainedValue().complete()
    }

    private func complete() {
        let result = request.pointee.result
        if wantsStat && result == 0 { lastStat = request.pointee.statbuf }
        uv_fs_req_cleanup(request)
        inFlight = false
        let done = completion
        completion = nil
        done?(result)
    }
}

/// Which file a descriptor or path refers to: device and inode, as `tail -F` compares them
/// to notice that a path now names another file.
struct FileIdentity: Equatable {
    let device: UInt64
    let inode: UInt64

    init(_ stat: uv_stat_t) {
        device = stat.st_dev
        inode = stat.st_ino
    }
}

/// Whether a `uv_stat_t` describes a directory (`S_ISDIR`).
func isDirectory(_ stat: uv_stat_t) -> Bool {
    stat.st_mode & 0o170000 == 0o040000
}

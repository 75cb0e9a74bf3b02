import CLibUV
import CSystemShims
import Glibc
import ReactiveUV

// How this module reaches its loop from cnats's threads and runs blocking cnats calls off it.
//
// cnats keeps threads of its own even when its socket IO runs on a libuv loop (flusher,
// pings, reconnects, message delivery, JetStream ack handling: NATS-NOTES pitfall 5), and
// JetStream's management calls block until a reply that the loop itself must read (pitfall
// 1). So every callback from cnats hops to the loop with `EventLoop.execute`, and every
// blocking call runs on libuv's thread pool (`uv_queue_work`), its result coming back on the
// loop thread in the work request's completion callback.

extension EventLoop {
    /// Runs `body` on the loop's thread: inline when already there, else queued.
    func natsPerform(_ body: @escaping () -> Void) {
        if isCurrentThread {
            body()
        } else {
            let work = NATSUnchecked(body)
            execute { work.value() }
        }
    }

    /// Runs `work` on libuv's thread pool and then `done` with its result on this loop's
    /// thread. Call on the loop's thread.
    ///
    /// Why the pool and not a thread of our own: the runtime starts no threads outside
    /// libuv, and a `uv_work_t` is a request, not a handle, so nothing is left to close.
    func runOffLoop<Result>(_ work: @escaping () -> Result, done: @escaping (Result) -> Void) {
        let job: OffLoopWork = OffLoopJob(work: work, done: done)
        let request = UnsafeMutablePointer<uv_work_t>.allocate(capacity: 1)
        request.pointee.data = Unmanaged.passRetained(job).toOpaque()
        let rc = uv_queue_work(uvLoop, request, { request in
            guard let request else { return }
            Unmanaged<OffLoopWork>.fromOpaque(request.pointee.data).takeUnretainedValue().run()
        }, { request, _ in
            guard let request else { return }
            let job = Unmanaged<OffLoopWork>.fromOpaque(request.pointee.data).takeRetainedValue()
            request.deallocate()
            job.finish()
        })
        if rc < 0 {
            // Only a NULL callback makes uv_queue_work fail; run the work here rather than lose it.
            Unmanaged<OffLoopJob<Result>>.fromOpaque(request.pointee.data).release()
            request.deallocate()
            done(work())
        }
    }
}

/// One blocking call handed to libuv's pool: `run` on a pool thread, `finish` on the loop.
/// (A non-generic base: libuv's C callbacks cannot name a generic type.)
class OffLoopWork: @unchecked Sendable {
    func run() {}
    func finish() {}
}

/// An ``OffLoopWork`` with its result type.
final class OffLoopJob<Result>: OffLoopWork, @unchecked Sendable {
    // Thread-safety: `result` is written by the pool thread in `run` and read on the loop
    // thread in `finish`; libuv orders the two (after_work_cb runs after work_cb returned).
    let work: () -> Result
    let done: (Result) -> Void
    var result: Result?

    init(work: @escaping () -> Result, done: @escaping (Result) -> Void) {
        self.work = work
        self.done = done
    }

    override func run() { result = work() }

    override func finish() {
        if let result { done(result) }
    }
}

/// Carries a value across a thread hop that the threading contract makes safe (it is only
/// used on the loop's thread once there).
struct NATSUnchecked<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

/// An atomic counter shared by a cnats thread and the loop (heap cell: C points at it).
final class NATSCounter: @unchecked Sendable {
    // Thread-safety: the cell is a C11 atomic.
    private let cell = UnsafeMutablePointer<csys_atomic_int>.allocate(capacity: 1)

    init() { csys_atomic_int_init(cell, 0) }
    deinit { cell.deallocate() }

    /// Adds `delta`, returning the new value.
    @discardableResult
    func add(_ delta: Int64) -> Int64 { csys_atomic_int_fetch_add(cell, delta, csys_acq_rel) + delta }

    var value: Int64 { csys_atomic_int_load(cell, csys_acquire) }
}

/// Seconds → the milliseconds cnats takes.
func milliseconds(_ seconds: Double) -> Int64 { Int64((seconds * 1000).rounded()) }

/// A C string array for cnats calls taking `const char **` (freed by `free()`).
final class CStringArray {
    let pointers: UnsafeMutablePointer<UnsafePointer<CChar>?>
    let count: Int

    init(_ strings: [String]) {
        count = strings.count
        pointers = .allocate(capacity: max(1, strings.count))
        for (i, s) in strings.enumerated() { pointers[i] = UnsafePointer(strdup(s)) }
    }

    deinit {
        for i in 0..<count { free(UnsafeMutablePointer(mutating: pointers[i])) }
        pointers.deallocate()
    }
}

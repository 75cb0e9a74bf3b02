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
// blocking call runs on a short-lived thread of its own, its result coming back on the
// loop thread by `EventLoop.execute`.

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

    /// Runs `work` on a thread of its own and then `done` with its result on this loop's
    /// thread.
    ///
    /// Why not libuv's thread pool (`uv_queue_work`): that pool is shared by the whole
    /// process (4 threads unless `UV_THREADPOOL_SIZE` says otherwise) and also runs every
    /// file-system request and name lookup; a JetStream request can block one of its threads
    /// for its whole timeout, and file reads queued behind it would wait, or the request
    /// would wait behind them. Management calls are rare, so a
    /// short-lived detached thread each costs nothing that matters.
    func runOffLoop<Result>(_ work: @escaping () -> Result, done: @escaping (Result) -> Void) {
        let job: OffLoopWork = OffLoopJob(loop: self, work: work, done: done)
        let context = Unmanaged.passRetained(job).toOpaque()
        var thread = pthread_t()
        let rc = pthread_create(&thread, nil, { context in
            let job = Unmanaged<OffLoopWork>.fromOpaque(context!).takeRetainedValue()
            job.run()
            job.handBack()
            return nil
        }, context)
        if rc != 0 {
            // No thread to be had: run it here rather than lose it (it blocks this loop).
            Unmanaged<OffLoopWork>.fromOpaque(context).release()
            done(work())
            return
        }
        pthread_detach(thread)
    }
}

/// One blocking call: `run` on its own thread, then `finish` on the loop.
/// (A non-generic base: the thread's C entry point cannot name a generic type.)
class OffLoopWork: @unchecked Sendable {
    func run() {}
    func handBack() {}
}

/// An ``OffLoopWork`` with its result type.
final class OffLoopJob<Result>: OffLoopWork, @unchecked Sendable {
    // Thread-safety: `result` is written by the worker thread in `run` and read on the loop
    // thread after `execute` handed it over (the loop's queue lock orders the two).
    let loop: EventLoop
    let work: () -> Result
    let done: (Result) -> Void
    var result: Result?

    init(loop: EventLoop, work: @escaping () -> Result, done: @escaping (Result) -> Void) {
        self.loop = loop
        self.work = work
        self.done = done
    }

    override func run() { result = work() }

    override func handBack() {
        loop.execute { [self] in
            if let result { done(result) }
        }
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

    /// Sets the value.
    func store(_ value: Int64) { csys_atomic_int_store(cell, value, csys_release) }
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

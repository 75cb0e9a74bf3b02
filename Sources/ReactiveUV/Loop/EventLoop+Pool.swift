import CSystemShims
import Glibc

/// A pool of background loops: one thread per online processor (at least one), each
/// running its own ``EventLoop`` forever, at one nice value.
///
/// The threads are plain pthreads (no Foundation `Thread`, no Dispatch), detached, named
/// `<threadNamePrefix>N`, and run at the pool's nice value. Their loops keep their async
/// handle referenced, so they sleep in `epoll_wait` when idle and never run out of work to
/// wait for. The loop layer knows pools only by nice value and name; a layer above (the
/// scheduling layer's priorities) decides which pools exist and keeps them.
final class LoopPool: @unchecked Sendable {
    // Thread-safety: `loops`, `niceValue` and `threadNamePrefix` are immutable after init;
    // `cursor` is atomic.

    /// The pool at nice value 0 (threads `ruv-bg-N`), started on first use.
    static let shared = LoopPool(niceValue: 0, threadNamePrefix: "ruv-bg-")

    /// The nice value this pool's threads ask for.
    let niceValue: Int32
    /// What its thread names start with (Linux keeps 15 bytes of a thread name).
    let threadNamePrefix: String
    /// One loop per pool thread.
    let loops: [EventLoop]
    /// Round-robin position for ``next()``.
    private let cursor = UnsafeAtomicInt(0)

    /// Starts the pool's threads and waits until each has its loop.
    ///
    /// - Parameters:
    ///   - niceValue: a hint, as GCD's priorities were: raising the nice value always
    ///     works; lowering it (a negative value) needs CAP_SYS_NICE, and without it the
    ///     threads stay at the default.
    ///   - threadNamePrefix: the threads are named this plus their index.
    init(niceValue: Int32, threadNamePrefix: String) {
        self.niceValue = niceValue
        self.threadNamePrefix = threadNamePrefix
        let online = Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))
        let count = max(1, online)
        var loops: [EventLoop] = []
        for index in 0..<count {
            do {
                loops.append(try LoopPool.spawnThread(name: "\(threadNamePrefix)\(index)", niceValue: niceValue))
            } catch {
                // Fewer threads than cores still works; none at all cannot.
                if loops.isEmpty { fatalError("ReactiveUV: cannot start a background loop thread: \(error)") }
                break
            }
        }
        self.loops = loops
    }

    /// The next loop, round-robin, so work spreads over the threads.
    func next() -> EventLoop {
        let n = cursor.fetchAdd(1) & Int.max
        return loops[n % loops.count]
    }

    /// The thread-local slot holding a pool thread's loop (unretained: pool loops live for
    /// the whole process), so `EventLoop.currentThreadLoop` finds it without a search.
    static let threadLoopKey: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    /// The calling pool thread's loop, or `nil` on any other thread.
    static var currentThreadLoop: EventLoop? {
        guard let pointer = pthread_getspecific(threadLoopKey) else { return nil }
        return Unmanaged<EventLoop>.fromOpaque(pointer).takeUnretainedValue()
    }

    /// What a new pool thread hands back to the thread that started it.
    private final class Handoff: @unchecked Sendable {
        // Thread-safety: `condition` guards `loop` and `failure`; the rest is immutable.
        let condition = ConditionLock()
        let name: String
        let niceValue: Int32
        var loop: EventLoop?
        var failure: (any Error)?
        init(name: String, niceValue: Int32) {
            self.name = name
            self.niceValue = niceValue
        }
    }

    /// Starts a pool thread and waits until its loop exists, so the loop is bound to it.
    private static func spawnThread(name: String, niceValue: Int32) throws -> EventLoop {
        let handoff = Handoff(name: name, niceValue: niceValue)
        var thread = pthread_t()
        // The new thread owns this reference (taken back first thing there).
        let context = RetainedReference.retain(handoff)
        let rc = pthread_create(&thread, nil, { context in
            LoopPool.threadMain(RetainedReference.take(context.unsafelyUnwrapped, as: Handoff.self))
        }, context)
        if rc != 0 {
            RetainedReference.release(context)
            throw UVError(code: -rc, operation: "pthread_create", target: handoff.name)
        }
        pthread_detach(thread)
        handoff.condition.lock()
        while handoff.loop == nil && handoff.failure == nil { handoff.condition.wait() }
        let loop = handoff.loop
        let failure = handoff.failure
        handoff.condition.unlock()
        if let failure { throw failure }
        return loop!
    }

    /// A pool thread's body: create the loop here (binding it to this thread), report it,
    /// then run it forever. A pool thread never ends, so neither does its loop: the
    /// thread-local slot may hold it unretained.
    private static func threadMain(_ handoff: Handoff) -> UnsafeMutableRawPointer? {
        nameThread(handoff.name)
        // A hint, as GCD's priorities were: raising the nice value always works; lowering
        // it (`.high`) needs CAP_SYS_NICE, and without it the thread stays at the default.
        if handoff.niceValue != 0 { _ = csys_thread_set_nice(handoff.niceValue) }
        let loop: EventLoop
        do {
            loop = try EventLoop()
        } catch {
            handoff.condition.lock()
            handoff.failure = error
            handoff.condition.signal()
            handoff.condition.unlock()
            return nil
        }
        // Referenced for good: an idle pool loop waits for work instead of returning.
        loop.retainAsync()
        pthread_setspecific(threadLoopKey, Unmanaged.passUnretained(loop).toOpaque())
        handoff.condition.lock()
        handoff.loop = loop
        handoff.condition.signal()
        handoff.condition.unlock()
        // run() returns only if someone calls stop() on a pool loop; keep serving.
        while !loop.closedOnLoop { loop.run() }
        return nil
    }

    /// Names the calling thread (shown by `top -H`, gdb, /proc) by writing its `comm` file:
    /// Glibc's module map does not export `pthread_setname_np` or `prctl` to Swift.
    /// Linux keeps at most 15 bytes. Best effort: a failure leaves the default name.
    private static func nameThread(_ name: String) {
        let fd = open("/proc/self/task/\(csys_thread_id())/comm", O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        let bytes = Array(name.utf8.prefix(15))
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        Glibc.close(fd)
    }
}

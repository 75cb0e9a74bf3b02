import CSystemShims
import Glibc

/// The shared background loops behind ``Scheduler/background(priority:name:)``: for each
/// priority, one thread per online processor (at least one), each running its own
/// ``EventLoop`` forever.
///
/// Each priority's pool is created on first use. The threads are plain pthreads (no
/// Foundation `Thread`, no Dispatch), detached, named `ruv-bg-N` (`ruv-bg-high-N`,
/// `ruv-bg-low-N`, `ruv-bg-bg-N` for the other priorities), and run at their priority's
/// nice value. Their loops keep their async handle referenced, so they sleep in
/// `epoll_wait` when idle and never run out of work to wait for.
final class LoopPool: @unchecked Sendable {
    // Thread-safety: `loops` and `priority` are immutable after init; `cursor` and
    // `startedPools` are atomic.

    /// The default-priority pool.
    static var shared: LoopPool { pool(for: .default) }

    /// The pool of `priority`, started on first use.
    static func pool(for priority: Scheduler.Priority) -> LoopPool {
        switch priority {
        case .high: return high
        case .default: return normal
        case .low: return low
        case .background: return background
        }
    }

    private static let high = LoopPool.start(.high)
    private static let normal = LoopPool.start(.default)
    private static let low = LoopPool.start(.low)
    private static let background = LoopPool.start(.background)

    /// Which pools exist (one bit per priority), so asking "is this a pool thread?" never
    /// starts threads.
    private static let startedPools = UnsafeAtomicInt(0)

    private static func start(_ priority: Scheduler.Priority) -> LoopPool {
        let pool = LoopPool(priority: priority)
        startedPools.fetchOr(1 << priority.bit)
        return pool
    }

    /// The pools started so far, without starting any.
    static var startedPoolsList: [LoopPool] {
        let bits = startedPools.load()
        return Scheduler.Priority.allCases.filter { bits & (1 << $0.bit) != 0 }.map { pool(for: $0) }
    }

    /// The priority this pool's threads run at.
    let priority: Scheduler.Priority
    /// One loop per pool thread.
    let loops: [EventLoop]
    /// Round-robin position for ``next()``.
    private let cursor = UnsafeAtomicInt(0)

    private init(priority: Scheduler.Priority) {
        self.priority = priority
        let online = Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))
        let count = max(1, online)
        var loops: [EventLoop] = []
        for index in 0..<count {
            do {
                loops.append(try LoopPool.spawnThread(index: index, priority: priority))
            } catch {
                // Fewer threads than cores still works; none at all cannot.
                if loops.isEmpty { fatalError("ReactiveUV: cannot start a background loop thread: \(error)") }
                break
            }
        }
        self.loops = loops
    }

    /// The next loop, round-robin, so background schedulers spread over the threads.
    func next() -> EventLoop {
        let n = cursor.fetchAdd(1) & Int.max
        return loops[n % loops.count]
    }

    /// What a new pool thread hands back to the thread that started it.
    private final class Handoff: @unchecked Sendable {
        // Thread-safety: `condition` guards `loop` and `failure`; the rest is immutable.
        let condition = ConditionLock()
        let name: String
        let priority: Scheduler.Priority
        var loop: EventLoop?
        var failure: (any Error)?
        init(name: String, priority: Scheduler.Priority) {
            self.name = name
            self.priority = priority
        }
    }

    /// Starts a pool thread and waits until its loop exists, so the loop is bound to it.
    private static func spawnThread(index: Int, priority: Scheduler.Priority) throws -> EventLoop {
        let handoff = Handoff(name: "ruv-bg-\(priority.threadNameInfix)\(index)", priority: priority)
        var thread = pthread_t()
        let context = Unmanaged.passRetained(handoff).toOpaque()
        let rc = pthread_create(&thread, nil, { context in
            let handoff = Unmanaged<Handoff>.fromOpaque(context!).takeRetainedValue()
            return LoopPool.threadMain(handoff)
        }, context)
        if rc != 0 {
            Unmanaged<Handoff>.fromOpaque(context).release()
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
    /// then run it forever.
    private static func threadMain(_ handoff: Handoff) -> UnsafeMutableRawPointer? {
        nameThread(handoff.name)
        // A hint, as GCD's priorities were: raising the nice value always works; lowering
        // it (`.high`) needs CAP_SYS_NICE, and without it the thread stays at the default.
        if handoff.priority.niceValue != 0 { _ = csys_thread_set_nice(handoff.priority.niceValue) }
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

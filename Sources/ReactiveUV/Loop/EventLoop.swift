import CLibUV
import CSystemShims
import Glibc

/// One libuv loop (`uv_loop_t`) and the thread it belongs to.
///
/// Every libuv call on a loop happens on that loop's thread: ``threadID``, the thread that
/// created it (for ``main``, the process's main thread). Other threads hand work in with
/// ``execute(_:)``, which appends to a locked queue and wakes the loop through one
/// `uv_async_t`; the loop runs the queue in batches.
///
/// A loop is either **owned** (``init()``: we allocate the `uv_loop_t`, and ``close()``
/// closes every handle on it and then the loop itself) or **adopted**
/// (``init(adopting:)``: a host program owns the `uv_loop_t` and runs `uv_run`; ``close()``
/// closes only the handles ReactiveUV made on it).
///
/// Lifetime: the loop's own handles keep the `EventLoop` alive until ``close()`` has closed
/// them, so an owned loop you stop using must be closed (as a `uv_loop_t` must be); the
/// shared loops (``main`` and the background pool) live for the whole process.
///
/// Re-entrance: libuv's `uv_run` is not reentrant ("It must not be called from a
/// callback", libuv 1.44 `docs/src/loop.rst`). So ``run()``, ``runOnce()``,
/// ``runNoWait()``, ``run(until:timeout:)`` and ``close()`` do nothing (or return `false`,
/// or throw) when called from inside one of this loop's callbacks, including blocks run by
/// its schedulers. Blocking operators must not be used from inside a loop callback: they
/// cannot run the loop there and give up at once instead of deadlocking.
public final class EventLoop: @unchecked Sendable {
    // Thread-safety: `queueLock` guards `pending`, `accepting`, `cancelledPositions` and
    // `attachment`; `enqueuedCount`, `startedCount`, `cancellations` and
    // `timerSequence` are atomics (`enqueuedCount` is written only under `queueLock`,
    // `startedCount` only on the loop thread); every other
    // mutable property is touched only on the loop thread (`threadID`).

    /// A unit of work handed to the loop by ``execute(_:)``.
    typealias Work = @Sendable () -> Void

    /// The libuv loop. Use it only on the loop's thread.
    public let uvLoop: UnsafeMutablePointer<uv_loop_t>
    /// Whether this object allocated the `uv_loop_t` (and so closes it in ``close()``).
    public let isOwned: Bool
    /// The kernel id (`gettid`) of the thread this loop is bound to.
    public let threadID: Int64
    /// Whether this is ``EventLoop/main``.
    let isMain: Bool

    /// The one wake-up handle that drains the work queue (unref'd: it alone does not keep
    /// the loop alive). Set once in `init`, before the loop is shared.
    private(set) var wake: UVHandle<uv_async_t>!
    /// `wake`'s `uv_async_t`, read by `execute` on any thread (`uv_async_send`); set once
    /// in `init`, before the loop is shared, and valid until `close()`.
    @exclusivity(unchecked) private(set) var asyncHandle: UnsafeMutablePointer<uv_async_t>!
    /// Runs fired timers in deadline order in the iteration they fired in (see
    /// `EventLoop+Timers`); started only while timers are due.
    private(set) var prepare: UVHandle<uv_prepare_t>!
    /// `prepare`'s `uv_prepare_t` (tests tell the loop's own handles apart by it). Read on
    /// the loop thread when a timer fires (``startDueTimerPass()``); valid until `close()`.
    @exclusivity(unchecked) private(set) var prepareHandle: UnsafeMutablePointer<uv_prepare_t>!

    // MARK: State guarded by `queueLock`
    let queueLock = UnsafeLock()
    // (`@exclusivity(unchecked)`: the lock already makes access exclusive, and the dynamic
    // check would cost a thread-local lookup per scheduled block.)
    /// Work waiting for the loop.
    @exclusivity(unchecked) var pending = WorkQueue()
    /// Positions of queued blocks disposed before they started, ascending (see `cancelEntryLocked`).
    @exclusivity(unchecked) var cancelledPositions: [Int] = []
    /// False once ``close()`` started: new work is dropped and nobody touches `asyncHandle`.
    @exclusivity(unchecked) var accepting = true
    /// An object a layer above keeps with this loop (the loop's default scheduler), made on
    /// first use by ``attachment(orMake:)`` and dropped when ``close()`` begins.
    private var attachment: AnyObject?
    /// What the products above keep per loop and drop when ``close()`` begins (see
    /// ``whenClosing(_:)``).
    private var closingHooks: [@Sendable () -> Void] = []

    // MARK: Atomics
    /// Entries ever accepted into the queue. Written only under `queueLock` (so a plain
    /// load and store, not a read-modify-write); read by ``hasQueuedWork`` from any thread.
    let enqueuedCount = UnsafeAtomicInt(0, ownCacheLine: ())
    /// Entries ever started (or skipped as cancelled). Written only by the loop thread.
    /// `enqueuedCount - startedCount` is the work waiting: two counters, each with a
    /// single writer, instead of one counter both sides update with atomic RMWs.
    let startedCount = UnsafeAtomicInt(0, ownCacheLine: ())
    /// `cancelledPositions.count`, readable without the lock: the drain looks in
    /// `cancelledPositions` (under the lock) only when it is nonzero.
    let cancellations = UnsafeAtomicInt(0, ownCacheLine: ())
    /// Scheduling order of timers, so equal deadlines fire in the order they were made.
    let timerSequence = UnsafeAtomicInt(0)

    // MARK: Loop-thread state
    /// The batch being run by `drainQueue` (kept to reuse its capacity).
    @exclusivity(unchecked) var batch = WorkQueue()
    /// Nesting depth of our `uv_run` calls.
    var runDepth = 0
    /// Nesting depth of our callbacks (queue drain, timer drain), for hosts' `uv_run`.
    @exclusivity(unchecked) var callbackDepth = 0
    /// How many callers need the async handle referenced (the loop kept alive).
    var asyncRefs = 0
    /// Set by ``stop()``; consumed when ``run()`` returns.
    var stopRequested = false
    /// Set once ``close()`` has closed our handles.
    var closedOnLoop = false
    /// Set once `uv_loop_close` succeeded, so `deinit` may free the `uv_loop_t`.
    var loopMemoryReleasable = false
    /// Timers whose `uv_timer_t` fired this iteration, run in deadline order by the prepare handle.
    /// Unchecked: the prepare handle reads it on every turn of the loop, and the dynamic
    /// exclusivity check cost ~76 of that turn's instructions (callgrind, ruv-echo); the
    /// loop thread is its only user.
    @exclusivity(unchecked) var dueTimers: [LoopTimer] = []
    /// Everything holding handles on this loop that ``close()`` must close.
    var resources: [ObjectIdentifier: any LoopResource] = [:]
    /// Running IO subscriptions, by their lifetime, that ``close()`` ends (see
    /// ``endAtClose(_:)``).
    var runningSubscriptions: [ObjectIdentifier: CompoundDisposable] = [:]
    /// Whether a handle or request may have started a watcher (a descriptor libuv adds to
    /// its epoll set only in the next poll phase) since our last `uv_run` began: set by
    /// ``UVHandle`` and ``UVRequest``, cleared by `runUV`. A host polling the backend
    /// descriptor itself must run the loop first while it is set (see
    /// ``startedWatcherSinceRun``).
    @exclusivity(unchecked) var watcherStarted = true


    // MARK: - Creating

    /// Creates a loop with its own `uv_loop_t`, bound to the calling thread.
    ///
    /// Run it on this thread (``run()``, ``run(until:timeout:)``); hand it work from any
    /// thread with ``execute(_:)``; close it with ``close()`` when done.
    ///
    /// - Throws: ``UVError`` when libuv cannot create the loop (out of file descriptors).
    public convenience init() throws {
        try self.init(ownedBy: csys_thread_id(), isMain: false)
    }

    /// Wraps a `uv_loop_t` that a host program owns and runs.
    ///
    /// The host keeps calling `uv_run` on its thread (the calling thread, which this object
    /// is bound to). ReactiveUV adds two unreferenced handles to the loop (a `uv_async_t`
    /// for ``execute(_:)`` and a `uv_prepare_t` for timers), so they never keep the host's
    /// loop alive. Before the host closes its loop it calls ``close()``, which closes only
    /// ReactiveUV's handles; their close callbacks run on the host's next `uv_run`.
    ///
    /// - Parameter loop: an initialized loop that outlives this object's handles.
    /// - Throws: ``UVError`` when libuv cannot add the wake-up handle.
    public convenience init(adopting loop: UnsafeMutablePointer<uv_loop_t>) throws {
        try self.init(loop: loop, owned: false, threadID: csys_thread_id(), isMain: false)
    }

    /// Creates an owned loop bound to `threadID` (which may differ from the calling thread:
    /// the main loop is created on first use, from any thread, but bound to the main thread).
    convenience init(ownedBy threadID: Int64, isMain: Bool) throws {
        let loop = UnsafeMutablePointer<uv_loop_t>.allocate(capacity: 1)
        do {
            try uvCheck(uv_loop_init(loop), "uv_loop_init")
        } catch {
            loop.deallocate()
            throw error
        }
        do {
            try self.init(loop: loop, owned: true, threadID: threadID, isMain: isMain)
        } catch {
            uv_loop_close(loop)
            loop.deallocate()
            throw error
        }
    }

    private init(loop: UnsafeMutablePointer<uv_loop_t>, owned: Bool, threadID: Int64, isMain: Bool) throws {
        self.uvLoop = loop
        self.isOwned = owned
        self.threadID = threadID
        self.isMain = isMain

        // The loop's own two handles: not registered as resources (close() closes them
        // itself, last). Each holds the loop object as its owner until its close callback,
        // so a loop cannot be freed while libuv can still call into it.
        let wake = try UVHandle<uv_async_t>(loop: self, type: UV_ASYNC, operation: "uv_async_init", registers: false) {
            uv_async_init(loop, $0) { handle in
                guard let handle else { return }
                UVHandleCore.owner(of: handle, as: EventLoop.self).drainQueue()
            }
        }
        wake.owner = self
        wake.unref()
        self.wake = wake
        self.asyncHandle = wake.pointer
        let prepare = try UVHandle<uv_prepare_t>(loop: self, type: UV_PREPARE, operation: "uv_prepare_init", registers: false) {
            uv_prepare_init(loop, $0)
        }
        prepare.owner = self
        self.prepare = prepare
        self.prepareHandle = prepare.pointer
        // Not started here: a timer that fires starts it (`startDueTimerPass`), and the
        // pass stops it once nothing is due, so a turn without due timers makes no call
        // into Swift for it.
        prepare.unref()
    }

    deinit {
        // Only reachable after close(): until then the handles hold a reference.
        if isOwned && loopMemoryReleasable { uvLoop.deallocate() }
        pending.destroy()
        batch.destroy()
        queueLock.destroy()
        enqueuedCount.destroy()
        startedCount.destroy()
        cancellations.destroy()
        timerSequence.destroy()
    }

    /// The loop bound to the process's main thread, created on first use from any thread.
    ///
    /// The scheduling layer's main scheduler schedules onto it. Something must run it on
    /// the main thread (``run()``, or ``run(until:timeout:)`` inside blocking operators and
    /// tests) for its work to happen, as with RAC's main run loop. It is never closed.
    public static let main: EventLoop = {
        do {
            // The main thread's kernel id is the process id.
            return try EventLoop(ownedBy: Int64(getpid()), isMain: true)
        } catch {
            fatalError("ReactiveUV: cannot create the main event loop: \(error)")
        }
    }()

    // MARK: - Thread identity

    /// Whether the calling thread is the one this loop is bound to.
    public var isCurrentThread: Bool { csys_thread_id() == threadID }

    /// Whether a block or callback of this loop is running, or one of our `uv_run` calls is
    /// under way, on the calling thread (the loop's): running the loop again here would
    /// re-enter `uv_run`. Meaningful only on the loop's thread.
    var isInsideLoop: Bool { runDepth > 0 || callbackDepth > 0 }

    /// Whether ``close()`` has begun. Safe from any thread.
    public var isClosed: Bool { queueLock.withLock { !accepting } }

    /// The object a layer above keeps with this loop (the scheduling layer: the loop's
    /// default scheduler), made by `make` on first use. Safe from any thread; `make` runs
    /// under the queue lock, so it must not hand the loop work. ``close()`` drops it (it
    /// may hold the loop: that breaks the cycle).
    func attachment(orMake make: () -> AnyObject) -> AnyObject {
        queueLock.withLock {
            if let object = attachment { return object }
            let object = make()
            attachment = object
            return object
        }
    }

    /// Runs `body` on the loop's thread when ``close()`` begins (after the work already
    /// queued has run), so a product above can let go of what it keeps per loop
    /// (ReactiveUVHTTP's shared client). Safe from any thread. `body` must not hold the
    /// loop (that would be a cycle through the loop's own list).
    ///
    /// - Parameter body: what to run; it runs once.
    /// - Returns: `false`, without keeping `body`, when closing has already begun.
    package func whenClosing(_ body: @escaping @Sendable () -> Void) -> Bool {
        queueLock.withLock {
            guard accepting else { return false }
            closingHooks.append(body)
            return true
        }
    }

    /// Keeps the loop alive while the caller needs it (the async handle referenced).
    func retainAsync() {
        asyncRefs += 1
        if asyncRefs == 1 && !closedOnLoop { wake?.ref() }
    }

    /// Undoes one ``retainAsync()``.
    func releaseAsync() {
        asyncRefs -= 1
        if asyncRefs == 0 && !closedOnLoop { wake?.unref() }
    }

    // MARK: - Running

    /// Whether the loop may be run by the calling thread right now.
    private var canRun: Bool { isCurrentThread && !isInsideLoop && !closedOnLoop }

    /// One `uv_run` call, marked so nested calls are refused; then runs timers that the
    /// call's trailing timer pass fired (`UV_RUN_ONCE` fires timers after the prepare phase).
    @discardableResult
    func runUV(_ mode: uv_run_mode) -> Bool {
        // Watchers started from here on are registered by this run's poll phase, unless
        // they start after it (in a callback): those set the flag again.
        watcherStarted = false
        runDepth += 1
        let alive = uv_run(uvLoop, mode) != 0
        runDepth -= 1
        drainDueTimers()
        return alive
    }

    /// Runs the loop until ``stop()`` or until nothing keeps it alive and no work is queued.
    ///
    /// "Alive" is libuv's notion: referenced active handles (timers, sockets, ...) or
    /// requests in flight. Queued ``execute(_:)`` work also counts, so a block handed in
    /// from another thread just before the loop ran out of handles still runs.
    /// Call it on the loop's thread; elsewhere, or from inside one of this loop's callbacks
    /// (libuv's `uv_run` is not reentrant), or after ``close()``, it returns at once.
    /// A ``stop()`` made on the loop's thread while no `run()` was active makes the next
    /// `run()` return at once; one made from another thread is queued work, so `run()`
    /// returns when it gets to it.
    public func run() {
        guard canRun else { return }
        if stopRequested {
            stopRequested = false
            return
        }
        while true {
            let alive = runUV(UV_RUN_DEFAULT)
            // uv_run(DEFAULT) returns while alive only when uv_stop was called.
            if stopRequested || alive {
                stopRequested = false
                return
            }
            if hasQueuedWork {
                // Nothing else is alive, but work is on its way: keep the loop alive (the
                // async handle referenced) for one iteration, which blocks until it arrives.
                retainAsync()
                runUV(UV_RUN_ONCE)
                releaseAsync()
                continue
            }
            return
        }
    }

    /// Runs one iteration of the loop, blocking in the poll phase if nothing is ready
    /// (`UV_RUN_ONCE`).
    ///
    /// Same thread and re-entrance rules as ``run()``.
    ///
    /// - Returns: whether something still keeps the loop alive or work is queued.
    @discardableResult
    public func runOnce() -> Bool {
        run(mode: UV_RUN_ONCE)
    }

    /// Runs one iteration of the loop without blocking (`UV_RUN_NOWAIT`).
    ///
    /// Same thread and re-entrance rules as ``run()``.
    ///
    /// - Returns: whether something still keeps the loop alive or work is queued.
    @discardableResult
    public func runNoWait() -> Bool {
        run(mode: UV_RUN_NOWAIT)
    }

    private func run(mode: uv_run_mode) -> Bool {
        guard canRun else { return false }
        // uv_run does not iterate at all when nothing is alive, so queued work needs the
        // async handle referenced to be seen.
        let keepAlive = hasQueuedWork
        if keepAlive { retainAsync() }
        let alive = runUV(mode)
        if keepAlive { releaseAsync() }
        return alive || hasQueuedWork
    }

    /// One non-blocking iteration for a host that drives this loop from its own poll loop
    /// (the embedding API's `ruv_runtime_run_once`).
    ///
    /// libuv adds a descriptor to its epoll set only in the poll phase of an iteration, and
    /// `uv_run` does not iterate at all when nothing keeps the loop alive; a host waiting
    /// on the backend descriptor would then never hear from a watcher just started (the
    /// wake-up of work queued from another thread, most importantly). So while a watcher
    /// may have started since the last run (``startedWatcherSinceRun``), or work is
    /// queued, the loop is kept alive for this one iteration.
    ///
    /// - Returns: whether something still keeps the loop alive or work is queued.
    package func runNoWaitRegisteringWatchers() -> Bool {
        guard canRun else { return false }
        let keepAlive = watcherStarted || hasQueuedWork
        if keepAlive { retainAsync() }
        runUV(UV_RUN_NOWAIT)
        if keepAlive { releaseAsync() }
        return uv_loop_alive(uvLoop) != 0 || hasQueuedWork
    }

    /// Makes ``run()`` return after the current iteration. Safe from any thread.
    ///
    /// From another thread the request travels through ``execute(_:)`` (libuv's `uv_stop`
    /// is not thread-safe). If no ``run()`` is active when the request is carried out, the
    /// next `run()` returns at once. ``run(until:timeout:)``, ``runOnce()`` and
    /// ``runNoWait()`` are not ended by it: they have their own bounds.
    public func stop() {
        if isCurrentThread {
            requestStop()
        } else {
            execute { [self] in requestStop() }
        }
    }

    private func requestStop() {
        guard !closedOnLoop else { return }
        stopRequested = true
        // Only a uv_run under way needs libuv's flag (for an adopted loop, that may be the
        // host's). Set outside any uv_run, libuv's flag would linger and end a later
        // uv_run early; our own flag already makes the next run() return.
        if isInsideLoop { uv_stop(uvLoop) }
    }

    /// Runs the loop until `condition()` is true or `seconds` have passed.
    ///
    /// For tests and for blocking operators on a loop's own thread: the loop keeps running
    /// the work they wait for. It blocks in libuv's poll phase between events (no spinning):
    /// `condition` is checked before the first iteration and after each one. Whoever makes
    /// it true from **another** thread must wake the loop (hand it work with
    /// ``execute(_:)``), or it is only noticed at the next event or the timeout.
    ///
    /// Returns `false` without running anything when called from a thread other than the
    /// loop's, after ``close()``, or from inside one of this loop's callbacks (libuv's
    /// `uv_run` is not reentrant): there the wait cannot make progress.
    ///
    /// - Parameters:
    ///   - condition: checked on the loop's thread; cheap and side-effect free.
    ///   - seconds: the longest wait.
    /// - Returns: whether `condition()` became true.
    public func run(until condition: () -> Bool, timeout seconds: Double) -> Bool {
        if condition() { return true }
        guard canRun else { return false }
        let deadline = EventLoop.adding(csys_monotonic_ns(), max(0, EventLoop.nanoseconds(seconds)))

        // A timer for the deadline keeps uv_run(ONCE) from blocking past it. (Not a
        // resource: it is closed here, whatever happens.)
        let uvLoop = self.uvLoop
        guard let timer = try? UVHandle<uv_timer_t>(
            loop: self, type: UV_TIMER, operation: "uv_timer_init", registers: false, initialize: { uv_timer_init(uvLoop, $0) })
        else { return false }
        let wakeUp: uv_timer_cb = { _ in }
        retainAsync()
        defer {
            releaseAsync()
            timer.close()
        }
        while true {
            let now = csys_monotonic_ns()
            if now >= deadline { return condition() }
            if uv_is_active(timer.uvHandle) == 0 {
                uv_update_time(uvLoop)
                // Fails only on a closing handle; the deadline check above still ends the wait.
                _ = try? timer.check(uv_timer_start(timer.pointer, wakeUp, EventLoop.milliseconds(deadline - now), 0), "uv_timer_start")
            }
            runUV(UV_RUN_ONCE)
            if condition() { return true }
            if closedOnLoop { return false }
        }
    }

    // MARK: - Closing

    /// Closes the loop: ReactiveUV's handles always; for an owned loop, every other handle
    /// too, then `uv_loop_close`. Afterwards the loop is unusable.
    ///
    /// Work already queued runs first; later ``execute(_:)`` calls are dropped. Pending
    /// timers are cancelled. IO subscriptions still running end silently: their handles
    /// close, they are disposed, and they deliver nothing more. For an owned loop this runs the loop until every close callback
    /// ran, then closes it, so no memory is left behind. For an adopted loop only our
    /// handles are closed; their close callbacks run on the host's next `uv_run`.
    /// Call it on the loop's thread, outside its callbacks. Calling it again does nothing.
    ///
    /// - Throws: ``UVError`` (`EPERM`) from another thread, (`EBUSY`) from inside one of
    ///   the loop's callbacks, or what `uv_loop_close` reports (`EBUSY` while a request
    ///   such as a file operation is still in flight).
    public func close() throws {
        guard isCurrentThread else {
            throw UVError(code: UV_EPERM.rawValue, operation: "EventLoop.close from a thread other than the loop's")
        }
        if closedOnLoop { return }
        guard !isInsideLoop else {
            throw UVError(code: UV_EBUSY.rawValue, operation: "EventLoop.close from inside a loop callback")
        }

        // 1. Stop accepting work, then run what was accepted (it was promised to run).
        let attached: AnyObject? = queueLock.withLock {
            accepting = false
            let object = attachment
            attachment = nil  // it may hold the loop: break the cycle
            return object
        }
        _ = attached  // released here, outside the lock
        drainQueue()
        let hooks = queueLock.withLock {
            let taken = closingHooks
            closingHooks = []
            return taken
        }
        for hook in hooks { hook() }

        // 2. Close our handles and everything registered with us (timers, IO handles).
        closedOnLoop = true
        for resource in Array(resources.values) { resource.closeForLoopShutdown() }
        dueTimers.removeAll()
        // Then end the subscriptions still running, now that their handles are closing
        // and silent: disposing sends nothing, and it lets go of what they hold.
        for lifetime in Array(runningSubscriptions.values) { lifetime.dispose() }
        runningSubscriptions.removeAll()
        // Each handle holds this loop (its `loop` and `owner`) and the loop holds it: the
        // close callbacks break both links.
        prepare.close { [self] in prepare = nil }
        wake.close { [self] in wake = nil }
        guard isOwned else { return }

        // 3. An owned loop: close whatever else is left, let the close callbacks run, close.
        var others: [UnsafeMutablePointer<uv_handle_t>] = []
        withUnsafeMutablePointer(to: &others) { list in
            uv_walk(uvLoop, { handle, arg in
                guard let handle, let arg, uv_is_closing(handle) == 0 else { return }
                arg.assumingMemoryBound(to: [UnsafeMutablePointer<uv_handle_t>].self).pointee.append(handle)
            }, list)
        }
        // A handle that was not registered as a LoopResource has no close callback we know
        // of; closing it without one may leak what its owner allocated, but a loop that
        // still holds handles can never be closed at all.
        for handle in others { uv_close(handle, nil) }
        runDepth += 1
        while uv_run(uvLoop, UV_RUN_DEFAULT) != 0 {}
        runDepth -= 1
        try uvCheck(uv_loop_close(uvLoop), "uv_loop_close")
        loopMemoryReleasable = true
    }

    // MARK: - Resources

    /// Notes that a handle or request may have started a watcher libuv registers only in
    /// its next poll phase (loop thread).
    @inline(__always)
    func noteWatcherStarted() { watcherStarted = true }

    /// Whether a watcher may have started since this loop's last run began, so a host
    /// polling ``uvLoop``'s backend descriptor must run the loop once before it can rely
    /// on the descriptor (libuv adds descriptors to its epoll set lazily, in the poll
    /// phase). Conservative: it may say yes when every watcher is registered already.
    /// Loop thread only.
    package var startedWatcherSinceRun: Bool { watcherStarted }

    /// Registers something that holds handles on this loop, so ``close()`` closes them.
    /// Loop thread only.
    func register(_ resource: any LoopResource) {
        resources[ObjectIdentifier(resource)] = resource
    }

    /// Removes a registration (typically from the handle's close callback). Loop thread only.
    func unregister(_ resource: any LoopResource) {
        resources.removeValue(forKey: ObjectIdentifier(resource))
    }

    /// Has ``close()`` dispose `lifetime`, an IO subscription's, if it is still running then
    /// (loop thread; the registration is dropped when the lifetime is disposed).
    ///
    /// Why: a subscription and the object serving it hold each other (the object keeps the
    /// subscription's sink and lifetime, the lifetime keeps a disposable that stops the
    /// object) until the lifetime is disposed. Closing the loop closes the handles silently,
    /// so nothing would dispose a subscription its subscriber never disposed, and that
    /// cycle, the loop with it, would outlive the loop's close. ``close()`` disposes these
    /// after closing every handle, so the disposal delivers nothing.
    func endAtClose(_ lifetime: CompoundDisposable) {
        let key = ObjectIdentifier(lifetime)
        runningSubscriptions[key] = lifetime
        lifetime.add(Disposable { [self] in
            if isCurrentThread {
                runningSubscriptions[key] = nil
            } else {
                execute { [self] in runningSubscriptions[key] = nil }
            }
        })
    }

    // MARK: - Helpers

    /// Views any libuv handle as the `uv_handle_t` it starts with.
    @inline(__always)
    static func handle<H>(_ pointer: UnsafeMutablePointer<H>) -> UnsafeMutablePointer<uv_handle_t> {
        UnsafeMutablePointer<uv_handle_t>(OpaquePointer(pointer))
    }

    /// Seconds to nanoseconds, rounded, clamped to ±`Int64.max / 2` (infinity too; NaN is 0).
    static func nanoseconds(_ seconds: Double) -> Int64 {
        guard seconds.isFinite else { return seconds > 0 ? Int64.max / 2 : 0 }
        let ns = (seconds * 1e9).rounded()
        if ns >= Double(Int64.max / 2) { return Int64.max / 2 }
        if ns <= -Double(Int64.max / 2) { return -(Int64.max / 2) }
        return Int64(ns)
    }

    /// `base + delta` nanoseconds on the monotonic clock, saturating at 0 and `UInt64.max`.
    static func adding(_ base: UInt64, _ delta: Int64) -> UInt64 {
        if delta >= 0 {
            let (r, o) = base.addingReportingOverflow(UInt64(delta))
            return o ? UInt64.max : r
        }
        let d = UInt64(-delta)
        return d > base ? 0 : base - d
    }

    /// Nanoseconds to whole milliseconds, rounded up, so a timer never fires early.
    @inline(__always)
    static func milliseconds(_ nanoseconds: UInt64) -> UInt64 {
        nanoseconds / 1_000_000 + (nanoseconds % 1_000_000 == 0 ? 0 : 1)
    }
}

/// Something that owns libuv handles on an ``EventLoop`` and must close them when the loop
/// closes. Register with `EventLoop.register(_:)` when the first handle is created and
/// unregister in the last close callback.
protocol LoopResource: AnyObject {
    /// Called on the loop's thread by ``EventLoop/close()``: stop delivering to user code
    /// and `uv_close` every handle (close callbacks free the memory as usual).
    func closeForLoopShutdown()
}

/// A serial scheduler over one ``EventLoop``: RAC's `mainThreadScheduler` (on
/// ``EventLoop/main``) and `+[RACScheduler scheduler]` (on a pool loop).
///
/// Blocks run on the loop's thread, one at a time, with ``Scheduler/current`` set to this
/// scheduler. ``schedule(_:)`` always enqueues, even from the loop's own thread (as
/// `dispatch_async` did); timed blocks use the loop's timers.
final class LoopScheduler: Scheduler, @unchecked Sendable {
    // Thread-safety: immutable; all mutable state lives in the EventLoop.

    /// The loop the blocks run on.
    let eventLoop: EventLoop
    /// Whether this scheduler lives for the whole process (``Scheduler/main``, a `static
    /// let`): queue entries and disposables then skip retaining it, which saves two atomic
    /// reference-count updates per block on the hottest scheduler.
    let isImmortal: Bool

    // The loop knows nothing of schedulers: each queued block carries this scheduler as
    // its opaque task context, which the loop puts in the thread's context slot while the
    // block runs (switching it only when the tag changes between consecutive tasks), and
    // which ``Scheduler/current`` reads back.

    init(loop: EventLoop, name: String, isImmortal: Bool = false) {
        self.eventLoop = loop
        self.isImmortal = isImmortal
        super.init(name: name)
    }

    /// The scheduler on the main loop (``Scheduler/main``).
    static let mainScheduler = LoopScheduler(loop: .main, name: "ReactiveUV.main", isImmortal: true)

    override func schedule(_ block: @escaping () -> Void) -> Disposable? {
        // The queue holds the block itself (no wrapper closure, no object the loop thread
        // must touch); the disposable only knows the entry's position in the queue.
        guard let position = enqueueBlock(block) else {
            return Disposable()  // the loop is closed: the block never runs
        }
        return ScheduledBlock(position: position, on: taskContext())
    }

    @usableFromInline
    override func scheduleUncancellable(_ block: @escaping () -> Void) {
        enqueueBlock(block)
    }

    /// Queues `block` as a loop task tagged with this scheduler; its position, or `nil`
    /// (and no reference kept: the loop gives the tag's back) when the loop is closed.
    @discardableResult
    @inline(__always)
    private func enqueueBlock(_ block: @escaping () -> Void) -> Int? {
        eventLoop.enqueue(LoopTask(body: block, context: taskContext()))
    }

    /// This scheduler as a loop task context (for a queued task or a disposable): keeping
    /// it alive unless it is immortal.
    @inline(__always)
    func taskContext() -> LoopTaskContext {
        isImmortal ? .borrowing(self) : .retaining(self)
    }

    override func after(_ time: SchedulerTime, schedule block: @escaping () -> Void) -> Disposable? {
        eventLoop.scheduleTimer(at: time.nanoseconds, repeatEvery: nil) { [self] in performAsCurrent(block) }
    }

    override func after(
        _ time: SchedulerTime, repeatingEvery interval: Double, withLeeway leeway: Double = 0,
        schedule block: @escaping () -> Void
    ) -> Disposable? {
        // A non-positive or NaN interval becomes the smallest one (1 ns): the block then runs
        // about once per loop iteration instead of trapping or spinning inside one.
        let nanoseconds = UInt64(max(1, SchedulerTime.nanoseconds(interval)))
        return eventLoop.scheduleTimer(at: time.nanoseconds, repeatEvery: nanoseconds) { [self] in
            performAsCurrent(block)
        }
    }
}

/// The disposable returned by a loop scheduler's ``Scheduler/schedule(_:)``: cancels the
/// block if it has not started.
///
/// It is not the queue entry: the loop never touches it, so a caller that drops it (the
/// common case) frees it at once, on its own thread, while its memory is still in cache.
/// Its disposed flag lives under the loop's queue lock rather than in an atomic cell of
/// its own (disposing a scheduled block is rare; creating one is not, and a cell would be
/// a second allocation per block). Disposing asks the loop to skip the entry at
/// `position` (see `EventLoop.cancelEntryLocked`).
final class ScheduledBlock: Disposable, @unchecked Sendable {
    // Thread-safety: `position` and `scheduler` are immutable; the scheduler's loop's
    // `queueLock` guards `disposed`.
    /// The entry's position in its loop's queue (`EventLoop.enqueue`'s result).
    let position: Int
    /// The scheduler, as a task context kept alive unless immortal (see
    /// `LoopScheduler.taskContext`).
    let scheduler: LoopTaskContext
    /// Whether ``dispose()`` was called. Guarded by the loop's `queueLock`.
    @exclusivity(unchecked) private var disposed = false

    /// - Parameters:
    ///   - position: the entry's position in the queue.
    ///   - scheduler: the scheduler, as `LoopScheduler.taskContext()` returned it
    ///     (released in `deinit`).
    init(position: Int, on scheduler: LoopTaskContext) {
        self.position = position
        self.scheduler = scheduler
        super.init(stateKeptElsewhere: ())
    }

    deinit { scheduler.release() }

    // Both calls reach the scheduler through a guaranteed reference, without a retain: this
    // object's own tag owns a reference to it (`LoopScheduler.taskContext()` makes a
    // retaining tag for every scheduler but `Scheduler.main`, which a `static let` keeps for
    // the whole process), given back only in `deinit`, which cannot run during a call on
    // `self`. Nothing else (the caller, the queued task) need hold the scheduler. Pinned by
    // `ScheduledBlockLifetimeTests`.
    override var isDisposed: Bool {
        scheduler.object(as: LoopScheduler.self)._withUnsafeGuaranteedRef { $0.eventLoop.queueLock.withLock { disposed } }
    }

    override func dispose() {
        scheduler.object(as: LoopScheduler.self)._withUnsafeGuaranteedRef { scheduler in
            let loop = scheduler.eventLoop
            loop.queueLock.withLock {
                if disposed { return }
                disposed = true
                loop.cancelEntryLocked(at: position)
            }
        }
    }
}

extension Scheduler {
    /// The scheduler for the main thread's loop, ``EventLoop/main``: RAC's
    /// `+mainThreadScheduler`.
    ///
    /// ``schedule(_:)`` always enqueues, even when called on the main thread; blocks run
    /// in FIFO order when the main loop runs (``EventLoop/run()``, or
    /// ``EventLoop/run(until:timeout:)`` in blocking operators and tests). It is also
    /// ``Scheduler/current`` on the main thread when no other scheduler is running a block.
    public static var main: Scheduler { LoopScheduler.mainScheduler }

    /// A new serial scheduler on the shared pool of background loop threads: RAC's
    /// `+[RACScheduler scheduler]` and `+schedulerWithPriority:name:`.
    ///
    /// Every call returns a distinct scheduler. Its blocks never overlap and run in FIFO
    /// order on one of its priority's pool threads (one per processor, chosen round-robin),
    /// so several background schedulers may share a thread, but each stays serial.
    ///
    /// - Parameters:
    ///   - priority: which pool: its threads run at that priority's nice value. A hint, as
    ///     GCD's priorities were for RAC: ``Priority/high`` needs the privilege to lower a
    ///     nice value (CAP_SYS_NICE) and otherwise runs like ``Priority/default``.
    ///   - name: a debug name.
    /// - Returns: the new scheduler.
    public static func background(priority: Priority = .default, name: String = "ReactiveUV.background") -> Scheduler {
        LoopScheduler(loop: priority.pool.next(), name: name)
    }

    /// The priority of a background scheduler's threads: RAC's `RACSchedulerPriority`.
    public enum Priority: Sendable, CaseIterable {
        /// RAC's `RACSchedulerPriorityHigh`: nice -5 where allowed.
        case high
        /// RAC's `RACSchedulerPriorityDefault`: nice 0.
        case `default`
        /// RAC's `RACSchedulerPriorityLow`: nice 5.
        case low
        /// RAC's `RACSchedulerPriorityBackground`: nice 10.
        case background

        /// The loop pool of this priority's background schedulers, started on first use:
        /// the loop layer knows pools only by nice value; this is where priorities map onto
        /// them.
        var pool: LoopPool {
            switch self {
            case .high: return Priority.highPool
            case .default: return LoopPool.shared
            case .low: return Priority.lowPool
            case .background: return Priority.backgroundPool
            }
        }

        // The pools other than the loop layer's shared one (nice 0, `ruv-bg-N`), each
        // started on first use. A hint, as GCD's priorities were: lowering the nice value
        // (`.high`) needs CAP_SYS_NICE, and without it the threads run at the default.
        private static let highPool = LoopPool(niceValue: -5, threadNamePrefix: "ruv-bg-high-")
        private static let lowPool = LoopPool(niceValue: 5, threadNamePrefix: "ruv-bg-low-")
        private static let backgroundPool = LoopPool(niceValue: 10, threadNamePrefix: "ruv-bg-bg-")
    }

    /// The event loop this scheduler runs its blocks on, or `nil` for schedulers that have
    /// none (``immediate``, ``TestScheduler``).
    public var loop: EventLoop? { (self as? LoopScheduler)?.eventLoop }
}

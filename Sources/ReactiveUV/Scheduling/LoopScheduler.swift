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

    init(loop: EventLoop, name: String) {
        self.eventLoop = loop
        super.init(name: name)
    }

    /// The scheduler on the main loop (``Scheduler/main``).
    static let mainScheduler = LoopScheduler(loop: .main, name: "ReactiveUV.main")

    override func schedule(_ block: @escaping () -> Void) -> Disposable? {
        let item = ScheduledBlock(block)
        eventLoop.execute { [self] in
            if item.isDisposed { return }
            performAsCurrent(item.block)
        }
        return item
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

/// A block waiting in a loop's queue, and the disposable that cancels it before it starts.
final class ScheduledBlock: Disposable, @unchecked Sendable {
    // Thread-safety: `block` is immutable; disposal is the inherited atomic bit.
    let block: () -> Void

    override init(_ block: @escaping () -> Void) {
        self.block = block
        super.init()
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
    /// `+[RACScheduler scheduler]` (and `+schedulerWithPriority:name:`).
    ///
    /// Every call returns a distinct scheduler. Its blocks never overlap and run in FIFO
    /// order on one of the pool's threads (one per processor, chosen round-robin), so
    /// several background schedulers may share a thread, but each stays serial.
    ///
    /// - Parameter name: a debug name.
    /// - Returns: the new scheduler.
    public static func background(name: String = "ReactiveUV.background") -> Scheduler {
        LoopScheduler(loop: LoopPool.shared.next(), name: name)
    }

    /// The event loop this scheduler runs its blocks on, or `nil` for schedulers that have
    /// none (``immediate``, ``TestScheduler``).
    public var loop: EventLoop? { (self as? LoopScheduler)?.eventLoop }
}

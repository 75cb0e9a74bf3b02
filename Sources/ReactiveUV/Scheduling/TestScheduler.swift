import CSystemShims

/// A scheduler on virtual time, for testing time-based code deterministically: RAC's
/// `RACTestScheduler`, with a clock.
///
/// Time is an integer count of nanoseconds starting at zero; it moves only when you
/// advance it. Nothing runs until you call ``advance()``, ``advance(by:)``,
/// ``advance(byNanoseconds:)``, ``advance(to:)``, ``run()`` or RAC's ``step()``,
/// ``step(_:)`` and ``stepAll()``; then actions run on the calling thread, one at a time,
/// in order of their time and, for equal times, in the order they were scheduled. While
/// an action runs, ``now`` is its time and ``Scheduler/current`` is this scheduler.
/// Actions that an action schedules inside the window being advanced run in the same call.
///
/// ```swift
/// let scheduler = TestScheduler()
/// var fired: [Int] = []
/// scheduler.afterDelay(2) { fired.append(2) }
/// scheduler.afterDelay(1) { fired.append(1) }
/// scheduler.advance(by: 1.5)      // fired == [1], now == 1.5 s
/// scheduler.advance(by: 1)        // fired == [1, 2], now == 2.5 s
/// ```
///
/// Scheduling and disposing are safe from any thread; advancing is for one thread at a
/// time (a second thread waits its turn). Calling an advancing method from inside an
/// action does nothing: actions never nest.
public final class TestScheduler: Scheduler, @unchecked Sendable {
    // Thread-safety: `lock` guards `clock`, `queue`, `nextSequence`, `live` and every
    // `Action`'s `queuedSequence`/`block`; `runLock` lets one thread advance at a time and
    // `runner` (the id of the advancing thread, atomic) refuses nested advances.

    private let lock = UnsafeLock()
    private let runLock = UnsafeLock()
    private let runner = UnsafeAtomicInt(0)
    private var clock: UInt64 = 0
    private var queue = ActionHeap()
    private var nextSequence: UInt64 = 0
    private var live = 0

    /// The most actions ``run()`` and ``stepAll()`` perform in one call, so repeating
    /// actions (which re-queue themselves forever) cannot make them loop forever.
    public static let runLimit = 1_000_000

    /// Creates a test scheduler at virtual time zero.
    ///
    /// - Parameter name: a debug name.
    public override init(name: String = "ReactiveUV.test") {
        super.init(name: name)
    }

    deinit {
        lock.destroy()
        runLock.destroy()
        runner.destroy()
    }

    /// The virtual time: zero at creation, then the time of the running action or the end
    /// of the last window advanced over.
    public override var now: SchedulerTime {
        lock.withLock { SchedulerTime(nanoseconds: clock) }
    }

    /// How many actions are queued and not cancelled (a repeating action counts once).
    public var pendingCount: Int { lock.withLock { live } }

    // MARK: - Scheduling

    /// Queues `block` at the current virtual time, after the actions already queued for it.
    ///
    /// - Parameter block: the action.
    /// - Returns: a disposable that removes the action if it has not run yet.
    @discardableResult
    public override func schedule(_ block: @escaping () -> Void) -> Disposable? {
        enqueue(Action(scheduler: self, interval: nil, block: block), at: nil)
    }

    /// Queues `block` at virtual `time` (a time already passed runs at the next advance,
    /// before later times).
    ///
    /// - Parameters:
    ///   - time: the virtual time, usually ``now`` advanced by a delay.
    ///   - block: the action.
    /// - Returns: a disposable that removes the action if it has not run yet.
    @discardableResult
    public override func after(_ time: SchedulerTime, schedule block: @escaping () -> Void) -> Disposable? {
        enqueue(Action(scheduler: self, interval: nil, block: block), at: time.nanoseconds)
    }

    /// Queues `block` at virtual `time`, then every `interval` seconds after that time.
    ///
    /// Each run queues the next at its own time plus the interval (behind actions already
    /// queued for that time). A non-positive or NaN interval is treated as 1 ns, so
    /// virtual time still moves between runs.
    ///
    /// - Parameters:
    ///   - time: the first run.
    ///   - interval: seconds between runs.
    ///   - leeway: ignored: virtual time is exact.
    ///   - block: the action.
    /// - Returns: a disposable that stops the repetition.
    @discardableResult
    public override func after(
        _ time: SchedulerTime, repeatingEvery interval: Double, withLeeway leeway: Double = 0,
        schedule block: @escaping () -> Void
    ) -> Disposable? {
        let nanoseconds = UInt64(max(1, SchedulerTime.nanoseconds(interval)))
        return enqueue(Action(scheduler: self, interval: nanoseconds, block: block), at: time.nanoseconds)
    }

    private func enqueue(_ action: Action, at time: UInt64?) -> Action {
        lock.withLock { push(action, at: time ?? clock) }
        return action
    }

    /// Queues `action` (lock held).
    private func push(_ action: Action, at time: UInt64) {
        let sequence = nextSequence
        nextSequence += 1
        action.queuedSequence = sequence
        live += 1
        queue.insert(Entry(time: time, sequence: sequence, action: action))
    }

    /// Removes a disposed action from the queue (the entry itself is skipped when popped)
    /// and drops its block.
    fileprivate func cancel(_ action: Action) {
        lock.withLock {
            // The block goes whether or not the action is queued. A repeating action
            // disposed from inside its own run is not queued at that moment (it is popped
            // while it runs; the running copy stays valid), and its block, which typically
            // captures the action's own disposable, would otherwise keep the action, the
            // block and everything it captures alive for good (LeakSanitizer found it).
            action.block = nil
            guard action.queuedSequence != nil else { return }
            action.queuedSequence = nil
            live -= 1
        }
    }

    // MARK: - Advancing

    /// Runs every action due at the current virtual time, including those they schedule
    /// for it. The clock does not move.
    public func advance() {
        runActions(until: { start in start }, limit: nil)
    }

    /// Moves the clock forward by `seconds`, running every action due up to the new time.
    ///
    /// - Parameter seconds: the virtual delay; negative or NaN counts as zero.
    public func advance(by seconds: Double) {
        advance(byNanoseconds: UInt64(max(0, SchedulerTime.nanoseconds(seconds))))
    }

    /// Moves the clock forward by `nanoseconds`, running every action due up to the new time.
    ///
    /// Actions run at their own times (``now`` inside each is its time); actions they
    /// schedule inside the window run in this call too. Afterwards ``now`` is the old time
    /// plus `nanoseconds`.
    ///
    /// - Parameter nanoseconds: the virtual delay.
    public func advance(byNanoseconds nanoseconds: UInt64) {
        runActions(until: { start in start.addingReportingOverflow(nanoseconds).overflow ? .max : start + nanoseconds },
                   limit: nil)
    }

    /// Moves the clock to `time`, running every action due up to it. A time already past
    /// runs what is due now and leaves the clock where it is.
    ///
    /// - Parameter time: the virtual time to reach.
    public func advance(to time: SchedulerTime) {
        runActions(until: { start in max(start, time.nanoseconds) }, limit: nil)
    }

    /// Runs queued actions in order, moving the clock to each one's time, until the queue
    /// is empty or ``runLimit`` actions have run (repeating actions never empty it).
    public func run() {
        runActions(until: { _ in .max }, limit: TestScheduler.runLimit, moveClockToEnd: false)
    }

    /// Runs the next queued action, moving the clock to its time (RAC's `-step`).
    /// Does nothing when the queue is empty.
    public func step() {
        step(1)
    }

    /// Runs the next `count` queued actions, one at a time (RAC's `-step:`), moving the
    /// clock to each one's time. Stops early when the queue empties.
    ///
    /// - Parameter count: how many actions; zero or negative runs none.
    public func step(_ count: Int) {
        guard count > 0 else { return }
        runActions(until: { _ in .max }, limit: count, moveClockToEnd: false)
    }

    /// Runs every queued action, including the ones they queue (RAC's `-stepAll`); the same
    /// as ``run()``, with the same bound.
    public func stepAll() {
        run()
    }

    /// The one advancing loop: pops due actions in (time, sequence) order and runs them.
    ///
    /// - Parameters:
    ///   - end: computes the window's end from the clock at the start.
    ///   - limit: the most actions to run, or `nil` for no bound.
    ///   - moveClockToEnd: whether the clock ends at the window's end (advance) or at the
    ///     last action's time (run, step).
    private func runActions(until end: (UInt64) -> UInt64, limit: Int?, moveClockToEnd: Bool = true) {
        let me = Int(csys_thread_id())
        // An advance from inside an action would run actions nested inside another.
        if runner.load() == me { return }
        runLock.lock()
        runner.store(me)
        defer {
            runner.store(0)
            runLock.unlock()
        }
        let target = lock.withLock { end(clock) }
        var ran = 0
        while limit.map({ ran < $0 }) ?? true, let popped = popAction(notAfter: target) {
            let action = popped.action
            performAsCurrent(popped.block)
            ran += 1
            if let interval = action.interval {
                lock.withLock {
                    // Disposal marks the action first, then takes the lock: either it sees
                    // the action queued again and removes it, or we see it disposed here.
                    if !action.isDisposed, action.queuedSequence == nil {
                        let (next, overflow) = action.time.addingReportingOverflow(interval)
                        action.time = overflow ? .max : next
                        push(action, at: action.time)
                    }
                }
            }
        }
        if moveClockToEnd {
            lock.withLock { if target > clock { clock = target } }
        }
    }

    /// Takes the first live action due at or before `target`, setting the clock to its time.
    private func popAction(notAfter target: UInt64) -> (action: Action, block: () -> Void)? {
        lock.withLock {
            while let top = queue.first {
                if top.action.queuedSequence != top.sequence {
                    queue.removeFirst()  // cancelled
                    continue
                }
                guard top.time <= target else { return nil }
                queue.removeFirst()
                let action = top.action
                action.queuedSequence = nil
                live -= 1
                action.time = top.time
                if top.time > clock { clock = top.time }
                guard let block = action.block else { continue }
                if action.interval == nil { action.block = nil }
                return (action, block)
            }
            return nil
        }
    }

    // MARK: - Storage

    /// A queued action and the disposable that cancels it.
    fileprivate final class Action: Disposable, @unchecked Sendable {
        // Thread-safety: `queuedSequence`, `block` and `time` are guarded by the
        // scheduler's `lock`; `interval` is immutable.
        /// Weak: a disposable may outlive its scheduler (disposing it then does nothing).
        weak var scheduler: TestScheduler?
        let interval: UInt64?
        var block: (() -> Void)?
        /// The sequence of the queue entry that is current for this action, or `nil` when
        /// it is not queued (running, finished or cancelled).
        var queuedSequence: UInt64?
        /// The virtual time of its latest run (the base of the next repetition).
        var time: UInt64 = 0

        init(scheduler: TestScheduler, interval: UInt64?, block: @escaping () -> Void) {
            self.scheduler = scheduler
            self.interval = interval
            self.block = block
            super.init()
        }

        override func dispose() {
            if markDisposed() { scheduler?.cancel(self) }
        }
    }

    fileprivate struct Entry {
        let time: UInt64
        let sequence: UInt64
        let action: Action

        func precedes(_ other: Entry) -> Bool {
            time != other.time ? time < other.time : sequence < other.sequence
        }
    }

    /// A binary min-heap of entries keyed by (time, sequence).
    fileprivate struct ActionHeap {
        private var items: [Entry] = []

        var first: Entry? { items.first }

        mutating func insert(_ entry: Entry) {
            items.append(entry)
            var child = items.count - 1
            while child > 0 {
                let parent = (child - 1) / 2
                guard items[child].precedes(items[parent]) else { break }
                items.swapAt(child, parent)
                child = parent
            }
        }

        mutating func removeFirst() {
            let last = items.removeLast()
            guard !items.isEmpty else { return }
            items[0] = last
            var parent = 0
            while true {
                let left = 2 * parent + 1
                let right = left + 1
                var smallest = parent
                if left < items.count && items[left].precedes(items[smallest]) { smallest = left }
                if right < items.count && items[right].precedes(items[smallest]) { smallest = right }
                if smallest == parent { return }
                items.swapAt(parent, smallest)
                parent = smallest
            }
        }
    }
}

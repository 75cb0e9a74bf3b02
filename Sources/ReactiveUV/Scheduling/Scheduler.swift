import CSystemShims
import Glibc

/// Where and when blocks run: RAC's `RACScheduler`.
///
/// A class rather than a protocol so that `Scheduler.main`, `Scheduler.immediate`,
/// `Scheduler.background()` and `Scheduler.current` read as they did in RAC. Subclasses
/// override ``schedule(_:)``, ``after(_:schedule:)`` and
/// ``after(_:repeatingEvery:withLeeway:schedule:)``; everything else is built on those.
///
/// Blocks given to one scheduler never overlap (every scheduler here is serial), and
/// ``Scheduler/current`` is the scheduler while one of its blocks runs.
open class Scheduler: @unchecked Sendable {
    /// A debug name.
    public let name: String

    /// Creates a scheduler with a debug name.
    public init(name: String) { self.name = name }

    /// The scheduler's clock now.
    open var now: SchedulerTime { SchedulerTime.monotonicNow }

    /// Whether blocks run synchronously on the caller's thread (the immediate scheduler).
    /// Time-based operators refuse such a scheduler with a clear error.
    open var isImmediate: Bool { false }

    /// Enqueues `block` to run as soon as possible, FIFO with other scheduled blocks.
    ///
    /// - Parameter block: the work.
    /// - Returns: a disposable that cancels the block if it has not started, or `nil` when
    ///   the block already ran (the immediate scheduler).
    @discardableResult
    open func schedule(_ block: @escaping () -> Void) -> Disposable? {
        fatalError("\(type(of: self)) must override schedule(_:)")
    }

    /// Enqueues `block` like ``schedule(_:)`` for a caller that will never cancel it
    /// (operators such as `deliverOn` check their own lifetime when the block runs). Loop
    /// schedulers then skip creating the disposable: one allocation and one atomic
    /// release fewer per delivered event.
    @usableFromInline
    func scheduleUncancellable(_ block: @escaping () -> Void) {
        _ = schedule(block)
    }

    /// Runs `block` at or after `time`; never preempts a running block.
    ///
    /// - Parameters:
    ///   - time: a point on this scheduler's clock (``now`` plus a delay).
    ///   - block: the work.
    /// - Returns: a disposable that cancels the block if it has not started.
    @discardableResult
    open func after(_ time: SchedulerTime, schedule block: @escaping () -> Void) -> Disposable? {
        fatalError("\(type(of: self)) must override after(_:schedule:)")
    }

    /// Runs `block` at `time` and then every `interval` seconds until disposed.
    ///
    /// - Parameters:
    ///   - time: the first run.
    ///   - interval: seconds between runs; must be positive.
    ///   - leeway: how late a run may be, a hint for coalescing timers.
    ///   - block: the work.
    /// - Returns: a disposable that stops the repetition, or `nil` when this scheduler
    ///   cannot repeat (the immediate scheduler; RAC left that undefined).
    @discardableResult
    open func after(
        _ time: SchedulerTime, repeatingEvery interval: Double, withLeeway leeway: Double = 0,
        schedule block: @escaping () -> Void
    ) -> Disposable? {
        fatalError("\(type(of: self)) must override after(_:repeatingEvery:withLeeway:schedule:)")
    }

    /// Runs `block` `delay` seconds from now (RAC's `-afterDelay:schedule:`).
    @discardableResult
    public final func afterDelay(_ delay: Double, schedule block: @escaping () -> Void) -> Disposable? {
        after(now.advanced(by: delay), schedule: block)
    }

    /// Schedules a block that can reschedule itself: RAC's `-scheduleRecursiveBlock:`.
    ///
    /// Calling `reschedule` from inside the block enqueues it again **after the current
    /// invocation returns** (so recursion becomes iteration: depth 100,000 is fine);
    /// calling it later enqueues at once. Disposal stops further runs.
    ///
    /// - Parameter block: receives the `reschedule` function.
    /// - Returns: a disposable that stops the recursion.
    @discardableResult
    public final func scheduleRecursive(_ block: @escaping (_ reschedule: @escaping () -> Void) -> Void) -> Disposable {
        let recursion = RecursiveSchedule(scheduler: self, block: block)
        recursion.enqueue()
        return recursion.disposable
    }

    /// Runs `block` with ``current`` set to this scheduler, restoring the previous value.
    public final func performAsCurrent(_ block: () -> Void) {
        let previous = EventLoop.currentTaskContext
        EventLoop.currentTaskContext = Unmanaged.passUnretained(self).toOpaque()
        block()
        EventLoop.currentTaskContext = previous
    }

    /// The scheduler running the current block, ``main`` on the main thread, otherwise `nil`.
    ///
    /// The scheduling layer keeps its identity in the loop layer's thread-local task
    /// context (`EventLoop.currentTaskContext`): loop schedulers tag the tasks they queue
    /// with themselves, and ``performAsCurrent(_:)`` sets it around other blocks. Nothing
    /// else writes that slot, so whatever it holds is a scheduler.
    public static var current: Scheduler? {
        if let p = EventLoop.currentTaskContext {
            return Unmanaged<Scheduler>.fromOpaque(p).takeUnretainedValue()
        }
        return csys_thread_is_main() ? Scheduler.main : nil
    }

    /// A scheduler that runs blocks synchronously on the caller's thread (RAC's
    /// `immediateScheduler`). `after` blocks the thread until the time; it cannot repeat.
    public static let immediate: Scheduler = ImmediateScheduler()
}

/// The state of one `scheduleRecursive` call: a flag for "reschedule requested while
/// running", so synchronous recursion becomes a loop instead of a deeper stack.
final class RecursiveSchedule: @unchecked Sendable {
    let scheduler: Scheduler
    let block: (_ reschedule: @escaping () -> Void) -> Void
    let disposable = CompoundDisposable()
    /// Guards `running`, `again` and `pending`.
    var lock = UnsafeLock()
    var running = false
    var again = false
    var pending: Disposable?

    init(scheduler: Scheduler, block: @escaping (_ reschedule: @escaping () -> Void) -> Void) {
        self.scheduler = scheduler
        self.block = block
    }

    deinit { lock.destroy() }

    func enqueue() {
        if disposable.isDisposed { return }
        let d = scheduler.schedule { [self] in run() }
        if let d {
            let old: Disposable? = lock.withLock {
                let o = pending
                pending = d
                return o
            }
            if let old { disposable.remove(old) }
            disposable.add(d)
        }
    }

    func reschedule() {
        let inside: Bool = lock.withLock {
            if running {
                again = true
                return true
            }
            return false
        }
        if !inside { enqueue() }
    }

    func run() {
        repeat {
            if disposable.isDisposed { return }
            lock.withLock {
                running = true
                again = false
            }
            block { [self] in reschedule() }
            let more: Bool = lock.withLock {
                running = false
                return again
            }
            if !more { return }
            // A reschedule during the run goes to the back of the scheduler's queue, except
            // on the immediate scheduler, where the loop itself is the queue.
            if !scheduler.isImmediate {
                enqueue()
                return
            }
        } while true
    }
}

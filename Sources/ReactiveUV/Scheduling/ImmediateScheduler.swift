import CSystemShims
import Glibc

/// Runs blocks synchronously on the caller's thread: RAC's `immediateScheduler`.
///
/// It does not set ``Scheduler/current``; `after` sleeps the calling thread until the
/// time; it cannot repeat (``after(_:repeatingEvery:withLeeway:schedule:)`` returns `nil`
/// and runs nothing, and time operators given it fail with ``SignalError/invalidScheduler(_:)``).
final class ImmediateScheduler: Scheduler, @unchecked Sendable {
    init() { super.init(name: "ReactiveUV.immediate") }

    override var isImmediate: Bool { true }

    override func schedule(_ block: @escaping () -> Void) -> Disposable? {
        block()
        return nil
    }

    override func after(_ time: SchedulerTime, schedule block: @escaping () -> Void) -> Disposable? {
        var remaining = Int64(time.nanoseconds) - Int64(csys_monotonic_ns())
        while remaining > 0 {
            var ts = timespec(tv_sec: Int(remaining / 1_000_000_000), tv_nsec: Int(remaining % 1_000_000_000))
            nanosleep(&ts, nil)
            remaining = Int64(time.nanoseconds) - Int64(csys_monotonic_ns())
        }
        block()
        return nil
    }

    override func after(
        _ time: SchedulerTime, repeatingEvery interval: Double, withLeeway leeway: Double,
        schedule block: @escaping () -> Void
    ) -> Disposable? {
        nil
    }
}

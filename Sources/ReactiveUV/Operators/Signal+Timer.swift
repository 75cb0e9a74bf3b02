// A one-shot timer signal, the single-tick sibling of `interval(_:on:)`.

extension Signal where Value == SchedulerTime {
    /// Sends the scheduler's current time once, `delay` seconds after subscription, then
    /// completes. (RAC 2 spelled this `[[RACSignal interval:… ] take:1]` or
    /// `[[RACSignal empty] delay:…]`; a signal of its own reads better.)
    ///
    /// `---t|`
    ///
    /// On a loop scheduler (``Scheduler/main``, ``Scheduler/background(priority:name:)``) the tick
    /// comes from the loop's `uv_timer_t`, armed after refreshing the loop's clock, and
    /// never before its deadline; on a ``TestScheduler`` it comes in virtual time.
    ///
    /// **RAC:** none (RAC used `-delay:` on `+return:`). **Thread:** the scheduler's.
    /// **Disposal:** cancels the timer. **Terminates:** right after its one value.
    ///
    /// - Parameters:
    ///   - delay: seconds until the tick; 0 ticks as soon as the scheduler gets to it.
    ///   - scheduler: where the tick is sent; not the immediate scheduler.
    /// - Returns: a signal that sends one ``SchedulerTime`` and completes, on the
    ///   scheduler's thread. It fails with `SignalError.invalidScheduler` for the immediate
    ///   scheduler and `SignalError.invalidArgument` for a negative or NaN delay. Disposal
    ///   before the tick cancels the timer.
    public static func timer(_ delay: Double, on scheduler: Scheduler) -> Signal<SchedulerTime> {
        if scheduler.isImmediate {
            return .error(SignalError.invalidScheduler("timer needs a scheduler that keeps time, not the immediate one"))
        }
        if !(delay >= 0) {
            return .error(SignalError.invalidArgument("timer(\(delay)): the delay must be at least 0"))
        }
        return AnonymousSignal { observer, lifetime in
            lifetime.add(scheduler.afterDelay(delay) {
                if lifetime.isDisposed { return }
                observer(.next(scheduler.now))
                if lifetime.isDisposed { return }
                observer(.completed)
                lifetime.dispose()
            })
        }
    }
}

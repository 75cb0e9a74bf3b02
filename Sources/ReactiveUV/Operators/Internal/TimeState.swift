/// State of `throttle`, `delay`, `timeout` and `bufferWithTime`: a source and a timer meet
/// here, so sends go through the lock.
final class TimeState<Value>: LockedState, @unchecked Sendable {
    var held: Value?
    var buffer: [Value] = []
    /// When the held value may be sent (debounce).
    var deadline = SchedulerTime(nanoseconds: 0)
    /// Whether the debounce timer is pending.
    var timerArmed = false
    var done = false
    let timer = SerialDisposable()
}

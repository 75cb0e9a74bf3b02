/// State of `throttle`, `delay`, `timeout` and `bufferWithTime`: a source and a timer meet
/// here, so sends go through the lock. `generation` tells a timer that fired late that its
/// value was replaced meanwhile.
final class TimeState<Value>: LockedState, @unchecked Sendable {
    var held: Value?
    var buffer: [Value] = []
    var generation = 0
    var done = false
    let timer = SerialDisposable()
}

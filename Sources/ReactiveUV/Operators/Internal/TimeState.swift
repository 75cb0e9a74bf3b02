/// State of `throttle`, `delay`, `timeout` and `bufferWithTime`: a source and a timer meet
/// here, so sends go through the lock. `@usableFromInline` because `throttle`/`debounce`
/// are inlinable: their per-value path then runs specialized for the value type in the
/// caller's module instead of looking up generic metadata for every value.
@usableFromInline
final class TimeState<Value>: LockedState, @unchecked Sendable {
    // Thread-safety: the inherited `lock` guards every field (so the dynamic exclusivity
    // checks, a thread-local lookup per access, buy nothing: `@exclusivity(unchecked)`).
    @usableFromInline @exclusivity(unchecked) var held: Value?
    @usableFromInline @exclusivity(unchecked) var buffer: [Value] = []
    /// When the held value may be sent (debounce).
    @usableFromInline @exclusivity(unchecked) var deadline = SchedulerTime(nanoseconds: 0)
    /// Whether the debounce timer is pending.
    @usableFromInline @exclusivity(unchecked) var timerArmed = false
    @usableFromInline @exclusivity(unchecked) var done = false
    @usableFromInline let timer = SerialDisposable()

    @inlinable
    override init() { super.init() }
}

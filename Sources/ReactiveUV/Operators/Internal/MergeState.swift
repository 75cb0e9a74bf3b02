/// State of `Signal.merge(_:)` and `merge(_:)`: a lock that serializes what the sources
/// send, and how many sources are still active.
@usableFromInline
final class MergeState: TerminableState, @unchecked Sendable {
    /// Sources that have not completed; guarded by `lock`.
    @usableFromInline @exclusivity(unchecked) var active: Int

    @inlinable
    init(sources: Int) {
        active = sources
        super.init()
    }

    /// Forwards one source's event. A source that completes ends its own part (so what it
    /// holds is released at once, as RAC's flatten does); the last completion, or the first
    /// error, ends the whole merge.
    @inlinable
    func forward<Value>(
        _ event: Event<Value>, _ observer: Sink<Value>, _ part: CompoundDisposable, _ lifetime: CompoundDisposable
    ) {
        lock.lock()
        if done {
            lock.unlock()
            return
        }
        switch event {
        case .next:
            observer(event)
            lock.unlock()
        case .error:
            finishLocked(event, observer, lifetime)
        case .completed:
            active -= 1
            if active == 0 {
                finishLocked(event, observer, lifetime)
            } else {
                lock.unlock()
                lifetime.end(part)
            }
        }
    }
}

/// State of `Signal.concat(_:)` over a collection: which signal is next, and a trampoline
/// so a run of signals that complete synchronously never deepens the stack.
///
/// Only one source is subscribed at a time, so its events need no lock. Moving on is a
/// drain on an atomic counter: each request to advance increments it, and only the caller
/// that moved it from 0 subscribes, in a loop, until every request is served. A source
/// completing inside its own subscription just increments the counter and returns; the
/// loop one frame up subscribes the next one.
@usableFromInline
final class ConcatState<Value>: @unchecked Sendable {
    @usableFromInline let signals: [Signal<Value>]
    /// Index of the next signal to subscribe; touched only by the draining thread.
    @usableFromInline @exclusivity(unchecked) var next = 0
    @usableFromInline let requests = UnsafeAtomicInt(0)

    @inlinable
    init(_ signals: [Signal<Value>]) { self.signals = signals }

    deinit { requests.destroy() }

    /// Subscribes the next signal (or completes after the last one).
    @inlinable
    func advance(_ observer: @escaping Sink<Value>, _ lifetime: CompoundDisposable) {
        if requests.fetchAdd(1) != 0 { return }
        repeat {
            if lifetime.isDisposed { return }
            if next == signals.count {
                observer(.completed)
                return
            }
            let signal = signals[next]
            next += 1
            let part = lifetime.child()
            signal.attach({ event in
                if case .completed = event {
                    lifetime.end(part)
                    self.advance(observer, lifetime)
                } else {
                    observer(event)
                }
            }, part)
        } while requests.fetchSub(1) != 1
    }
}

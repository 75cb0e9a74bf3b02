// withLatestFrom (beyond RAC 2, catalogue §20 ★): each value of the receiver paired with
// the latest of another signal. Its state is `SampleState`, shared with `sample(_:)`.

extension Signal {
    /// On each value of the receiver, sends it paired with the latest value of `other`
    /// (nothing until `other` has sent one). Completes when the receiver completes; an error
    /// from either side is forwarded.
    ///
    /// **RAC:** none (Rx's `withLatestFrom`). **Thread:** the receiver's thread.
    /// **Disposal:** disposes both signals. **Terminates:** when the receiver completes, or
    /// at an error from either.
    @inlinable
    public func withLatestFrom<U>(_ other: Signal<U>) -> Signal<(Value, U)> {
        let source = self
        return AnonymousSignal { observer, lifetime in
            let state = SampleState<U>()
            let otherPart = lifetime.child()
            other.attach({ event in
                state.lock.lock()
                defer { state.lock.unlock() }
                switch event {
                case .next(let u): state.latest = u
                case .error(let e):
                    if !state.done {
                        state.done = true
                        observer(.error(e))
                    }
                case .completed: break
                }
            }, otherPart)
            if lifetime.isDisposed { return }
            source.attach({ event in
                state.lock.lock()
                if state.done {
                    state.lock.unlock()
                    return
                }
                switch event {
                case .next(let v):
                    if let u = state.latest { observer(.next((v, u))) }
                    state.lock.unlock()
                case .error(let e):
                    state.finishLocked(.error(e), observer, lifetime)
                case .completed:
                    state.finishLocked(.completed, observer, lifetime)
                }
            }, lifetime)
        }
    }
}

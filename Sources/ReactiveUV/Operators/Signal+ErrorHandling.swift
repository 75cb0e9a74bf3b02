// Error handling (RACSignal+Operations' catch, catchTo, retry, repeat, try, tryMap).
// Resubscription is a loop, not recursion: a source that fails synchronously forever under
// `retry()` spins in one stack frame until the subscription is disposed.

extension Signal {
    /// On error, subscribes to the signal `handler` returns instead of forwarding the error:
    /// RAC's `-catch:`. Disposal disposes the source and the replacement.
    public func `catch`(_ handler: @escaping (any Error) -> Signal<Value>) -> Signal<Value> {
        let source = self
        return AnonymousSignal { observer, lifetime in
            let part = lifetime.child()
            source.attach({ event in
                if case .error(let e) = event {
                    lifetime.end(part)
                    if !lifetime.isDisposed { handler(e).attach(observer, lifetime) }
                    return
                }
                observer(event)
            }, part)
        }
    }

    /// ``catch(_:)`` with a fixed replacement: RAC's `-catchTo:`.
    public func catchTo(_ signal: Signal<Value>) -> Signal<Value> { self.catch { _ in signal } }

    /// On error, resubscribes up to `count` times (at most `count + 1` subscriptions), then
    /// forwards the error; `count == 0` retries forever: RAC's `-retry:`. Values of every
    /// attempt are forwarded; completion ends it.
    public func retry(_ count: Int) -> Signal<Value> {
        if count < 0 { return .error(SignalError.invalidArgument("retry(\(count)): the count must not be negative")) }
        return resubscribing(onError: true, limit: count)
    }

    /// Retries forever: RAC's `-retry`.
    public func retry() -> Signal<Value> { retry(0) }

    /// Resubscribes each time the receiver completes (so it never completes); an error ends
    /// it: RAC's `-repeat`.
    public func `repeat`() -> Signal<Value> { resubscribing(onError: false, limit: 0) }

    /// The loop behind `retry` and `repeat`.
    func resubscribing(onError: Bool, limit: Int) -> Signal<Value> {
        let source = self
        return AnonymousSignal { observer, lifetime in
            let state = ResubscribeState()
            func attempt() {
                state.trampoline(lifetime) {
                    let part = lifetime.child()
                    source.attach({ event in
                        let restart: Bool
                        switch event {
                        case .next: restart = false
                        case .error: restart = onError && (limit == 0 || state.retries < limit)
                        case .completed: restart = !onError
                        }
                        if !restart {
                            observer(event)
                            return
                        }
                        state.retries += 1
                        lifetime.end(part)
                        attempt()
                    }, part)
                }
            }
            attempt()
        }
    }

    /// Passes each value through while `body` does not throw; the first thrown error fails
    /// the signal and disposes the source: RAC's `-try:`.
    public func `try`(_ body: @escaping (Value) throws -> Void) -> Signal<Value> {
        tryMap { v in
            try body(v)
            return v
        }
    }

    /// Passes each value through while `body` returns `true`; the first `false` fails the
    /// signal with the error `body` wrote and disposes the source: RAC's `-try:` in its own
    /// shape (`BOOL (^)(id value, NSError **errorPtr)`), for code ported line by line.
    ///
    /// ```swift
    /// lines.try { line, error in
    ///     if line.isEmpty { error = ParseError.emptyLine; return false }
    ///     return true
    /// }
    /// ```
    ///
    /// Events arrive on the source's thread. A `false` without an error fails with
    /// ``SignalError/invalidArgument(_:)`` (RAC sent a nil error). Disposal disposes the
    /// source. Terminates with the source, or at the first `false`.
    ///
    /// - Parameter body: checks a value; returns `false` (setting `error`) to fail.
    /// - Returns: the values that passed, then the source's terminal event or the error.
    public func `try`(_ body: @escaping (Value, inout (any Error)?) -> Bool) -> Signal<Value> {
        tryMap { v in
            var error: (any Error)?
            if body(v, &error) { return v }
            throw error ?? SignalError.invalidArgument("try: the block returned false without setting an error")
        }
    }

    /// Maps each value with a throwing transform; a thrown error fails the signal and
    /// disposes the source: RAC's `-tryMap:`.
    public func tryMap<U>(_ transform: @escaping (Value) throws -> U) -> Signal<U> {
        let source = self
        return AnonymousSignal { observer, lifetime in
            var done = false
            source.attach({ event in
                if done { return }
                switch event {
                case .next(let v):
                    do {
                        observer(.next(try transform(v)))
                    } catch {
                        done = true
                        observer(.error(error))
                        lifetime.dispose()
                    }
                case .error(let e): observer(.error(e))
                case .completed: observer(.completed)
                }
            }, lifetime)
        }
    }
}

/// State of `retry`/`repeat`/`retry(when:)`: whether an attempt is being subscribed on this
/// stack, and whether another was requested meanwhile (turning recursion into a loop).
class ResubscribeState: LockedState, @unchecked Sendable {
    var attaching = false
    var again = false
    var retries = 0

    /// Runs `attempt`, and again each time it was requested from inside the attempt on this
    /// stack, until no new request came or `lifetime` ended. A request made while an attempt
    /// is being subscribed only marks it; the running loop picks it up.
    ///
    /// - Returns: whether this call ran the loop (`false`: the request was deferred).
    @discardableResult
    func trampoline(_ lifetime: CompoundDisposable, _ attempt: () -> Void) -> Bool {
        lock.lock()
        if attaching {
            again = true
            lock.unlock()
            return false
        }
        attaching = true
        lock.unlock()
        repeat {
            lock.lock()
            again = false
            lock.unlock()
            if lifetime.isDisposed { break }
            attempt()
            lock.lock()
            let more = again
            lock.unlock()
            if !more { break }
        } while true
        lock.lock()
        attaching = false
        lock.unlock()
        return true
    }
}

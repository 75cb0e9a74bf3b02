import Glibc

// Error handling (RACSignal+Operations' catch, catchTo, retry, repeat, try, tryMap; beyond
// RAC: retry(when:) and retry with exponential backoff, so every retry is in this file).
// Resubscription is a loop, not recursion: a source that fails synchronously forever under
// `retry()` spins in one stack frame until the subscription is disposed.

extension Signal {
    /// On error, subscribes to the signal `handler` returns instead of forwarding the error:
    /// RAC's `-catch:`. Disposal disposes the source and the replacement.
    ///
    /// **RAC:** `-catch:`. **Thread:** the source's, then the replacement's. **Disposal:**
    /// disposes the source or the replacement signal. **Terminates:** when the source
    /// completes, or when the replacement terminates.
    @inlinable
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
    ///
    /// **RAC:** `-catchTo:`. **Thread:** the source's, then the replacement's.
    /// **Disposal:** disposes the source or the replacement signal. **Terminates:** when
    /// the source completes, or when the replacement terminates.
    @inlinable
    public func catchTo(_ signal: Signal<Value>) -> Signal<Value> { self.catch { _ in signal } }

    /// On error, resubscribes up to `count` times (at most `count + 1` subscriptions), then
    /// forwards the error; `count == 0` retries forever: RAC's `-retry:`. Values of every
    /// attempt are forwarded; completion ends it.
    ///
    /// **RAC:** `-retry:`. **Thread:** each attempt's. **Disposal:** disposes the current
    /// attempt and stops retrying. **Terminates:** at completion, or with the error once
    /// `count` retries are spent.
    @inlinable
    public func retry(_ count: Int) -> Signal<Value> {
        if count < 0 { return .error(SignalError.invalidArgument("retry(\(count)): the count must not be negative")) }
        return resubscribing(onError: true, limit: count)
    }

    /// Retries forever: RAC's `-retry`.
    ///
    /// **RAC:** `-retry`. **Thread:** each attempt's. **Disposal:** disposes the current
    /// attempt and stops retrying. **Terminates:** at completion; never with an error.
    @inlinable
    public func retry() -> Signal<Value> { retry(0) }

    /// Resubscribes each time the receiver completes (so it never completes); an error ends
    /// it: RAC's `-repeat`.
    ///
    /// **RAC:** `-repeat`. **Thread:** each round's. **Disposal:** disposes the current
    /// round and stops repeating. **Terminates:** at the first error; never completes.
    @inlinable
    public func `repeat`() -> Signal<Value> { resubscribing(onError: false, limit: 0) }

    /// The loop behind `retry` and `repeat`. Inlinable so that the per-value closure is
    /// formed, specialized, in the caller's module (formed in the library's generic copy,
    /// every value of a retried signal went through generic code, a runtime metadata
    /// lookup per value); the trampoline, once per attempt, stays in the library.
    @inlinable
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
    ///
    /// **RAC:** `-try:`. **Thread:** events arrive on the source's thread. **Disposal:**
    /// disposes the source. **Terminates:** with the source, or at the first thrown error
    /// (the source is disposed).
    @inlinable
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
    @inlinable
    public func `try`(_ body: @escaping (Value, inout (any Error)?) -> Bool) -> Signal<Value> {
        tryMap { v in
            var error: (any Error)?
            if body(v, &error) { return v }
            throw error ?? SignalError.invalidArgument("try: the block returned false without setting an error")
        }
    }

    /// Maps each value with a throwing transform; a thrown error fails the signal and
    /// disposes the source: RAC's `-tryMap:`.
    ///
    /// **RAC:** `-tryMap:`. **Thread:** events arrive on the source's thread. **Disposal:**
    /// disposes the source. **Terminates:** with the source, or at the first thrown error
    /// (the source is disposed).
    @inlinable
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

extension Signal {
    /// Resubscribes on error when the signal `handler` builds from the errors sends a
    /// value; it ends with the error when that signal completes or fails (Rx's `retryWhen`).
    ///
    /// **RAC:** none (Rx's `retryWhen`). **Thread:** each attempt's. **Disposal:** disposes
    /// the current attempt and the handler's signal. **Terminates:** at completion, or when
    /// the handler's signal completes (with the last error) or fails.
    ///
    /// - Parameter handler: receives the signal of errors; returns the signal of retries.
    @inlinable
    public func retry<T>(when handler: @escaping (Signal<any Error>) -> Signal<T>) -> Signal<Value> {
        let source = self
        return AnonymousSignal { observer, lifetime in
            let errors = Subject<any Error>()
            let state = RetryWhenState<Value>()
            // Resubscription is trampolined as in `retry(_:)`: a retry requested while an
            // attempt is being subscribed on this stack loops instead of recursing.
            var attempt: () -> Void = {}
            attempt = {
                let ranLoop = state.trampoline(lifetime) {
                    let part = lifetime.child()
                    source.attach({ event in
                        if case .error(let e) = event {
                            state.lock.lock()
                            state.lastError = e
                            state.lock.unlock()
                            lifetime.end(part)
                            errors.sendNext(e)
                            return
                        }
                        observer(event)
                    }, part)
                }
                guard ranLoop else { return }
                state.lock.lock()
                let handlerEnded = state.handlerEnded
                state.handlerEnded = nil
                state.lock.unlock()
                // The handler ended while an attempt it asked for was pending: that attempt
                // ran first (as it would have, recursively); now end.
                if let handlerEnded {
                    observer(handlerEnded)
                    lifetime.dispose()
                }
            }
            let finish: (Event<Value>) -> Void = { event in
                state.lock.lock()
                if state.attaching {
                    state.handlerEnded = event
                    state.lock.unlock()
                    return
                }
                state.lock.unlock()
                observer(event)
                lifetime.dispose()
            }
            let retries = handler(errors)
            let retryPart = lifetime.child()
            retries.attach({ event in
                switch event {
                case .next:
                    if !lifetime.isDisposed { attempt() }
                case .completed:
                    state.lock.lock()
                    let e = state.lastError
                    state.lock.unlock()
                    finish(e.map { .error($0) } ?? .completed)
                case .error(let e):
                    finish(.error(e))
                }
            }, retryPart)
            lifetime.add(Disposable { attempt = {} })
            if !lifetime.isDisposed { attempt() }
        }
    }

    /// Retries with exponential backoff: after the n-th error waits
    /// `min(initialDelay * multiplier^(n-1), maxDelay)` seconds on `scheduler` and
    /// resubscribes, at most `maxRetries` times; then the error is forwarded.
    ///
    /// **RAC:** none (exponential backoff, beyond RAC). **Thread:** each attempt's.
    /// **Disposal:** disposes the current attempt and cancels a pending wait.
    /// **Terminates:** at completion, or with the error after `maxRetries` retries; an
    /// immediate scheduler fails it at once with `SignalError.invalidScheduler`.
    @inlinable
    public func retry(
        maxRetries: Int, initialDelay: Double, multiplier: Double = 2, maxDelay: Double = .infinity,
        on scheduler: Scheduler
    ) -> Signal<Value> {
        if scheduler.isImmediate {
            return .error(SignalError.invalidScheduler("retry with backoff needs a scheduler that keeps time"))
        }
        let source = self
        return AnonymousSignal { observer, lifetime in
            var attempts = 0
            func attempt() {
                let part = lifetime.child()
                source.attach({ event in
                    if case .error = event, attempts < maxRetries {
                        attempts += 1
                        lifetime.end(part)
                        let delay = Swift.min(initialDelay * pow(multiplier, Double(attempts - 1)), maxDelay)
                        let timer = SerialDisposable()
                        lifetime.add(timer)
                        timer.inner = scheduler.afterDelay(delay) {
                            lifetime.remove(timer)
                            if !lifetime.isDisposed { attempt() }
                        }
                        return
                    }
                    observer(event)
                }, part)
            }
            attempt()
        }
    }
}

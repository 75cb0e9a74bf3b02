// Operators beyond RAC 2 (catalogue §20, the ones marked ★): withLatestFrom, compactMap
// (in Transforming), debounce, retry(when:) and exponential backoff, using, share,
// collect(count:). RAC's own vocabulary stays for everything RAC had.

extension Signal {
    /// On each value of the receiver, sends it paired with the latest value of `other`
    /// (nothing until `other` has sent one). Completes when the receiver completes; an error
    /// from either side is forwarded.
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

    /// Sends a value only after `interval` seconds pass without a newer one (Rx's
    /// `debounce`). RAC's ``throttle(_:on:)`` is the same idea under RAC's name and always
    /// sends a held value on completion; `debounce` drops it unless `flushOnCompletion`.
    ///
    /// `-a-b-----c-|` → `debounce(2 ticks)` → `-----b-----|`
    @inlinable
    public func debounce(_ interval: Double, on scheduler: Scheduler, flushOnCompletion: Bool = false) -> Signal<Value> {
        debounceCore(interval, valuesPassingTest: { _ in true }, on: scheduler, flushOnCompletion: flushOnCompletion)
    }

    /// Resubscribes on error when the signal `handler` builds from the errors sends a
    /// value; it ends with the error when that signal completes or fails (Rx's `retryWhen`).
    ///
    /// - Parameter handler: receives the signal of errors; returns the signal of retries.
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

    /// Creates a resource at each subscription and disposes it when the subscription ends
    /// (Rx's `using`).
    ///
    /// - Parameters:
    ///   - resource: makes the resource.
    ///   - signal: builds the signal that uses it.
    public static func using<R: Disposable>(
        _ resource: @escaping () throws -> R, _ signal: @escaping (R) -> Signal<Value>
    ) -> Signal<Value> {
        AnonymousSignal { observer, lifetime in
            let r: R
            do { r = try resource() } catch {
                observer(.error(error))
                return
            }
            lifetime.add(r)
            signal(r).attach(observer, lifetime)
        }
    }

    /// Shares one subscription to the receiver among subscribers, replaying the last
    /// `replay` values to late ones (Rx's `share(replay:scope:)`).
    ///
    /// With `.whileConnected` the source is disposed when the last subscriber leaves and a
    /// later subscriber starts it again (with a fresh buffer); with `.forever` it connects at
    /// the first subscriber and stays connected (like ``replayLazily()`` with a bound).
    public func share(replay: Int = 0, scope: ShareScope = .whileConnected) -> Signal<Value> {
        let source = self
        let state = ShareState<Value>()
        return AnonymousSignal { observer, lifetime in
            state.lock.lock()
            if state.subject == nil || (scope == .whileConnected && state.subject!.hasTerminated) {
                state.subject = ReplaySubject(capacity: replay)
                state.connection = nil
            }
            let subject = state.subject!
            state.subscribers += 1
            let connect = state.connection == nil
            if connect { state.connection = SerialDisposable() }
            let connection = state.connection!
            state.lock.unlock()
            subject.attach(observer, lifetime)
            if connect { connection.inner = source.subscribe(subject) }
            lifetime.add(Disposable {
                state.lock.lock()
                state.subscribers -= 1
                let last = state.subscribers == 0 && scope == .whileConnected
                if last {
                    state.subject = nil
                    state.connection = nil
                }
                state.lock.unlock()
                if last { connection.dispose() }
            })
        }
    }

    /// Groups values into arrays of `count` (the last one may be shorter, sent on
    /// completion). A count below 1 fails with ``SignalError/invalidArgument(_:)``.
    public func collect(count: Int) -> Signal<[Value]> {
        if count < 1 { return .error(SignalError.invalidArgument("collect(count: \(count)): the count must be positive")) }
        let source = self
        return AnonymousSignal { observer, lifetime in
            var buffer: [Value] = []
            buffer.reserveCapacity(count)
            source.attach({ event in
                switch event {
                case .next(let v):
                    buffer.append(v)
                    if buffer.count == count {
                        let full = buffer
                        buffer.removeAll(keepingCapacity: true)
                        observer(.next(full))
                    }
                case .error(let e): observer(.error(e))
                case .completed:
                    if !buffer.isEmpty { observer(.next(buffer)) }
                    if !lifetime.isDisposed { observer(.completed) }
                }
            }, lifetime)
        }
    }
}

/// How long ``Signal/share(replay:scope:)`` keeps its source connected.
public enum ShareScope: Sendable {
    /// Until the last subscriber leaves; a later subscriber reconnects.
    case whileConnected
    /// From the first subscriber on, for good.
    case forever
}

final class ShareState<Value>: LockedState, @unchecked Sendable {
    var subject: ReplaySubject<Value>?
    var connection: SerialDisposable?
    var subscribers = 0
}

final class RetryWhenState<Value>: ResubscribeState, @unchecked Sendable {
    var lastError: (any Error)?
    /// The handler's terminal event, held while an attempt is being subscribed.
    var handlerEnded: Event<Value>?
}

import Glibc

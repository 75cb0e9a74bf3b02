// Transforming values (RACStream's map, mapReplace, scan, combinePreviousWithStart:reduce:,
// startWith:, materialize/dematerialize; compactMap beyond RAC) and RACSignal's side-effect
// operators (doNext:, doError:, doCompleted:, finally:, initially:, on(…)). `map`,
// `compactMap`, `scan` and `combinePrevious` are stages (`Engine/Map.swift`, ...) that
// `StageSignal` runs; the others a closure per stage. No lock: a synchronous chain inherits
// its source's serialization. Dropping
// values (filter, ignore, ignoreValues) is in Signal+Filtering.swift.

extension Signal {
    /// Transforms each value: RAC's `-map:`. Terminal events pass through.
    ///
    /// `--1--2--|` → `map { $0 * 10 }` → `--10--20--|`
    ///
    /// **RAC:** `-map:`. **Thread:** events arrive on the source's thread. **Disposal:**
    /// disposes the source. **Terminates:** when the source terminates; errors pass through
    /// at once.
    @inlinable
    public func map<U>(_ transform: @escaping (Value) -> U) -> Signal<U> {
        StageSignal(self, MapStage(transform))
    }

    /// Replaces every value with `value`: RAC's `-mapReplace:`.
    ///
    /// **RAC:** `-mapReplace:`. **Thread:** events arrive on the source's thread.
    /// **Disposal:** disposes the source. **Terminates:** when the source terminates;
    /// errors pass through at once.
    @inlinable
    public func mapReplace<U>(_ value: U) -> Signal<U> { map { _ in value } }

    /// Maps each value and drops the `nil` results.
    ///
    /// **RAC:** none (beyond RAC: `-map:` then `-filter:` without the nils). **Thread:**
    /// events arrive on the source's thread. **Disposal:** disposes the source.
    /// **Terminates:** when the source terminates; errors pass through at once.
    @inlinable
    public func compactMap<U>(_ transform: @escaping (Value) -> U?) -> Signal<U> {
        StageSignal(self, CompactMapStage(transform))
    }

    /// Sends every running accumulation (the start value itself is not sent); the state is
    /// per subscription: RAC's `-scanWithStart:reduce:`.
    ///
    /// **RAC:** `-scanWithStart:reduce:`. **Thread:** events arrive on the source's thread.
    /// **Disposal:** disposes the source. **Terminates:** when the source terminates;
    /// errors pass through at once.
    @inlinable
    public func scan<A>(start: A, reduce: @escaping (A, Value) -> A) -> Signal<A> {
        StageSignal(self, ScanStage(start, reduce))
    }

    /// ``scan(start:reduce:)`` whose block also gets the zero-based index of the value.
    ///
    /// **RAC:** `-scanWithStart:reduceWithIndex:`. **Thread:** events arrive on the
    /// source's thread. **Disposal:** disposes the source. **Terminates:** when the source
    /// terminates; errors pass through at once.
    @inlinable
    public func scan<A>(start: A, reduceWithIndex reduce: @escaping (A, Value, Int) -> A) -> Signal<A> {
        StageSignal(self, IndexedScanStage(start, reduce))
    }

    /// Sends `reduce(previous, current)`, with `start` as the first `previous`; results are
    /// not fed back: RAC's `-combinePreviousWithStart:reduce:`.
    ///
    /// **RAC:** `-combinePreviousWithStart:reduce:`. **Thread:** events arrive on the
    /// source's thread. **Disposal:** disposes the source. **Terminates:** when the source
    /// terminates; errors pass through at once.
    @inlinable
    public func combinePrevious<U>(start: Value, reduce: @escaping (Value, Value) -> U) -> Signal<U> {
        StageSignal(self, CombinePreviousStage(start, reduce))
    }

    /// Sends `value` on subscription, then the receiver's events: RAC's `-startWith:`.
    ///
    /// **RAC:** `-startWith:`. **Thread:** the start value on the subscribing thread, then
    /// the source's events on its thread. **Disposal:** disposes the source.
    /// **Terminates:** when the source terminates; errors pass through at once.
    @inlinable
    public func startWith(_ value: Value) -> Signal<Value> {
        Signal.return(value).concat(self)
    }

    /// Turns every event into a value, then completes after the terminal one (an error
    /// becomes a value): RAC's `-materialize`.
    ///
    /// **RAC:** `-materialize`. **Thread:** events arrive on the source's thread.
    /// **Disposal:** disposes the source. **Terminates:** after sending the source's
    /// terminal event as a value, then completing; it never fails.
    @inlinable
    public func materialize() -> Signal<Event<Value>> {
        let upstream = self
        return AnonymousSignal { observer, lifetime in
            upstream.attach({ event in
                observer(.next(event))
                if event.isTerminating { observer(.completed) }
            }, lifetime)
        }
    }

    /// Runs `action` before forwarding each value: RAC's `-doNext:`.
    ///
    /// **RAC:** `-doNext:`. **Thread:** the action and events run on the source's thread.
    /// **Disposal:** disposes the source. **Terminates:** when the source terminates;
    /// errors pass through at once.
    @inlinable
    public func doNext(_ action: @escaping (Value) -> Void) -> Signal<Value> {
        on(next: action)
    }

    /// Runs `action` before forwarding the error: RAC's `-doError:`.
    ///
    /// **RAC:** `-doError:`. **Thread:** the action and events run on the source's thread.
    /// **Disposal:** disposes the source. **Terminates:** when the source terminates;
    /// errors pass through at once.
    @inlinable
    public func doError(_ action: @escaping (any Error) -> Void) -> Signal<Value> {
        on(error: action)
    }

    /// Runs `action` before forwarding completion: RAC's `-doCompleted:`.
    ///
    /// **RAC:** `-doCompleted:`. **Thread:** the action and events run on the source's
    /// thread. **Disposal:** disposes the source. **Terminates:** when the source
    /// terminates; errors pass through at once.
    @inlinable
    public func doCompleted(_ action: @escaping () -> Void) -> Signal<Value> {
        on(completed: action)
    }

    /// Runs `action` on completion **or** error, before forwarding it; not on disposal
    /// (RAC's `-finally:`; see ``on(subscribed:next:error:completed:terminated:disposed:)`` for that).
    ///
    /// **RAC:** `-finally:`. **Thread:** the action and events run on the source's thread.
    /// **Disposal:** disposes the source; the action does not run on disposal.
    /// **Terminates:** when the source terminates; errors pass through at once.
    @inlinable
    public func finally(_ action: @escaping () -> Void) -> Signal<Value> {
        on(terminated: action)
    }

    /// Side effects for each kind of event, run before the event is forwarded, plus hooks
    /// for subscription and disposal.
    ///
    /// **RAC:** none (ReactiveSwift's `on(…)`; RAC had `-doNext:`, `-doError:`,
    /// `-doCompleted:`, `-initially:`, `-finally:`). **Thread:** `subscribed` on the
    /// subscribing thread; the others on the source's thread. **Disposal:** runs
    /// `disposed`, then disposes the source. **Terminates:** when the source terminates;
    /// errors pass through at once.
    ///
    /// - Parameters:
    ///   - subscribed: runs at each subscription, before the receiver is subscribed.
    ///   - next: before each value.
    ///   - error: before the error.
    ///   - completed: before completion.
    ///   - terminated: before either terminal event.
    ///   - disposed: when the subscription ends, by disposal or by a terminal event.
    @inlinable
    public func on(
        subscribed: (() -> Void)? = nil, next: ((Value) -> Void)? = nil, error: ((any Error) -> Void)? = nil,
        completed: (() -> Void)? = nil, terminated: (() -> Void)? = nil, disposed: (() -> Void)? = nil
    ) -> Signal<Value> {
        let upstream = self
        return AnonymousSignal { observer, lifetime in
            subscribed?()
            if let disposed { lifetime.add(Disposable(disposed)) }
            upstream.attach({ event in
                switch event {
                case .next(let v): next?(v)
                case .error(let e):
                    error?(e)
                    terminated?()
                case .completed:
                    completed?()
                    terminated?()
                }
                observer(event)
            }, lifetime)
        }
    }

    /// Runs `action` at each subscription, before the receiver's own subscription side
    /// effects: RAC's `-initially:`.
    ///
    /// **RAC:** `-initially:`. **Thread:** the action on the subscribing thread, before the
    /// source is subscribed; events on the source's thread. **Disposal:** disposes the
    /// source. **Terminates:** when the source terminates; errors pass through at once.
    @inlinable
    public func initially(_ action: @escaping () -> Void) -> Signal<Value> {
        let upstream = self
        return Signal.defer {
            action()
            return upstream
        }
    }
}

extension Signal {
    /// Inverse of ``materialize()``: a value event becomes a value, a completed event
    /// completes, an error event fails; anything after is ignored: RAC's `-dematerialize`.
    ///
    /// **RAC:** `-dematerialize`. **Thread:** events arrive on the source's thread.
    /// **Disposal:** disposes the source. **Terminates:** at the first terminal event sent
    /// as a value, or when the source terminates.
    @inlinable
    public func dematerialize<U>() -> Signal<U> where Value == Event<U> {
        let upstream = self
        return AnonymousSignal { observer, lifetime in
            let done = Cell(false)
            upstream.attach({ event in
                if done.value { return }
                switch event {
                case .next(let inner):
                    if inner.isTerminating { done.value = true }
                    observer(inner)
                    if done.value { lifetime.dispose() }
                case .error(let e):
                    done.value = true
                    observer(.error(e))
                case .completed:
                    done.value = true
                    observer(.completed)
                }
            }, lifetime)
        }
    }
}

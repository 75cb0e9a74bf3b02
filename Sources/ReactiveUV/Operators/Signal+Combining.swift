// Combining several signals (RACSignal+Operations' merge, concat, zip, combineLatest,
// sample, takeUntil, then). Where several sources meet, a per-subscription lock serializes
// what goes downstream; the lock is re-entrant, so a downstream callback may send into one
// of the sources on the same thread.

extension Signal {
    /// Forwards the receiver, then subscribes to `next` when it completes: RAC's `-concat:`.
    /// An error from the receiver ends everything and `next` is never subscribed.
    ///
    /// `--1--|` + `--2--|` → `--1----2--|`
    ///
    /// **RAC:** `-concat:`. **Thread:** each source's own. **Disposal:** disposes the active
    /// source. **Terminates:** when `next` terminates; at once on the receiver's error.
    @inlinable
    public func concat(_ next: Signal<Value>) -> Signal<Value> {
        let first = self
        return AnonymousSignal { observer, lifetime in
            let part = lifetime.child()
            first.attach({ event in
                switch event {
                case .completed:
                    lifetime.end(part)
                    if !lifetime.isDisposed { next.attach(observer, lifetime) }
                default: observer(event)
                }
            }, part)
        }
    }

    /// Concatenates signals one after another: RAC's `+concat:`.
    ///
    /// Subscribes to each signal when the one before it completes (in the completing
    /// signal's thread); its events arrive on whichever thread that signal sends them. An
    /// error ends it and the later signals are never subscribed; it completes after the
    /// last one. An empty collection completes at once. A long run of signals that complete
    /// synchronously does not deepen the stack (a trampoline). Disposing
    /// disposes the active signal.
    ///
    /// `--1--|` + `--2--|` + `--3|` → `--1----2----3|`
    ///
    /// **RAC:** `+concat:`. **Thread:** each source's own. **Disposal:** disposes the active
    /// source. **Terminates:** after the last one completes; at once on an error.
    @inlinable
    public static func concat<S: Sequence>(_ signals: S) -> Signal<Value> where S.Element == Signal<Value> {
        let list = Array(signals)
        if list.isEmpty { return .empty() }
        return AnonymousSignal { observer, lifetime in
            ConcatState(list).advance(observer, lifetime)
        }
    }

    /// Ignores the receiver's values; when it completes, calls `block` and subscribes to the
    /// signal it returns. An error ends it and `block` is never called: RAC's `-then:`.
    ///
    /// **RAC:** `-then:`. **Thread:** the receiver's, then the new signal's. **Disposal:**
    /// disposes the active source. **Terminates:** when the new signal terminates; at once on
    /// the receiver's error.
    @inlinable
    public func then<U>(_ block: @escaping () -> Signal<U>) -> Signal<U> {
        let first = self
        return AnonymousSignal { observer, lifetime in
            let part = lifetime.child()
            first.attach({ event in
                switch event {
                case .next: break
                case .error(let e): observer(.error(e))
                case .completed:
                    lifetime.end(part)
                    if !lifetime.isDisposed { block().attach(observer, lifetime) }
                }
            }, part)
        }
    }

    /// Merges the receiver with `other`: RAC's `-merge:` (the same operator as `Signal.merge([self, other])`).
    ///
    /// **RAC:** `-merge:`. **Thread:** the sending source's, serialized. **Disposal:**
    /// disposes both sources. **Terminates:** when both have completed; at once on an error.
    @inlinable
    public func merge(_ other: Signal<Value>) -> Signal<Value> { Signal.merge([self, other]) }

    /// Subscribes to each signal in order and forwards all their values: RAC's `+merge:`.
    ///
    /// Events arrive on the thread of the source that sent them, serialized by a
    /// per-subscription lock (re-entrant: a subscriber may send into a source). Completes
    /// after all have completed; the first error ends it and disposes the rest (a signal
    /// that fails synchronously prevents the later ones from being subscribed). A source
    /// that completes is disposed at once. An empty collection completes at once.
    ///
    /// `--1----3--|` + `----2----|` → `--1-2--3--|`
    ///
    /// **RAC:** `+merge:`. **Thread:** the sending source's, serialized. **Disposal:**
    /// disposes every source. **Terminates:** when all have completed; at once on an error.
    @inlinable
    public static func merge<S: Sequence>(_ signals: S) -> Signal<Value> where S.Element == Signal<Value> {
        let list = Array(signals)
        if list.isEmpty { return .empty() }
        return AnonymousSignal { observer, lifetime in
            let state = MergeState(sources: list.count)
            for signal in list {
                if lifetime.isDisposed { return }
                let part = lifetime.child()
                signal.attach({ state.forward($0, observer, part, lifetime) }, part)
            }
        }
    }

    /// Pairs the n-th values of both sides: RAC's `-zipWith:` (the same operator as
    /// `Signal.zip(self, other)`).
    ///
    /// Completes as soon as one side has completed and has nothing queued; an error from
    /// either side is forwarded at once, even with queued values. Disposes both sides.
    ///
    /// **RAC:** `-zipWith:`. **Thread:** the thread of the source whose value completes a
    /// pair, serialized. **Disposal:** disposes both sides. **Terminates:** when a completed
    /// side has nothing queued; at once on an error.
    @inlinable
    public func zip<U>(with other: Signal<U>) -> Signal<(Value, U)> {
        Signal<(Value, U)>.zip(self, other)
    }

    /// Sends the latest values of both sides once both have sent, then on every value
    /// from either: RAC's `-combineLatestWith:` (the same operator as
    /// `Signal.combineLatest(self, other)`). Completes only when **both** complete.
    ///
    /// **RAC:** `-combineLatestWith:`. **Thread:** the sending side's, serialized.
    /// **Disposal:** disposes both sides. **Terminates:** when both have completed; at once
    /// on an error.
    @inlinable
    public func combineLatest<U>(with other: Signal<U>) -> Signal<(Value, U)> {
        Signal<(Value, U)>.combineLatest(self, other)
    }

    /// On each value of `sampler`, sends the receiver's latest value (nothing before the
    /// receiver's first value; repeats when it is silent). Completes when **either** side
    /// completes; an error from either is forwarded: RAC's `-sample:`.
    ///
    /// **RAC:** `-sample:`. **Thread:** the sampler's (the receiver's values are kept under a
    /// lock). **Disposal:** disposes both. **Terminates:** when either completes; at once on
    /// an error from either.
    @inlinable
    public func sample<T>(_ sampler: Signal<T>) -> Signal<Value> {
        let source = self
        return AnonymousSignal { observer, lifetime in
            let state = SampleState<Value>()
            let finish: (Event<Value>) -> Void = { event in
                state.lock.lock()
                if state.done {
                    state.lock.unlock()
                    return
                }
                state.finishLocked(event, observer, lifetime)
            }
            source.attach({ event in
                switch event {
                case .next(let v):
                    state.lock.lock()
                    state.latest = v
                    state.lock.unlock()
                default: finish(event)
                }
            }, lifetime)
            if lifetime.isDisposed { return }
            sampler.attach({ event in
                switch event {
                case .next:
                    state.lock.lock()
                    if !state.done, let v = state.latest { observer(.next(v)) }
                    state.lock.unlock()
                case .error(let e): finish(.error(e))
                case .completed: finish(.completed)
                }
            }, lifetime)
        }
    }

    /// Forwards the receiver until `trigger` sends a value or completes, then completes and
    /// disposes both: RAC's `-takeUntil:`. The trigger is subscribed **first**, so a trigger
    /// that fires synchronously means the receiver is never subscribed; trigger errors are
    /// ignored.
    ///
    /// **RAC:** `-takeUntil:`. **Thread:** the receiver's, or the trigger's for the
    /// completion it causes. **Disposal:** disposes both. **Terminates:** when the receiver
    /// terminates or the trigger sends a value or completes.
    @inlinable
    public func takeUntil<T>(_ trigger: Signal<T>) -> Signal<Value> {
        let source = self
        return AnonymousSignal { observer, lifetime in
            let state = SampleState<Value>()
            let triggerPart = lifetime.child()
            trigger.attach({ event in
                if case .error = event { return }
                state.lock.lock()
                if state.done {
                    state.lock.unlock()
                    return
                }
                state.finishLocked(.completed, observer, lifetime)
            }, triggerPart)
            if lifetime.isDisposed { return }
            source.attach({ event in
                state.lock.lock()
                if state.done {
                    state.lock.unlock()
                    return
                }
                if event.isTerminating { state.done = true }
                observer(event)
                state.lock.unlock()
                if event.isTerminating { lifetime.dispose() }
            }, lifetime)
        }
    }

    /// Forwards the receiver's values and error (but **not** its completion) until
    /// `replacement` sends any event; from then on only the replacement's events pass and
    /// the receiver is disposed: RAC's `-takeUntilReplacement:`.
    ///
    /// **RAC:** `-takeUntilReplacement:`. **Thread:** the receiver's, then the replacement's.
    /// **Disposal:** disposes both. **Terminates:** when the replacement terminates; on the
    /// receiver's error before the replacement's first event.
    @inlinable
    public func takeUntilReplacement(_ replacement: Signal<Value>) -> Signal<Value> {
        let source = self
        return AnonymousSignal { observer, lifetime in
            let state = SampleState<Value>()
            let sourcePart = CompoundDisposable()
            replacement.attach({ event in
                state.lock.lock()
                if !state.done {
                    state.done = true
                    state.lock.unlock()
                    sourcePart.dispose()
                    state.lock.lock()
                }
                observer(event)
                state.lock.unlock()
            }, lifetime)
            if lifetime.isDisposed || state.done { return }
            lifetime.add(sourcePart)
            source.attach({ event in
                state.lock.lock()
                defer { state.lock.unlock() }
                if state.done { return }
                if case .completed = event { return }
                observer(event)
            }, sourcePart)
        }
    }
}

extension Signal {
    /// A signal that sends the elements of `array` and completes (RACSequence's `signal`).
    ///
    /// **RAC:** RACSequence's `-signal`. **Thread:** the subscribing thread, synchronously.
    /// **Disposal:** stops sending. **Terminates:** after the last element.
    @inlinable
    public static func fromArray(_ array: [Value]) -> Signal<Value> {
        AnonymousSignal { observer, lifetime in
            for v in array {
                if lifetime.isDisposed { return }
                observer(.next(v))
            }
            if !lifetime.isDisposed { observer(.completed) }
        }
    }

    /// Zips N signals of one type into arrays of their n-th values: RAC's `+zip:`.
    ///
    /// The rules of the typed forms (`Signal.zip(a, b)`): subscribed in order, completes as soon
    /// as a completed source has nothing queued, errors at once, serialized by a lock. One
    /// signal gives 1-element arrays; an empty collection completes at once. Values are kept
    /// typed, not boxed.
    ///
    /// **RAC:** `+zip:`. **Thread:** the thread of the source whose value completes an array,
    /// serialized. **Disposal:** disposes every source. **Terminates:** when a completed
    /// source has nothing queued; at once on an error.
    @inlinable
    public static func zip<S: Sequence>(_ signals: S) -> Signal<[Value]> where S.Element == Signal<Value> {
        let list = Array(signals)
        if list.isEmpty { return .empty() }
        return AnonymousSignal { observer, lifetime in
            let state = ZipArrayState<Value>(count: list.count)
            for index in list.indices {
                if lifetime.isDisposed { return }
                // Each source gets its own part: a source that completes ends only its part.
                list[index].attach({ state.receive($0, at: index, observer, lifetime) }, lifetime.child())
            }
        }
    }

    /// ``zip(_:)`` then `reduce` over each array: RAC's `+zip:reduce:`.
    ///
    /// **RAC:** `+zip:reduce:`. **Thread**, **Disposal**, **Terminates:** as ``zip(_:)``.
    @inlinable
    public static func zip<S: Sequence, U>(_ signals: S, reduce: @escaping ([Value]) -> U) -> Signal<U>
    where S.Element == Signal<Value> {
        zip(signals).map(reduce)
    }

    /// The latest value of every signal as an array, once all have sent, then on every
    /// value of any: RAC's `+combineLatest:`.
    ///
    /// Completes when **all** have completed (even one that never sent); the first error
    /// ends it. Subscribed in order, serialized by a lock; an empty collection completes at
    /// once. Values are kept typed, not boxed, and the array is updated in place when the
    /// subscriber does not keep it.
    ///
    /// **RAC:** `+combineLatest:`. **Thread:** the sending source's, serialized.
    /// **Disposal:** disposes every source. **Terminates:** when all have completed; at once
    /// on an error.
    @inlinable
    public static func combineLatest<S: Sequence>(_ signals: S) -> Signal<[Value]> where S.Element == Signal<Value> {
        let list = Array(signals)
        if list.isEmpty { return .empty() }
        return AnonymousSignal { observer, lifetime in
            let state = CombineLatestArrayState<Value>(count: list.count)
            // It sends every value with `state.lock` held: the subscriber may rely on it.
            if !lifetime.serializeDeliveries(under: state) { return }
            for index in list.indices {
                if lifetime.isDisposed { return }
                list[index].attach({ state.receive($0, at: index, observer, lifetime) }, lifetime.child())
            }
        }
    }

    /// ``combineLatest(_:)`` then `reduce`: RAC's `+combineLatest:reduce:`.
    ///
    /// **RAC:** `+combineLatest:reduce:`. **Thread**, **Disposal**, **Terminates:** as
    /// ``combineLatest(_:)``.
    @inlinable
    public static func combineLatest<S: Sequence, U>(_ signals: S, reduce: @escaping ([Value]) -> U) -> Signal<U>
    where S.Element == Signal<Value> {
        combineLatest(signals).map(reduce)
    }
}

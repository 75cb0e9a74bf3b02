// Dropping values: RACStream's filter:, ignore:, take/skip family (take:, skip:,
// takeUntilBlock:, takeWhileBlock:, skipUntilBlock:, skipWhileBlock:, takeLast:) and
// distinctUntilChanged, and RACSignal's ignoreValues. Counters are decremented before a
// value is forwarded, so a subscriber that sends back into the source from its callback
// (a re-entrant send) sees the right count.

extension Signal {
    /// The first `count` values, then completion; the source is disposed right after the
    /// last one: RAC's `-take:`. `take(0)` completes without subscribing to the source; a
    /// negative count fails with ``SignalError/invalidArgument(_:)``.
    ///
    /// `--1--2--3--` → `take(2)` → `--1--2|`
    ///
    /// **RAC:** `-take:`. **Thread:** events arrive on the source's thread. **Disposal:**
    /// disposes the source. **Terminates:** after the `count`-th value (the source is
    /// disposed then), or when the source terminates.
    @inlinable
    public func take(_ count: Int) -> Signal<Value> {
        if count < 0 { return .error(SignalError.invalidArgument("take(\(count)): the count must not be negative")) }
        if count == 0 { return .empty() }
        let upstream = self
        return AnonymousSignal { observer, lifetime in
            let remaining = Cell(count)
            upstream.attach({ event in
                if remaining.value <= 0 { return }
                switch event {
                case .next(let v):
                    remaining.value -= 1
                    observer(.next(v))
                    if remaining.value == 0 {
                        observer(.completed)
                        lifetime.dispose()
                    }
                case .error, .completed:
                    remaining.value = 0
                    observer(event)
                }
            }, lifetime)
        }
    }

    /// Drops the first `count` values: RAC's `-skip:`. A negative count fails with
    /// ``SignalError/invalidArgument(_:)``.
    ///
    /// **RAC:** `-skip:`. **Thread:** events arrive on the source's thread. **Disposal:**
    /// disposes the source. **Terminates:** when the source terminates; errors pass through
    /// at once.
    @inlinable
    public func skip(_ count: Int) -> Signal<Value> {
        if count < 0 { return .error(SignalError.invalidArgument("skip(\(count)): the count must not be negative")) }
        let upstream = self
        return AnonymousSignal { observer, lifetime in
            let toSkip = Cell(count)
            upstream.attach({ event in
                if case .next = event, toSkip.value > 0 {
                    toSkip.value -= 1
                    return
                }
                observer(event)
            }, lifetime)
        }
    }

    /// Forwards values until `predicate` is true; the matching value is **not** sent; then
    /// completes and disposes the source: RAC's `-takeUntilBlock:`.
    ///
    /// **RAC:** `-takeUntilBlock:`. **Thread:** events arrive on the source's thread.
    /// **Disposal:** disposes the source. **Terminates:** at the first value passing the
    /// test (not sent; the source is disposed), or with the source.
    @inlinable
    public func takeUntilBlock(_ predicate: @escaping (Value) -> Bool) -> Signal<Value> {
        let upstream = self
        return AnonymousSignal { observer, lifetime in
            let done = Cell(false)
            upstream.attach({ event in
                if done.value { return }
                if case .next(let v) = event, predicate(v) {
                    done.value = true
                    observer(.completed)
                    lifetime.dispose()
                    return
                }
                if event.isTerminating { done.value = true }
                observer(event)
            }, lifetime)
        }
    }

    /// Forwards values while `predicate` is true: RAC's `-takeWhileBlock:`.
    ///
    /// **RAC:** `-takeWhileBlock:`. **Thread:** events arrive on the source's thread.
    /// **Disposal:** disposes the source. **Terminates:** at the first value failing the
    /// test (not sent; the source is disposed), or with the source.
    @inlinable
    public func takeWhileBlock(_ predicate: @escaping (Value) -> Bool) -> Signal<Value> {
        takeUntilBlock { !predicate($0) }
    }

    /// Drops values until `predicate` is true; the matching value **is** sent, and all later
    /// ones: RAC's `-skipUntilBlock:`.
    ///
    /// **RAC:** `-skipUntilBlock:`. **Thread:** events arrive on the source's thread.
    /// **Disposal:** disposes the source. **Terminates:** when the source terminates;
    /// errors pass through at once.
    @inlinable
    public func skipUntilBlock(_ predicate: @escaping (Value) -> Bool) -> Signal<Value> {
        let upstream = self
        return AnonymousSignal { observer, lifetime in
            let skipping = Cell(true)
            upstream.attach({ event in
                if skipping.value, case .next(let v) = event {
                    if !predicate(v) { return }
                    skipping.value = false
                }
                observer(event)
            }, lifetime)
        }
    }

    /// Drops values while `predicate` is true: RAC's `-skipWhileBlock:`.
    ///
    /// **RAC:** `-skipWhileBlock:`. **Thread:** events arrive on the source's thread.
    /// **Disposal:** disposes the source. **Terminates:** when the source terminates;
    /// errors pass through at once.
    @inlinable
    public func skipWhileBlock(_ predicate: @escaping (Value) -> Bool) -> Signal<Value> {
        skipUntilBlock { !predicate($0) }
    }

    /// Drops a value equivalent to the last **sent** one; the first value is always sent.
    ///
    /// **RAC:** `-distinctUntilChanged` (with a custom equivalence). **Thread:** events
    /// arrive on the source's thread. **Disposal:** disposes the source. **Terminates:**
    /// when the source terminates; errors pass through at once.
    @inlinable
    public func distinctUntilChanged(by isEquivalent: @escaping (Value, Value) -> Bool) -> Signal<Value> {
        let upstream = self
        return AnonymousSignal { observer, lifetime in
            let last = Cell<Value?>(nil)
            upstream.attach({ event in
                if case .next(let v) = event {
                    if let l = last.value, isEquivalent(l, v) { return }
                    last.value = v
                }
                observer(event)
            }, lifetime)
        }
    }

    /// Buffers the last `count` values and sends them on completion, then completes; on
    /// error sends only the error: RAC's `-takeLast:`.
    ///
    /// **RAC:** `-takeLast:`. **Thread:** the kept values and completion arrive on the
    /// source's thread, at its completion. **Disposal:** disposes the source.
    /// **Terminates:** when the source terminates; errors pass through at once.
    @inlinable
    public func takeLast(_ count: Int) -> Signal<Value> {
        if count < 0 { return .error(SignalError.invalidArgument("takeLast(\(count)): the count must not be negative")) }
        let upstream = self
        return AnonymousSignal { observer, lifetime in
            var buffer: [Value] = []
            upstream.attach({ event in
                switch event {
                case .next(let v):
                    guard count > 0 else { return }
                    if buffer.count == count { buffer.removeFirst() }
                    buffer.append(v)
                case .error: observer(event)
                case .completed:
                    for v in buffer {
                        if lifetime.isDisposed { return }
                        observer(.next(v))
                    }
                    observer(.completed)
                }
            }, lifetime)
        }
    }
}

extension Signal where Value: Equatable {
    /// Drops a value equal to the last **sent** one; the first value is always sent:
    /// RAC's `-distinctUntilChanged`.
    ///
    /// **RAC:** `-distinctUntilChanged`. **Thread:** events arrive on the source's thread.
    /// **Disposal:** disposes the source. **Terminates:** when the source terminates;
    /// errors pass through at once.
    @inlinable
    public func distinctUntilChanged() -> Signal<Value> { distinctUntilChanged(by: ==) }
}

extension Signal {
    /// Keeps the values that pass `isIncluded`: RAC's `-filter:`.
    ///
    /// **RAC:** `-filter:`. **Thread:** events arrive on the source's thread. **Disposal:**
    /// disposes the source. **Terminates:** when the source terminates; errors pass through
    /// at once.
    @inlinable
    public func filter(_ isIncluded: @escaping (Value) -> Bool) -> Signal<Value> {
        StageSignal(self, FilterStage(isIncluded))
    }

    /// Drops every value; forwards the terminal event: RAC's `-ignoreValues`.
    ///
    /// **RAC:** `-ignoreValues`. **Thread:** events arrive on the source's thread.
    /// **Disposal:** disposes the source. **Terminates:** when the source terminates;
    /// errors pass through at once.
    @inlinable
    public func ignoreValues() -> Signal<Value> {
        // `filter`'s stage with a predicate that refuses every value: terminal events pass.
        StageSignal(self, FilterStage { _ in false })
    }
}

extension Signal where Value: Equatable {
    /// Drops values equal to `value`: RAC's `-ignore:`.
    ///
    /// **RAC:** `-ignore:`. **Thread:** events arrive on the source's thread. **Disposal:**
    /// disposes the source. **Terminates:** when the source terminates; errors pass through
    /// at once.
    @inlinable
    public func ignore(_ value: Value) -> Signal<Value> { filter { $0 != value } }
}

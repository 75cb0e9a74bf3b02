// Folding a whole signal into one value (RACSignal+Operations' aggregate, collect,
// defaultIfEmpty, any, all) and collect(count:), which folds it into arrays of a size.

extension Signal {
    /// Folds every value; on completion sends the result (`start` when there were no
    /// values), then completes. An error is forwarded and nothing is sent:
    /// RAC's `-aggregateWithStart:reduce:`.
    ///
    /// **RAC:** `-aggregateWithStart:reduce:`. **Thread:** the result on the source's
    /// thread, at its completion. **Disposal:** disposes the source. **Terminates:** when
    /// the source terminates; errors pass through at once.
    @inlinable
    public func aggregate<A>(start: A, reduce: @escaping (A, Value) -> A) -> Signal<A> {
        aggregate(startFactory: { start }, reduce: reduce)
    }

    /// ``aggregate(start:reduce:)`` whose block also gets the value's index.
    ///
    /// **RAC:** `-aggregateWithStart:reduceWithIndex:`. **Thread:** the result on the
    /// source's thread, at its completion. **Disposal:** disposes the source.
    /// **Terminates:** when the source terminates; errors pass through at once.
    @inlinable
    public func aggregate<A>(start: A, reduceWithIndex reduce: @escaping (A, Value, Int) -> A) -> Signal<A> {
        scan(start: start, reduceWithIndex: reduce).takeLast(1).defaultIfEmpty(start)
    }

    /// ``aggregate(start:reduce:)`` with a fresh start value per subscription (for mutable
    /// accumulators): RAC's `-aggregateWithStartFactory:reduce:`.
    ///
    /// **RAC:** `-aggregateWithStartFactory:reduce:`. **Thread:** the result on the
    /// source's thread, at its completion. **Disposal:** disposes the source.
    /// **Terminates:** when the source terminates; errors pass through at once.
    @inlinable
    public func aggregate<A>(startFactory: @escaping () -> A, reduce: @escaping (A, Value) -> A) -> Signal<A> {
        let upstream = self
        return AnonymousSignal { observer, lifetime in
            var accumulator = startFactory()
            upstream.attach({ event in
                switch event {
                case .next(let v): accumulator = reduce(accumulator, v)
                case .error(let e): observer(.error(e))
                case .completed:
                    observer(.next(accumulator))
                    if !lifetime.isDisposed { observer(.completed) }
                }
            }, lifetime)
        }
    }

    /// One array of every value, sent on completion (`[]` for an empty source): RAC's
    /// `-collect`.
    ///
    /// **RAC:** `-collect`. **Thread:** the array on the source's thread, at its
    /// completion. **Disposal:** disposes the source. **Terminates:** when the source
    /// terminates; errors pass through at once.
    @inlinable
    public func collect() -> Signal<[Value]> {
        aggregate(startFactory: { [Value]() }, reduce: { array, v in
            var a = array
            a.append(v)
            return a
        })
    }

    /// Sends `value` if the receiver completes without sending any value.
    ///
    /// **RAC:** none (Rx's `defaultIfEmpty`). **Thread:** events arrive on the source's
    /// thread. **Disposal:** disposes the source. **Terminates:** when the source
    /// terminates; errors pass through at once.
    @inlinable
    public func defaultIfEmpty(_ value: Value) -> Signal<Value> {
        let upstream = self
        return AnonymousSignal { observer, lifetime in
            var sawValue = false
            upstream.attach({ event in
                switch event {
                case .next: sawValue = true
                case .completed where !sawValue:
                    observer(.next(value))
                    if lifetime.isDisposed { return }
                default: break
                }
                observer(event)
            }, lifetime)
        }
    }

    /// `true` and completion at the first value passing `predicate` (the source is then
    /// disposed); `false` if it completes without one; an **error yields `false`** (it is
    /// swallowed, as in RAC's implementation): RAC's `-any:`.
    ///
    /// **RAC:** `-any:`. **Thread:** events arrive on the source's thread. **Disposal:**
    /// disposes the source. **Terminates:** at the first value passing the test (`true`;
    /// the source is disposed), or at completion (`false`).
    @inlinable
    public func any(_ predicate: @escaping (Value) -> Bool) -> Signal<Bool> {
        let upstream = self
        return AnonymousSignal { observer, lifetime in
            var done = false
            upstream.attach({ event in
                if done { return }
                switch event {
                case .next(let v):
                    if predicate(v) {
                        done = true
                        observer(.next(true))
                        observer(.completed)
                        lifetime.dispose()
                    }
                case .error, .completed:
                    done = true
                    observer(.next(false))
                    observer(.completed)
                }
            }, lifetime)
        }
    }

    /// `true` at the first value at all: RAC's `-any`.
    ///
    /// **RAC:** `-any`. **Thread:** events arrive on the source's thread. **Disposal:**
    /// disposes the source. **Terminates:** at the first value (`true`; the source is
    /// disposed), or at completion (`false`).
    @inlinable
    public func any() -> Signal<Bool> { any { _ in true } }

    /// `false` at the first value failing `predicate` (source disposed); `true` on
    /// completion (so an empty source gives `true`); an **error yields `false`**: RAC's `-all:`.
    ///
    /// **RAC:** `-all:`. **Thread:** events arrive on the source's thread. **Disposal:**
    /// disposes the source. **Terminates:** at the first value failing the test (`false`;
    /// the source is disposed), or at completion (`true`).
    @inlinable
    public func all(_ predicate: @escaping (Value) -> Bool) -> Signal<Bool> {
        let upstream = self
        return AnonymousSignal { observer, lifetime in
            var done = false
            upstream.attach({ event in
                if done { return }
                switch event {
                case .next(let v):
                    if !predicate(v) {
                        done = true
                        observer(.next(false))
                        observer(.completed)
                        lifetime.dispose()
                    }
                case .error:
                    done = true
                    observer(.next(false))
                    observer(.completed)
                case .completed:
                    done = true
                    observer(.next(true))
                    observer(.completed)
                }
            }, lifetime)
        }
    }
}

extension Signal {
    /// Groups values into arrays of `count` (the last one may be shorter, sent on
    /// completion). A count below 1 fails with ``SignalError/invalidArgument(_:)``.
    ///
    /// **RAC:** none (Rx's `buffer(count:)`). **Thread:** events arrive on the source's
    /// thread. **Disposal:** disposes the source. **Terminates:** when the source
    /// terminates; errors pass through at once.
    @inlinable
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

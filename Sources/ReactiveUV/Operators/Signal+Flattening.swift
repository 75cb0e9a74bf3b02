// Signals of signals: RACStream's bind/flattenMap/flatten and RACSignal's flatten:,
// concat, switchToLatest, +switch:cases:default: and +if:then:else:. Implemented directly,
// not through `bind` (RAC's own users measured an order of magnitude lost there).

extension Signal {
    /// Merges a signal of signals, with at most `maxConcurrent` inners subscribed at once
    /// (0 = unlimited): RAC's `-flatten:`. Extra inners wait, FIFO. Completes after the outer
    /// and every inner have completed; any error ends it and disposes the rest.
    ///
    /// **RAC:** `-flatten:` (and `-flatten` for 0). **Thread:** each value on the thread of
    /// the inner that sent it (serialized). **Disposal:** disposes the outer and every
    /// inner subscribed; queued inners are never subscribed. **Terminates:** when the outer
    /// and every inner have completed (in step: inside the last inner's completion), or at
    /// the first error.
    @inlinable
    public func flatten<U>(_ maxConcurrent: Int = 0) -> Signal<U> where Value == Signal<U> {
        let outer = self
        return AnonymousSignal { observer, lifetime in
            let state = FlattenState<U>(maxConcurrent: maxConcurrent, observer: observer, lifetime: lifetime)
            outer.attach({ state.outer($0) }, lifetime.child())
        }
    }

    /// Subscribes to inner signals one after another, in arrival order: RAC's `-concat`
    /// (`flatten(1)`).
    ///
    /// **RAC:** `-concat`. **Thread:** each value on the thread of the inner that sent it.
    /// **Disposal:** disposes the outer and the current inner. **Terminates:** when the
    /// outer and every inner have completed, or at the first error.
    @inlinable
    public func concat<U>() -> Signal<U> where Value == Signal<U> { flatten(1) }

    /// Maps each value to a signal and merges them: RAC's `-flattenMap:`. A `nil` result is
    /// treated as `empty`.
    ///
    /// **RAC:** `-flattenMap:`. **Thread:** each value on the thread of the inner that sent
    /// it (serialized). **Disposal:** disposes the source and every inner. **Terminates:**
    /// when the source and every inner have completed, or at the first error.
    @inlinable
    public func flattenMap<U>(_ transform: @escaping (Value) -> Signal<U>?) -> Signal<U> {
        map { transform($0) ?? Signal<U>.empty() }.flatten()
    }

    /// Forwards the latest inner signal only: a new inner disposes the previous one: RAC's
    /// `-switchToLatest`. Completes when the outer **and** the latest inner have completed;
    /// errors from the outer or the latest inner are forwarded.
    ///
    /// `outer: -A----B---|`, `A: -1--2-3`, `B: --4--|` → `-1--2-4--|` (A's 3 never arrives)
    ///
    /// **RAC:** `-switchToLatest`. **Thread:** the latest inner's thread. **Disposal:**
    /// disposes the outer and the current inner. **Terminates:** when the outer and the
    /// latest inner have completed, or at an error from either.
    @inlinable
    public func switchToLatest<U>() -> Signal<U> where Value == Signal<U> {
        let outer = self
        return AnonymousSignal { observer, lifetime in
            let state = SwitchState<U>(observer: observer, lifetime: lifetime)
            outer.attach({ state.outer($0) }, lifetime.child())
        }
    }

    /// ``switchToLatest()`` over a signal of optional signals: a `nil` inner counts as an
    /// empty signal (it ends the previous inner, sends nothing and is complete at once), as
    /// RAC's `-switchToLatest` accepts nil. Events arrive on the latest inner's thread;
    /// disposal disposes the outer and the current inner; completes when the outer and the
    /// latest inner have completed.
    ///
    /// - Returns: the latest inner's events.
    @inlinable
    public func switchToLatest<U>() -> Signal<U> where Value == Signal<U>? {
        map { $0 ?? Signal<U>.empty() }.switchToLatest()
    }

    /// ``flatten(_:)`` over a signal of optional signals: `nil` inners are skipped, as
    /// RAC's `-flatten:` skips nil.
    ///
    /// - Parameter maxConcurrent: the most inners subscribed at once; 0 for no limit.
    /// - Returns: the inners' events, merged.
    @inlinable
    public func flatten<U>(_ maxConcurrent: Int = 0) -> Signal<U> where Value == Signal<U>? {
        map { $0 ?? Signal<U>.empty() }.flatten(maxConcurrent)
    }

    /// RAC's primitive `-bind:`. `makeBlock` runs once per subscription and returns the
    /// binding block; for each value the binding block returns a signal, which is subscribed
    /// at once and merged. Returning `nil` ends the source side; setting `stop` subscribes to
    /// the returned signal and then disposes the source. Completes when the source side has
    /// ended and every inner has completed; any error is forwarded at once and everything
    /// is disposed.
    ///
    /// **RAC:** `-bind:`. **Thread:** each value on the thread of the inner that sent it.
    /// **Disposal:** disposes the source and every inner. **Terminates:** when the source
    /// side has ended and every inner has completed, or at the first error.
    @inlinable
    public func bind<U>(_ makeBlock: @escaping () -> (Value, inout Bool) -> Signal<U>?) -> Signal<U> {
        let source = self
        return AnonymousSignal { observer, lifetime in
            let block = makeBlock()
            let state = FlattenState<U>(maxConcurrent: 0, observer: observer, lifetime: lifetime)
            let sourcePart = lifetime.child()
            source.attach({ event in
                switch event {
                case .next(let v):
                    var stop = false
                    let signal = block(v, &stop)
                    if let signal { state.outer(.next(signal)) }
                    if signal == nil || stop {
                        lifetime.end(sourcePart)
                        state.outer(.completed)
                    }
                case .error(let e): state.outer(.error(e))
                case .completed: state.outer(.completed)
                }
            }, sourcePart)
        }
    }

    /// Maps each key from `signal` to `cases[key]` (or `defaultSignal`) and switches to it:
    /// RAC's `+switch:cases:default:`. With no matching case and no default, the inner is an
    /// error ``SignalError/noMatchingCase(key:)``, so the result fails. Completes when the key
    /// signal and the last used case have completed.
    ///
    /// **RAC:** `+switch:cases:default:`. **Thread:** the current case's thread.
    /// **Disposal:** disposes the key signal and the current case. **Terminates:** when the
    /// key signal and the last used case have completed, or at an error.
    @inlinable
    public static func `switch`<Key: Hashable>(
        _ signal: Signal<Key>, cases: [Key: Signal<Value>], default defaultSignal: Signal<Value>? = nil
    ) -> Signal<Value> {
        signal.map { key -> Signal<Value> in
            cases[key] ?? defaultSignal ?? Signal.error(SignalError.noMatchingCase(key: String(describing: key)))
        }.switchToLatest()
    }

    /// Switches between `trueSignal` and `falseSignal` on each Boolean from `condition`;
    /// nothing before its first value: RAC's `+if:then:else:`.
    ///
    /// **RAC:** `+if:then:else:`. **Thread:** the current branch's thread. **Disposal:**
    /// disposes the condition and the current branch. **Terminates:** when the condition
    /// and the current branch have completed, or at an error.
    @inlinable
    public static func `if`(
        _ condition: Signal<Bool>, then trueSignal: Signal<Value>, else falseSignal: Signal<Value>
    ) -> Signal<Value> {
        condition.map { $0 ? trueSignal : falseSignal }.switchToLatest()
    }
}

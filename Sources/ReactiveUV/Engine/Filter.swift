// `filter`'s operator machinery in one place: its signal (`FilterSignal`, both paths)
// and its fused-path stage (`FilterSink`). The public method is `Signal.filter(_:)` in
// `Operators/Signal+Filtering.swift`.

/// The signal of ``Signal/filter(_:)``: one object holding the source and the predicate,
/// for the reasons ``MapSignal`` gives.
@usableFromInline
final class FilterSignal<Value>: Signal<Value>, @unchecked Sendable {
    @usableFromInline let upstream: Signal<Value>
    @usableFromInline let isIncluded: (Value) -> Bool
    @usableFromInline
    let run: (Signal<Value>, @escaping (Value) -> Bool, @escaping Sink<Value>, CompoundDisposable) -> Void

    @inlinable
    init(_ upstream: Signal<Value>, _ isIncluded: @escaping (Value) -> Bool) {
        self.upstream = upstream
        self.isIncluded = isIncluded
        run = { upstream, isIncluded, observer, lifetime in
            upstream.attach({ event in
                if case .next(let v) = event, !isIncluded(v) { return }
                observer(event)
            }, lifetime)
        }
        super.init()
    }

    @inlinable
    override func attach(_ observer: @escaping Sink<Value>, _ lifetime: CompoundDisposable) {
        run(upstream, isIncluded, observer, lifetime)
    }

    /// The fused path: the sink below goes up wrapped in a `FilterSink`, a struct, so this stage
    /// forms no closure. Only in specialized code (`_isConcrete`): this override is also
    /// the vtable entry the library's unspecialized copy serves, where a struct sink would
    /// take every value through generic code, so there it takes the closure path with the
    /// specialized closure `closing` makes.
    @inlinable
    override func attach<S: EventSink>(sink: S, closing: (S) -> Sink<Value>, _ lifetime: CompoundDisposable)
    where S.Value == Value {
        // `_isConcrete` folds to true only where `S` is a concrete type (specialized code)
        // and to false in the library's generic copy. Pinned both ways: `FusedPathChoiceTests`
        // (unspecialized: `closing` is asked once) and `AllocationCountTests` (specialized,
        // release-built probe: one allocation per cold cycle; the paths' events agree).
        guard _isConcrete(S.self) else { return run(upstream, isIncluded, closing(sink), lifetime) }
        upstream.attach(sink: FilterSink(isIncluded, sink), closing: { s in { s.receive($0) } }, lifetime)
    }
}

/// `filter`'s stage of a fused chain: passes on the values that pass `isIncluded`.
@usableFromInline
struct FilterSink<Downstream: EventSink>: EventSink {
    @usableFromInline let isIncluded: (Downstream.Value) -> Bool
    @usableFromInline let downstream: Downstream

    @inlinable
    init(_ isIncluded: @escaping (Downstream.Value) -> Bool, _ downstream: Downstream) {
        self.isIncluded = isIncluded
        self.downstream = downstream
    }

    @inlinable
    func receive(_ event: Event<Downstream.Value>) {
        if case .next(let v) = event, !isIncluded(v) { return }
        downstream.receive(event)
    }
}

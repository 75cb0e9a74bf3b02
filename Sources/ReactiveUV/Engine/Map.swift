// `map`'s operator machinery in one place: its signal (`MapSignal`, both paths) and its
// fused-path stage (`MapSink`). The public method is `Signal.map(_:)` in
// `Operators/Signal+Transforming.swift`.

/// The signal of ``Signal/map(_:)``: one object holding the source and the transform.
///
/// Why not an ``AnonymousSignal``: that is the signal plus its closure's context (which
/// holds the source and the transform), two allocations for the most common operator of
/// a cold chain. Here the subscription code is a closure that captures nothing and is
/// handed the source and the transform, so forming it in a caller's module (where it is
/// specialized) allocates nothing, and the signal never escapes into a call: where the
/// optimizer sees a whole subscription it can keep the signal on the stack. `attach` only
/// forwards, as ``ReturnSignal``'s does.
@usableFromInline
final class MapSignal<Upstream, Value>: Signal<Value>, @unchecked Sendable {
    @usableFromInline let upstream: Signal<Upstream>
    @usableFromInline let transform: (Upstream) -> Value
    @usableFromInline
    let run: (Signal<Upstream>, @escaping (Upstream) -> Value, @escaping Sink<Value>, CompoundDisposable) -> Void

    @inlinable
    init(_ upstream: Signal<Upstream>, _ transform: @escaping (Upstream) -> Value) {
        self.upstream = upstream
        self.transform = transform
        run = { upstream, transform, observer, lifetime in
            upstream.attach({ event in
                switch event {
                case .next(let v): observer(.next(transform(v)))
                case .error(let e): observer(.error(e))
                case .completed: observer(.completed)
                }
            }, lifetime)
        }
        super.init()
    }

    @inlinable
    override func attach(_ observer: @escaping Sink<Value>, _ lifetime: CompoundDisposable) {
        run(upstream, transform, observer, lifetime)
    }

    /// The fused path: the sink below goes up wrapped in a `MapSink`, a struct, so this stage
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
        guard _isConcrete(S.self) else { return run(upstream, transform, closing(sink), lifetime) }
        upstream.attach(sink: MapSink(transform, sink), closing: { s in { s.receive($0) } }, lifetime)
    }
}

/// `map`'s stage of a fused chain: transforms values on their way to `downstream`.
@usableFromInline
struct MapSink<Upstream, Downstream: EventSink>: EventSink {
    @usableFromInline let transform: (Upstream) -> Downstream.Value
    @usableFromInline let downstream: Downstream

    @inlinable
    init(_ transform: @escaping (Upstream) -> Downstream.Value, _ downstream: Downstream) {
        self.transform = transform
        self.downstream = downstream
    }

    @inlinable
    func receive(_ event: Event<Upstream>) {
        switch event {
        case .next(let v): downstream.receive(.next(transform(v)))
        case .error(let e): downstream.receive(.error(e))
        case .completed: downstream.receive(.completed)
        }
    }
}

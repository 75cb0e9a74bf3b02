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

    @inlinable
    override func attach<S: EventSink>(sink: S, closing: (S) -> Sink<Value>, _ lifetime: CompoundDisposable)
    where S.Value == Value {
        guard _isConcrete(S.self) else { return run(upstream, isIncluded, closing(sink), lifetime) }
        upstream.attach(sink: FilterSink(isIncluded, sink), closing: { s in { s.receive($0) } }, lifetime)
    }
}

// `map`'s stage. The public method is `Signal.map(_:)` in
// `Operators/Signal+Transforming.swift`; ``StageSignal`` runs it.

/// ``Signal/map(_:)``: transforms each value; terminal events pass through.
@usableFromInline
struct MapStage<Input, Output>: SignalStage {
    @usableFromInline let transform: (Input) -> Output

    @inlinable
    init(_ transform: @escaping (Input) -> Output) { self.transform = transform }

    @inlinable @inline(__always)
    func receive<D: EventSink>(_ event: Event<Input>, _: Void, to downstream: D) where D.Value == Output {
        switch event {
        case .next(let v): downstream.receive(.next(transform(v)))
        case .error(let e): downstream.receive(.error(e))
        case .completed: downstream.receive(.completed)
        }
    }
}

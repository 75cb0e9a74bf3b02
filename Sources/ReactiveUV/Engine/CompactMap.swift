// `compactMap`'s stage. The public method is `Signal.compactMap(_:)` in
// `Operators/Signal+Transforming.swift`; ``StageSignal`` runs it.

/// ``Signal/compactMap(_:)``: transforms each value and drops the `nil` results; terminal
/// events pass through.
@usableFromInline
struct CompactMapStage<Input, Output>: SignalStage {
    @usableFromInline let transform: (Input) -> Output?

    @inlinable
    init(_ transform: @escaping (Input) -> Output?) { self.transform = transform }

    @inlinable @inline(__always)
    func receive<D: EventSink>(_ event: Event<Input>, _: Void, to downstream: D) where D.Value == Output {
        switch event {
        case .next(let v): if let u = transform(v) { downstream.receive(.next(u)) }
        case .error(let e): downstream.receive(.error(e))
        case .completed: downstream.receive(.completed)
        }
    }
}

// `combinePrevious`'s stage. The public method is `Signal.combinePrevious(start:reduce:)` in
// `Operators/Signal+Transforming.swift`; ``StageSignal`` runs it.

/// ``Signal/combinePrevious(start:reduce:)``: sends `reduce(previous, current)`, with
/// `start` as the first `previous`. The previous value is per subscription (a ``Cell`` made
/// by ``makeState()``).
@usableFromInline
struct CombinePreviousStage<Input, Output>: SignalStage {
    @usableFromInline let start: Input
    @usableFromInline let reduce: (Input, Input) -> Output

    @inlinable
    init(_ start: Input, _ reduce: @escaping (Input, Input) -> Output) {
        self.start = start
        self.reduce = reduce
    }

    @inlinable
    func makeState() -> Cell<Input> { Cell(start) }

    @inlinable @inline(__always)
    func receive<D: EventSink>(_ event: Event<Input>, _ previous: Cell<Input>, to downstream: D)
    where D.Value == Output {
        switch event {
        case .next(let v):
            let r = reduce(previous.value, v)
            previous.value = v
            downstream.receive(.next(r))
        case .error(let e): downstream.receive(.error(e))
        case .completed: downstream.receive(.completed)
        }
    }
}

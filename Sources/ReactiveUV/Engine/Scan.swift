// `scan`'s stages (with and without the index). The public methods are
// `Signal.scan(start:reduce:)` and `Signal.scan(start:reduceWithIndex:)` in
// `Operators/Signal+Transforming.swift`; ``StageSignal`` runs them.

/// ``Signal/scan(start:reduce:)``: sends each running accumulation. The accumulator is
/// per subscription (a ``Cell`` made by ``makeState()``), so a re-subscription starts from
/// `start` again.
@usableFromInline
struct ScanStage<Input, Output>: SignalStage {
    @usableFromInline let start: Output
    @usableFromInline let reduce: (Output, Input) -> Output

    @inlinable
    init(_ start: Output, _ reduce: @escaping (Output, Input) -> Output) {
        self.start = start
        self.reduce = reduce
    }

    @inlinable
    func makeState() -> Cell<Output> { Cell(start) }

    @inlinable @inline(__always)
    func receive<D: EventSink>(_ event: Event<Input>, _ accumulator: Cell<Output>, to downstream: D)
    where D.Value == Output {
        switch event {
        case .next(let v):
            let next = reduce(accumulator.value, v)
            accumulator.value = next
            downstream.receive(.next(next))
        case .error(let e): downstream.receive(.error(e))
        case .completed: downstream.receive(.completed)
        }
    }
}

/// ``Signal/scan(start:reduceWithIndex:)``: ``ScanStage`` whose block also gets the
/// zero-based index of the value; accumulator and index are per subscription.
@usableFromInline
struct IndexedScanStage<Input, Output>: SignalStage {
    @usableFromInline let start: Output
    @usableFromInline let reduce: (Output, Input, Int) -> Output

    @inlinable
    init(_ start: Output, _ reduce: @escaping (Output, Input, Int) -> Output) {
        self.start = start
        self.reduce = reduce
    }

    @inlinable
    func makeState() -> Cell<(accumulator: Output, index: Int)> { Cell((start, 0)) }

    @inlinable @inline(__always)
    func receive<D: EventSink>(
        _ event: Event<Input>, _ state: Cell<(accumulator: Output, index: Int)>, to downstream: D
    ) where D.Value == Output {
        switch event {
        case .next(let v):
            let next = reduce(state.value.accumulator, v, state.value.index)
            state.value = (next, state.value.index + 1)
            downstream.receive(.next(next))
        case .error(let e): downstream.receive(.error(e))
        case .completed: downstream.receive(.completed)
        }
    }
}

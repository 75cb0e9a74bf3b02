// `filter`'s stage. The public method is `Signal.filter(_:)` in
// `Operators/Signal+Filtering.swift`; ``StageSignal`` runs it.

/// ``Signal/filter(_:)``: passes on the values that pass `isIncluded`, and every terminal
/// event.
@usableFromInline
struct FilterStage<Value>: SignalStage {
    @usableFromInline typealias Input = Value
    @usableFromInline typealias Output = Value

    @usableFromInline let isIncluded: (Value) -> Bool

    @inlinable
    init(_ isIncluded: @escaping (Value) -> Bool) { self.isIncluded = isIncluded }

    @inlinable @inline(__always)
    func receive<D: EventSink>(_ event: Event<Value>, _: Void, to downstream: D) where D.Value == Value {
        if case .next(let v) = event, !isIncluded(v) { return }
        downstream.receive(event)
    }
}

/// A receiver of events known by its type rather than as a closure: what the fused stages
/// of a cold chain hand to their source (``Signal/attach(sink:closing:_:)``). A struct
/// sink costs no allocation; the subscription's ``BlockSubscriber`` ends every chain.
@usableFromInline
protocol EventSink {
    /// The type of the values received.
    associatedtype Value
    /// Receives one event.
    func receive(_ event: Event<Value>)
}

extension BlockSubscriber: EventSink {}

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

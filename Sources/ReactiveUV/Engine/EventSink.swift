/// A receiver of events known by its type rather than as a closure: what the fused stages
/// of a cold chain hand to their source (``Signal/attach(sink:closing:_:)``). A struct
/// sink costs no allocation; the subscription's ``BlockSubscriber`` ends every chain.
///
/// Operators do not write sinks: a per-event operator is a ``SignalStage``, and
/// ``StageSignal`` wraps it in a ``StageSink`` (`Engine/StageSignal.swift`).
@usableFromInline
protocol EventSink {
    /// The type of the values received.
    associatedtype Value
    /// Receives one event.
    func receive(_ event: Event<Value>)
}

extension BlockSubscriber: EventSink {}

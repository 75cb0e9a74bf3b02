/// One per-event operator (`map`, `filter`, `scan`, ...) written once: what it does to each
/// event on its way downstream. The engine (``StageSignal``) decides how it runs: fused into
/// the sink below it where the optimizer sees the whole chain, or behind a closure where it
/// does not. An operator author writes a stage and a public method returning
/// `StageSignal(self, TheStage(...))`, and overrides no `attach`.
///
/// **State.** A stage value is shared by every subscription of its signal, so it holds only
/// what does not change (the transform, the predicate, the start value). What changes per
/// event lives in ``State``, which ``makeState()`` makes afresh for each subscription (a
/// re-subscribed `scan` starts from its start value again). A stateful stage's state is a
/// reference (a ``Cell``): sinks are immutable values, copied into the closures and sinks
/// around them, so `receive` cannot be `mutating` without each copy counting on its own.
/// A stateless stage leaves ``State`` as `Void` (no storage, no allocation).
///
/// **Contract.** `receive` is called with one subscription's events, one at a time (the
/// threading contract serializes them); it sends zero or more events to `downstream` and
/// nothing after a terminal event.
@usableFromInline
protocol SignalStage {
    /// The type of the values received from upstream.
    associatedtype Input
    /// The type of the values sent downstream.
    associatedtype Output
    /// One subscription's state; `Void` for a stateless stage.
    associatedtype State = Void

    /// Makes the state of one subscription; called once per subscription, when it attaches.
    func makeState() -> State

    /// Handles one event of a subscription whose state is `state`, sending what follows
    /// from it to `downstream`.
    func receive<D: EventSink>(_ event: Event<Input>, _ state: State, to downstream: D) where D.Value == Output
}

extension SignalStage where State == Void {
    /// A stateless stage has nothing to make.
    @inlinable
    func makeState() {}
}

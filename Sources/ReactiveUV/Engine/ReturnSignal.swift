/// The signal of ``Signal/return(_:)``: one object that holds the value itself.
///
/// Why not an ``AnonymousSignal`` like the other operators: that is two allocations (the
/// signal and its closure's context, which holds the value), and `return` starts most cold
/// subscribe cycles. Here the subscription code is a closure that captures nothing and is
/// handed the value, so in a caller's module (where it is specialized, no generic context
/// to capture) forming it allocates nothing. `attach` only forwards to it, so the
/// per-subscription work still runs specialized. The closure gets the value, not the
/// signal: the signal then never escapes into a call, and where the optimizer sees the
/// whole subscription (`Signal.return(i).subscribeNext { … }`) it keeps the signal on the
/// stack, leaving the subscription the cycle's only heap object.
@usableFromInline
final class ReturnSignal<Value>: Signal<Value>, @unchecked Sendable {
    @usableFromInline let run: (Value, @escaping Sink<Value>, CompoundDisposable) -> Void
    @usableFromInline let value: Value

    @inlinable
    init(_ value: Value) {
        self.value = value
        run = { value, observer, lifetime in
            observer(.next(value))
            if !lifetime.isDisposedBitSet { observer(.completed) }
        }
        super.init()
    }

    @inlinable
    override func attach(_ observer: @escaping Sink<Value>, _ lifetime: CompoundDisposable) {
        run(value, observer, lifetime)
    }

    /// The end of the fused path: the value and the completion go straight into the sink
    /// (in specialized code; see ``StageSignal``'s for why not elsewhere).
    @inlinable
    override func attach<S: EventSink>(sink: S, closing: (S) -> Sink<Value>, _ lifetime: CompoundDisposable)
    where S.Value == Value {
        // `_isConcrete` folds to true only where `S` is a concrete type (specialized code)
        // and to false in the library's generic copy. Pinned both ways: `FusedPathChoiceTests`
        // (unspecialized: `closing` is asked once) and `AllocationCountTests` (specialized,
        // release-built probe: one allocation per cold cycle; the paths' events agree).
        guard _isConcrete(S.self) else { return run(value, closing(sink), lifetime) }
        sink.receive(.next(value))
        if !lifetime.isDisposedBitSet { sink.receive(.completed) }
    }
}

/// The signal of ``Signal/return(_:)``: one object that holds the value itself.
///
/// Why not an ``AnonymousSignal`` like the other operators: that is two allocations (the
/// signal and its closure's context, which holds the value), and `return` starts most cold
/// subscribe cycles. Here the subscription code is a closure that captures nothing and
/// reads the value from the signal it is handed, so in a caller's module (where it is
/// specialized, no generic context to capture) forming it allocates nothing. `attach` only
/// forwards to it, so the per-subscription work still runs specialized.
@usableFromInline
final class ReturnSignal<Value>: Signal<Value>, @unchecked Sendable {
    @usableFromInline let run: (ReturnSignal<Value>, @escaping Sink<Value>, CompoundDisposable) -> Void
    @usableFromInline let value: Value

    @inlinable
    init(_ value: Value) {
        self.value = value
        run = { signal, observer, lifetime in
            observer(.next(signal.value))
            if !lifetime.isDisposed { observer(.completed) }
        }
        super.init()
    }

    @inlinable
    override func attach(_ observer: @escaping Sink<Value>, _ lifetime: CompoundDisposable) {
        run(self, observer, lifetime)
    }
}

import CSystemShims

/// The subscriber behind `subscribe(next:error:completed:)` and its relatives: RAC's
/// `RACSubscriber` block subscriber. It is also the subscription's lifetime, so one object
/// is the whole per-subscription bookkeeping of a linear chain.
///
/// It guarantees what a user's callback relies on: after `dispose()` returns (from any
/// thread) no callback starts, and after a terminal event nothing more is delivered. It
/// does so with an atomic gate, not a lock: `gate` counts deliveries in flight (in units of
/// 2) with bit 0 meaning closed; `dispose` closes the gate and waits for deliveries on other
/// threads to finish. A callback that disposes its own subscription does not wait for
/// itself (`deliverer` names the delivering thread). Serializing events is the sources' job
/// (subjects, `create` subscribers, merge-like operators), as the threading contract says.
@usableFromInline
final class BlockSubscriber<Value>: CompoundDisposable, @unchecked Sendable {
    @usableFromInline let onNext: ((Value) -> Void)?
    @usableFromInline let onError: ((any Error) -> Void)?
    @usableFromInline let onCompleted: (() -> Void)?
    @usableFromInline let gate: UnsafeAtomicInt
    @usableFromInline let deliverer: UnsafeAtomicInt

    @inlinable
    init(next: ((Value) -> Void)?, error: ((any Error) -> Void)?, completed: (() -> Void)?) {
        onNext = next
        onError = error
        onCompleted = completed
        gate = UnsafeAtomicInt(0)
        deliverer = UnsafeAtomicInt(0)
        super.init()
        Diagnostics.subscriptionCreated()
    }

    deinit {
        gate.destroy()
        deliverer.destroy()
        Diagnostics.subscriptionDestroyed()
    }

    @inlinable
    func receive(_ event: Event<Value>) {
        deliverer.store(Int(csys_thread_id()), csys_relaxed)
        if gate.fetchAdd(2) & 1 != 0 {
            gate.fetchSub(2)
            return
        }
        switch event {
        case .next(let value):
            onNext?(value)
            gate.fetchSub(2)
        case .error(let error):
            let first = gate.fetchOr(1) & 1 == 0
            if first { onError?(error) }
            gate.fetchSub(2)
            if first { super.dispose() }
        case .completed:
            let first = gate.fetchOr(1) & 1 == 0
            if first { onCompleted?() }
            gate.fetchSub(2)
            if first { super.dispose() }
        }
    }

    /// Closes the gate, waits for a delivery running on another thread, then disposes the
    /// subscription's resources.
    @usableFromInline
    override func dispose() {
        let s = gate.fetchOr(1)
        if s >> 1 != 0 && deliverer.load(csys_acquire) != Int(csys_thread_id()) {
            var spins = 0
            while gate.load() >> 1 != 0 {
                spins += 1
                if spins > 64 { csys_thread_yield() }
            }
        }
        super.dispose()
    }
}

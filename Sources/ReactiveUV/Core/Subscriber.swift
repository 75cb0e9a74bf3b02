/// The subscriber a ``Signal/create(_:)`` block sends into: RAC's passthrough subscriber.
///
/// Sends are serialized with a re-entrant lock (a block may send from several threads, and
/// a downstream callback may send back into the source on the same thread). After a
/// terminal event, or once the subscription is disposed, sends are dropped; check
/// ``isDisposed`` to stop producing early.
public final class Subscriber<Value>: SubscriberProtocol, @unchecked Sendable {
    @usableFromInline let observer: Sink<Value>
    /// The subscription's lifetime (what `isDisposed` reads).
    @usableFromInline let lifetime: CompoundDisposable
    /// Serializes sends; guards `terminated`. Its two words are stored in this object
    /// (`Atomic`s used in place), so the lock costs the subscription no allocation.
    @usableFromInline let lock = RecursiveSpinLock()
    /// Guarded by `lock` (so exclusivity is not checked dynamically on the hot path).
    @usableFromInline @exclusivity(unchecked) var terminated = false

    @inlinable
    init(_ observer: @escaping Sink<Value>, _ lifetime: CompoundDisposable) {
        self.observer = observer
        self.lifetime = lifetime
        Diagnostics.subscriptionCreated()
    }

    deinit {
        Diagnostics.subscriptionDestroyed()
    }

    /// Whether the subscription has ended (disposed, or a terminal event was sent).
    public var isDisposed: Bool { lifetime.isDisposed }

    /// The subscription's disposable: add resources to it, or dispose it to end the subscription.
    public var disposable: CompoundDisposable { lifetime }

    /// Sends a value (dropped after termination or disposal).
    ///
    /// `consuming` (callers are unaffected): the event is built from the caller's own
    /// reference, passed at its last use, rather than from a copy of a borrowed one, which
    /// cost a retain and a release of the value per send.
    @inlinable
    public func sendNext(_ value: consuming Value) {
        lock.lock()
        if !terminated && !lifetime.isDisposed { observer(.next(value)) }
        lock.unlock()
    }

    /// Sends an error; ends the subscription and disposes its resources.
    @inlinable
    public func sendError(_ error: any Error) {
        lock.lock()
        if terminated || lifetime.isDisposed {
            lock.unlock()
            return
        }
        terminated = true
        observer(.error(error))
        lock.unlock()
        lifetime.dispose()
    }

    /// Sends completion; ends the subscription and disposes its resources.
    @inlinable
    public func sendCompleted() {
        lock.lock()
        if terminated || lifetime.isDisposed {
            lock.unlock()
            return
        }
        terminated = true
        observer(.completed)
        lock.unlock()
        lifetime.dispose()
    }

    /// Adds `disposable` to the subscription, so it is disposed with it.
    public func didSubscribe(with disposable: Disposable) {
        lifetime.add(disposable)
    }
}

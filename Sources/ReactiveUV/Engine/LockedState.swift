/// Per-subscription state of an operator where concurrency enters (several sources, or a
/// source and a timer): a re-entrant lock that serializes what the operator sends on, so the
/// chain below it sees one event at a time. Subclassed by each such operator's state, and
/// by a subject's roster, whose lock serializes the subject's sends (so either can be a
/// ``BlockSubscriber``'s registered serializer).
@usableFromInline
class LockedState: @unchecked Sendable {
    /// Guards every field of the subclass and serializes sends downstream. Its two words
    /// are stored in this object (`Atomic`s used in place), so the lock costs the
    /// subscription no allocation and there is nothing to free.
    @usableFromInline let lock = RecursiveSpinLock()

    @inlinable
    init() {}

    /// Drops what the state remembers of its sources' values (the latest values of
    /// `combineLatest`), called with `lock` held by `BlockSubscriber.dispose()` for a
    /// registered serializer, which the subscriber keeps until it is freed. A no-op here; a
    /// state that overrides it must also make any later event a no-op (`combineLatest` sets
    /// `done`, which `receive` checks under the lock anyway), so a value that arrives after
    /// the clear (a source on another thread, past the closed gate) stores nothing.
    /// After a terminal event the subscriber calls it too, from its out-of-line terminal
    /// step (`BlockSubscriber.releaseSerializerValues()`); calling it from
    /// `TerminableState.finishLocked` instead cost combineLatest 3 instructions per update
    /// (362.0 -> 365.0 under callgrind).
    @usableFromInline
    func releaseValues() {}

    /// Sends `value` on, with `lock` held: straight to `subscriber` when the operator was
    /// handed one for which this state is the registered serializer
    /// (``SubscriberAwareSignal``, ``BlockSubscriber/direct(_:serializedBy:_:)``), else through
    /// `observer`. The direct call is what the forwarding closure would have done once the
    /// subscriber found this lock held by the calling thread, less the closure call, its
    /// `receive` and that check (the two-way `combineLatest` row: 362.0 -> 308.0
    /// instructions per update under callgrind; Benchmarks/README.md, issue #35). The
    /// subscriber is unretained: the caller's source closure holds it as its `lifetime`.
    @inlinable @inline(__always)
    final func sendNextLocked<T>(_ value: T, _ observer: Sink<T>, _ subscriber: Unmanaged<BlockSubscriber<T>>?) {
        if let subscriber {
            subscriber._withUnsafeGuaranteedRef { $0.receiveUnderSerializer(value) }
        } else {
            observer(.next(value))
        }
    }
}

extension CompoundDisposable {
    /// A new compound registered in this one, for one part of a subscription (an inner
    /// signal, one attempt of a retry) that may end before the whole subscription does.
    @inlinable
    func child() -> CompoundDisposable {
        let c = CompoundDisposable()
        add(c)
        return c
    }

    /// Disposes `child` and forgets it, so finished parts do not accumulate.
    @inlinable
    func end(_ child: CompoundDisposable) {
        child.dispose()
        remove(child)
    }
}

/// A ``LockedState`` for operators that end on the first terminal event of any of their
/// sources (zip, combineLatest, sample, takeUntil…): `done` drops everything after it.
@usableFromInline
class TerminableState: LockedState, @unchecked Sendable {
    /// Set once a terminal event was sent; guarded by `lock`.
    @usableFromInline @exclusivity(unchecked) final var done = false

    @inlinable
    override init() { super.init() }

    /// Sends `event` (terminal) downstream, marks the state done and ends the subscription.
    /// Call with `lock` held; it is released before the subscription's resources are
    /// disposed, so their disposal cannot re-enter a held lock.
    @inlinable
    final func finishLocked<T>(_ event: Event<T>, _ observer: Sink<T>, _ lifetime: CompoundDisposable) {
        done = true
        observer(event)
        lock.unlock()
        lifetime.dispose()
    }
}

// Typed `zip` and `combineLatest` of 2 to 6 signals of mixed types, as native Swift tuples
// (RAC's `+zip:` and `+combineLatest:` with a typed RACTuple). Each arity has its own
// state class (Internal/CombineLatestTupleStates.swift, Internal/ZipTupleStates.swift) that
// keeps every source's values in a typed slot, so no value is boxed and nothing is
// allocated per emission; every form is `@inlinable`, so a caller's module runs it
// specialized. Generated shape: the arities differ only in their slot lists. The
// combineLatest forms register their state's lock with the subscription before subscribing
// (`serializeDeliveries(under:)`; Internal/CombineLatestTupleStates.swift says why), and
// are `SubscriberAwareSignal`s, so a subscriber subscribed to them directly gets its values
// without the forwarding closure.

extension Signal {
    /// Zips 2 signals into tuples of their n-th values: RAC's `+zip:` with a typed tuple.
    ///
    /// Subscribes to the signals in order (a signal that fails synchronously keeps the later
    /// ones from being subscribed). Events arrive on the thread of the source whose value
    /// completed a tuple, serialized by a per-subscription lock. It completes as soon as one
    /// source has completed with nothing queued; an error from any source is forwarded at
    /// once, even with values queued. Disposing (or a terminal event) disposes every source.
    ///
    /// **RAC:** `+zip:` (a typed tuple). **Thread:** the thread of the source whose value
    /// completes a tuple, serialized. **Disposal:** disposes every source. **Terminates:**
    /// when a completed source has nothing queued; at once on an error.
    ///
    /// - Returns: a signal of `(A, B)` tuples.
    @inlinable
    public static func zip<A, B>(_ a: Signal<A>, _ b: Signal<B>) -> Signal<(A, B)> where Value == (A, B) {
        AnonymousSignal { observer, lifetime in
            let state = Zip2State<A, B>()
            a.attach({ state.receive($0, observer, lifetime, { state.a.push($0) }, completed: { state.a.completed = true }) }, lifetime.child())
            if lifetime.isDisposed { return }
            b.attach({ state.receive($0, observer, lifetime, { state.b.push($0) }, completed: { state.b.completed = true }) }, lifetime.child())
        }
    }

    /// The latest values of 2 signals as a tuple, once each has sent, then on every value of
    /// any: RAC's `+combineLatest:` with a typed tuple.
    ///
    /// Subscribes to the signals in order. Events arrive on the thread of the source that
    /// sent, serialized by a per-subscription lock. It completes when **all** sources have
    /// completed (even one that never sent); an error from any source is forwarded and ends
    /// it. Disposing (or a terminal event) disposes every source.
    ///
    /// **RAC:** `+combineLatest:` (a typed tuple). **Thread:** the sending source's,
    /// serialized. **Disposal:** disposes every source. **Terminates:** when all sources
    /// have completed; at once on an error.
    ///
    /// - Returns: a signal of `(A, B)` tuples.
    @inlinable
    public static func combineLatest<A, B>(_ a: Signal<A>, _ b: Signal<B>) -> Signal<(A, B)> where Value == (A, B) {
        SubscriberAwareSignal { observer, lifetime, subscriber in
            let state = CombineLatest2State<A, B>()
            if !lifetime.serializeDeliveries(under: state) { return }
            let direct = BlockSubscriber.direct(subscriber, serializedBy: state, lifetime)
            a.attach({ state.receive($0, observer, direct, lifetime) { $0.a = $1 } }, lifetime.child())
            if lifetime.isDisposed { return }
            b.attach({ state.receive($0, observer, direct, lifetime) { $0.b = $1 } }, lifetime.child())
        }
    }

    /// Zips 3 signals into tuples of their n-th values: RAC's `+zip:` with a typed tuple.
    ///
    /// Subscribes to the signals in order (a signal that fails synchronously keeps the later
    /// ones from being subscribed). Events arrive on the thread of the source whose value
    /// completed a tuple, serialized by a per-subscription lock. It completes as soon as one
    /// source has completed with nothing queued; an error from any source is forwarded at
    /// once, even with values queued. Disposing (or a terminal event) disposes every source.
    ///
    /// **RAC:** `+zip:` (a typed tuple). **Thread:** the thread of the source whose value
    /// completes a tuple, serialized. **Disposal:** disposes every source. **Terminates:**
    /// when a completed source has nothing queued; at once on an error.
    ///
    /// - Returns: a signal of `(A, B, C)` tuples.
    @inlinable
    public static func zip<A, B, C>(_ a: Signal<A>, _ b: Signal<B>, _ c: Signal<C>) -> Signal<(A, B, C)> where Value == (A, B, C) {
        AnonymousSignal { observer, lifetime in
            let state = Zip3State<A, B, C>()
            a.attach({ state.receive($0, observer, lifetime, { state.a.push($0) }, completed: { state.a.completed = true }) }, lifetime.child())
            if lifetime.isDisposed { return }
            b.attach({ state.receive($0, observer, lifetime, { state.b.push($0) }, completed: { state.b.completed = true }) }, lifetime.child())
            if lifetime.isDisposed { return }
            c.attach({ state.receive($0, observer, lifetime, { state.c.push($0) }, completed: { state.c.completed = true }) }, lifetime.child())
        }
    }

    /// The latest values of 3 signals as a tuple, once each has sent, then on every value of
    /// any: RAC's `+combineLatest:` with a typed tuple.
    ///
    /// Subscribes to the signals in order. Events arrive on the thread of the source that
    /// sent, serialized by a per-subscription lock. It completes when **all** sources have
    /// completed (even one that never sent); an error from any source is forwarded and ends
    /// it. Disposing (or a terminal event) disposes every source.
    ///
    /// **RAC:** `+combineLatest:` (a typed tuple). **Thread:** the sending source's,
    /// serialized. **Disposal:** disposes every source. **Terminates:** when all sources
    /// have completed; at once on an error.
    ///
    /// - Returns: a signal of `(A, B, C)` tuples.
    @inlinable
    public static func combineLatest<A, B, C>(_ a: Signal<A>, _ b: Signal<B>, _ c: Signal<C>) -> Signal<(A, B, C)> where Value == (A, B, C) {
        SubscriberAwareSignal { observer, lifetime, subscriber in
            let state = CombineLatest3State<A, B, C>()
            if !lifetime.serializeDeliveries(under: state) { return }
            let direct = BlockSubscriber.direct(subscriber, serializedBy: state, lifetime)
            a.attach({ state.receive($0, observer, direct, lifetime) { $0.a = $1 } }, lifetime.child())
            if lifetime.isDisposed { return }
            b.attach({ state.receive($0, observer, direct, lifetime) { $0.b = $1 } }, lifetime.child())
            if lifetime.isDisposed { return }
            c.attach({ state.receive($0, observer, direct, lifetime) { $0.c = $1 } }, lifetime.child())
        }
    }

    /// Zips 4 signals into tuples of their n-th values: RAC's `+zip:` with a typed tuple.
    ///
    /// Subscribes to the signals in order (a signal that fails synchronously keeps the later
    /// ones from being subscribed). Events arrive on the thread of the source whose value
    /// completed a tuple, serialized by a per-subscription lock. It completes as soon as one
    /// source has completed with nothing queued; an error from any source is forwarded at
    /// once, even with values queued. Disposing (or a terminal event) disposes every source.
    ///
    /// **RAC:** `+zip:` (a typed tuple). **Thread:** the thread of the source whose value
    /// completes a tuple, serialized. **Disposal:** disposes every source. **Terminates:**
    /// when a completed source has nothing queued; at once on an error.
    ///
    /// - Returns: a signal of `(A, B, C, D)` tuples.
    @inlinable
    public static func zip<A, B, C, D>(_ a: Signal<A>, _ b: Signal<B>, _ c: Signal<C>, _ d: Signal<D>) -> Signal<(A, B, C, D)> where Value == (A, B, C, D) {
        AnonymousSignal { observer, lifetime in
            let state = Zip4State<A, B, C, D>()
            a.attach({ state.receive($0, observer, lifetime, { state.a.push($0) }, completed: { state.a.completed = true }) }, lifetime.child())
            if lifetime.isDisposed { return }
            b.attach({ state.receive($0, observer, lifetime, { state.b.push($0) }, completed: { state.b.completed = true }) }, lifetime.child())
            if lifetime.isDisposed { return }
            c.attach({ state.receive($0, observer, lifetime, { state.c.push($0) }, completed: { state.c.completed = true }) }, lifetime.child())
            if lifetime.isDisposed { return }
            d.attach({ state.receive($0, observer, lifetime, { state.d.push($0) }, completed: { state.d.completed = true }) }, lifetime.child())
        }
    }

    /// The latest values of 4 signals as a tuple, once each has sent, then on every value of
    /// any: RAC's `+combineLatest:` with a typed tuple.
    ///
    /// Subscribes to the signals in order. Events arrive on the thread of the source that
    /// sent, serialized by a per-subscription lock. It completes when **all** sources have
    /// completed (even one that never sent); an error from any source is forwarded and ends
    /// it. Disposing (or a terminal event) disposes every source.
    ///
    /// **RAC:** `+combineLatest:` (a typed tuple). **Thread:** the sending source's,
    /// serialized. **Disposal:** disposes every source. **Terminates:** when all sources
    /// have completed; at once on an error.
    ///
    /// - Returns: a signal of `(A, B, C, D)` tuples.
    @inlinable
    public static func combineLatest<A, B, C, D>(_ a: Signal<A>, _ b: Signal<B>, _ c: Signal<C>, _ d: Signal<D>) -> Signal<(A, B, C, D)> where Value == (A, B, C, D) {
        SubscriberAwareSignal { observer, lifetime, subscriber in
            let state = CombineLatest4State<A, B, C, D>()
            if !lifetime.serializeDeliveries(under: state) { return }
            let direct = BlockSubscriber.direct(subscriber, serializedBy: state, lifetime)
            a.attach({ state.receive($0, observer, direct, lifetime) { $0.a = $1 } }, lifetime.child())
            if lifetime.isDisposed { return }
            b.attach({ state.receive($0, observer, direct, lifetime) { $0.b = $1 } }, lifetime.child())
            if lifetime.isDisposed { return }
            c.attach({ state.receive($0, observer, direct, lifetime) { $0.c = $1 } }, lifetime.child())
            if lifetime.isDisposed { return }
            d.attach({ state.receive($0, observer, direct, lifetime) { $0.d = $1 } }, lifetime.child())
        }
    }

    /// Zips 5 signals into tuples of their n-th values: RAC's `+zip:` with a typed tuple.
    ///
    /// Subscribes to the signals in order (a signal that fails synchronously keeps the later
    /// ones from being subscribed). Events arrive on the thread of the source whose value
    /// completed a tuple, serialized by a per-subscription lock. It completes as soon as one
    /// source has completed with nothing queued; an error from any source is forwarded at
    /// once, even with values queued. Disposing (or a terminal event) disposes every source.
    ///
    /// **RAC:** `+zip:` (a typed tuple). **Thread:** the thread of the source whose value
    /// completes a tuple, serialized. **Disposal:** disposes every source. **Terminates:**
    /// when a completed source has nothing queued; at once on an error.
    ///
    /// - Returns: a signal of `(A, B, C, D, E)` tuples.
    @inlinable
    public static func zip<A, B, C, D, E>(_ a: Signal<A>, _ b: Signal<B>, _ c: Signal<C>, _ d: Signal<D>, _ e: Signal<E>) -> Signal<(A, B, C, D, E)> where Value == (A, B, C, D, E) {
        AnonymousSignal { observer, lifetime in
            let state = Zip5State<A, B, C, D, E>()
            a.attach({ state.receive($0, observer, lifetime, { state.a.push($0) }, completed: { state.a.completed = true }) }, lifetime.child())
            if lifetime.isDisposed { return }
            b.attach({ state.receive($0, observer, lifetime, { state.b.push($0) }, completed: { state.b.completed = true }) }, lifetime.child())
            if lifetime.isDisposed { return }
            c.attach({ state.receive($0, observer, lifetime, { state.c.push($0) }, completed: { state.c.completed = true }) }, lifetime.child())
            if lifetime.isDisposed { return }
            d.attach({ state.receive($0, observer, lifetime, { state.d.push($0) }, completed: { state.d.completed = true }) }, lifetime.child())
            if lifetime.isDisposed { return }
            e.attach({ state.receive($0, observer, lifetime, { state.e.push($0) }, completed: { state.e.completed = true }) }, lifetime.child())
        }
    }

    /// The latest values of 5 signals as a tuple, once each has sent, then on every value of
    /// any: RAC's `+combineLatest:` with a typed tuple.
    ///
    /// Subscribes to the signals in order. Events arrive on the thread of the source that
    /// sent, serialized by a per-subscription lock. It completes when **all** sources have
    /// completed (even one that never sent); an error from any source is forwarded and ends
    /// it. Disposing (or a terminal event) disposes every source.
    ///
    /// **RAC:** `+combineLatest:` (a typed tuple). **Thread:** the sending source's,
    /// serialized. **Disposal:** disposes every source. **Terminates:** when all sources
    /// have completed; at once on an error.
    ///
    /// - Returns: a signal of `(A, B, C, D, E)` tuples.
    @inlinable
    public static func combineLatest<A, B, C, D, E>(_ a: Signal<A>, _ b: Signal<B>, _ c: Signal<C>, _ d: Signal<D>, _ e: Signal<E>) -> Signal<(A, B, C, D, E)> where Value == (A, B, C, D, E) {
        SubscriberAwareSignal { observer, lifetime, subscriber in
            let state = CombineLatest5State<A, B, C, D, E>()
            if !lifetime.serializeDeliveries(under: state) { return }
            let direct = BlockSubscriber.direct(subscriber, serializedBy: state, lifetime)
            a.attach({ state.receive($0, observer, direct, lifetime) { $0.a = $1 } }, lifetime.child())
            if lifetime.isDisposed { return }
            b.attach({ state.receive($0, observer, direct, lifetime) { $0.b = $1 } }, lifetime.child())
            if lifetime.isDisposed { return }
            c.attach({ state.receive($0, observer, direct, lifetime) { $0.c = $1 } }, lifetime.child())
            if lifetime.isDisposed { return }
            d.attach({ state.receive($0, observer, direct, lifetime) { $0.d = $1 } }, lifetime.child())
            if lifetime.isDisposed { return }
            e.attach({ state.receive($0, observer, direct, lifetime) { $0.e = $1 } }, lifetime.child())
        }
    }

    /// Zips 6 signals into tuples of their n-th values: RAC's `+zip:` with a typed tuple.
    ///
    /// Subscribes to the signals in order (a signal that fails synchronously keeps the later
    /// ones from being subscribed). Events arrive on the thread of the source whose value
    /// completed a tuple, serialized by a per-subscription lock. It completes as soon as one
    /// source has completed with nothing queued; an error from any source is forwarded at
    /// once, even with values queued. Disposing (or a terminal event) disposes every source.
    ///
    /// **RAC:** `+zip:` (a typed tuple). **Thread:** the thread of the source whose value
    /// completes a tuple, serialized. **Disposal:** disposes every source. **Terminates:**
    /// when a completed source has nothing queued; at once on an error.
    ///
    /// - Returns: a signal of `(A, B, C, D, E, F)` tuples.
    @inlinable
    public static func zip<A, B, C, D, E, F>(_ a: Signal<A>, _ b: Signal<B>, _ c: Signal<C>, _ d: Signal<D>, _ e: Signal<E>, _ f: Signal<F>) -> Signal<(A, B, C, D, E, F)> where Value == (A, B, C, D, E, F) {
        AnonymousSignal { observer, lifetime in
            let state = Zip6State<A, B, C, D, E, F>()
            a.attach({ state.receive($0, observer, lifetime, { state.a.push($0) }, completed: { state.a.completed = true }) }, lifetime.child())
            if lifetime.isDisposed { return }
            b.attach({ state.receive($0, observer, lifetime, { state.b.push($0) }, completed: { state.b.completed = true }) }, lifetime.child())
            if lifetime.isDisposed { return }
            c.attach({ state.receive($0, observer, lifetime, { state.c.push($0) }, completed: { state.c.completed = true }) }, lifetime.child())
            if lifetime.isDisposed { return }
            d.attach({ state.receive($0, observer, lifetime, { state.d.push($0) }, completed: { state.d.completed = true }) }, lifetime.child())
            if lifetime.isDisposed { return }
            e.attach({ state.receive($0, observer, lifetime, { state.e.push($0) }, completed: { state.e.completed = true }) }, lifetime.child())
            if lifetime.isDisposed { return }
            f.attach({ state.receive($0, observer, lifetime, { state.f.push($0) }, completed: { state.f.completed = true }) }, lifetime.child())
        }
    }

    /// The latest values of 6 signals as a tuple, once each has sent, then on every value of
    /// any: RAC's `+combineLatest:` with a typed tuple.
    ///
    /// Subscribes to the signals in order. Events arrive on the thread of the source that
    /// sent, serialized by a per-subscription lock. It completes when **all** sources have
    /// completed (even one that never sent); an error from any source is forwarded and ends
    /// it. Disposing (or a terminal event) disposes every source.
    ///
    /// **RAC:** `+combineLatest:` (a typed tuple). **Thread:** the sending source's,
    /// serialized. **Disposal:** disposes every source. **Terminates:** when all sources
    /// have completed; at once on an error.
    ///
    /// - Returns: a signal of `(A, B, C, D, E, F)` tuples.
    @inlinable
    public static func combineLatest<A, B, C, D, E, F>(_ a: Signal<A>, _ b: Signal<B>, _ c: Signal<C>, _ d: Signal<D>, _ e: Signal<E>, _ f: Signal<F>) -> Signal<(A, B, C, D, E, F)> where Value == (A, B, C, D, E, F) {
        SubscriberAwareSignal { observer, lifetime, subscriber in
            let state = CombineLatest6State<A, B, C, D, E, F>()
            if !lifetime.serializeDeliveries(under: state) { return }
            let direct = BlockSubscriber.direct(subscriber, serializedBy: state, lifetime)
            a.attach({ state.receive($0, observer, direct, lifetime) { $0.a = $1 } }, lifetime.child())
            if lifetime.isDisposed { return }
            b.attach({ state.receive($0, observer, direct, lifetime) { $0.b = $1 } }, lifetime.child())
            if lifetime.isDisposed { return }
            c.attach({ state.receive($0, observer, direct, lifetime) { $0.c = $1 } }, lifetime.child())
            if lifetime.isDisposed { return }
            d.attach({ state.receive($0, observer, direct, lifetime) { $0.d = $1 } }, lifetime.child())
            if lifetime.isDisposed { return }
            e.attach({ state.receive($0, observer, direct, lifetime) { $0.e = $1 } }, lifetime.child())
            if lifetime.isDisposed { return }
            f.attach({ state.receive($0, observer, direct, lifetime) { $0.f = $1 } }, lifetime.child())
        }
    }
}

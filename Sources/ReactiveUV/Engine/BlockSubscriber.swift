import CSystemShims
import Synchronization

/// The subscriber behind `subscribe(next:error:completed:)` and its relatives: RAC's
/// `RACSubscriber` block subscriber. It is also the subscription's lifetime, so one object
/// is the whole per-subscription bookkeeping of a linear chain.
///
/// It guarantees what a user's callback relies on: after `dispose()` returns (from any
/// thread) no callback starts, and after a terminal event nothing more is delivered.
///
/// How, with one locked instruction per event and no lock: a delivery announces itself by
/// exchanging its thread token into `inFlight`, then reads `closed`; `dispose` sets
/// `closed`, then reads `inFlight` and waits while another thread is delivering. Both sides
/// use sequentially consistent operations (a Dekker handshake), so at least one of them
/// sees the other: either the delivery sees `closed` and skips, or `dispose` sees the
/// delivery and waits for it. A callback that disposes its own subscription does not wait
/// for itself (its token is the one in flight), and a re-entrant delivery on the same
/// thread leaves clearing `inFlight` to the outermost one. Serializing events is the
/// sources' job (subjects, `create` subscribers, merge-like operators), as the threading
/// contract says, so only one thread delivers at a time.
///
/// A subject that this subscriber is subscribed to directly (`subject.subscribeNext { … }`,
/// a fan-out) calls it from its send loop, under the subject's lock, without the exchange:
/// there `dispose` from another thread takes that lock before it releases anything (see
/// `receiveUnderSourceLock(_:)`), so a delivery costs no locked instruction at all. An
/// operator state that sends on with its lock held (`combineLatest`) gets the same by
/// registering that lock (`serializer`): a value delivered by a thread holding it skips
/// the exchange, and `dispose` takes it. A subject subscribed to through stages
/// (`subject.map(f).subscribeNext`) registers its roster's lock the same way.
@usableFromInline
final class BlockSubscriber<Value>: CompoundDisposable, @unchecked Sendable {
    // The callbacks are released when the subscription closes, as RAC's RACSubscriber
    // drops its blocks: a callback that captures its own subscription
    // (`var d: Disposable?; d = s.subscribeNext { …; d?.dispose() }`) or an object holding
    // it would otherwise form a cycle that keeps the callback, the subscription and
    // everything they reach (subjects, schedulers) alive forever (LeakSanitizer found it:
    // `make sanitize`). Only the one thread that closes the gate (the closed bit 0 → 1)
    // clears them, and only once no delivery is under way on another thread (after the wait
    // in `dispose`, or at the end of the terminal delivery itself) and no callback of this
    // subscriber is running on the closing thread (else the outermost delivery releases
    // them on its way out: see `call(_:_:)`); a delivery reads them only after seeing the
    // gate open, and calls them in place, without a reference of its own.
    @usableFromInline @exclusivity(unchecked) final var onNext: ((Value) -> Void)?
    @usableFromInline @exclusivity(unchecked) final var onError: ((any Error) -> Void)?
    @usableFromInline @exclusivity(unchecked) final var onCompleted: (() -> Void)?
    /// Set in the state word once closed (terminated or disposed): a bit of its own, beside
    /// `disposedBit` and `lockBit`, because the members are disposed after the gate closes.
    @usableFromInline static var closedBit: Int { 4 }
    /// Set when the gate closed inside a delivery on the closing thread (a callback that
    /// disposes its own subscription, a terminal event sent from a callback): that
    /// delivery's outermost frame releases the callbacks once its own call has returned.
    @usableFromInline static var releasePendingBit: Int { 8 }

    // The delivering thread's token (or 0) is `Disposable`'s `subclassWord`, and `closed` a
    // bit of its `state` word: both `Atomic<Int>` stored in this object, so no allocation
    // besides this object.

    @inlinable
    init(next: ((Value) -> Void)?, error: ((any Error) -> Void)?, completed: (() -> Void)?) {
        onNext = next
        onError = error
        onCompleted = completed
        super.init()
        Diagnostics.subscriptionCreated()
    }

    deinit {
        serializer.load(ordering: .relaxed)?.release()
        Diagnostics.subscriptionDestroyed()
    }

    /// The state of an operator that holds its lock around every value it sends here
    /// (registered by ``serializeDeliveries(under:)``), or `nil`: a value delivered by the
    /// thread holding that lock announces itself with plain stores, as a subject's send
    /// does (``receiveUnderSourceLock(_:)``), because `dispose()` from another thread takes
    /// the lock before it releases anything. Set once (a compare-exchange from `nil`),
    /// retained (the reference is given back in `deinit`), so a delivery may read the lock
    /// through it without a retain: whichever thread delivers, this subscriber, which
    /// holds it, is alive for the call. It keeps the state for as long as the subscription
    /// object lives, as `sourceRemoval` keeps a subject's roster, but not the latest values
    /// in it: `dispose()` and the terminal step have the state drop them
    /// (``releaseSerializerValues()``).
    @usableFromInline let serializer = Atomic<Unmanaged<LockedState>?>(nil)

    /// Registers `state`'s lock as the serializer of this subscriber's values (the first
    /// registration wins; a later one is ignored). The compare-exchange and the closed-bit
    /// read after it are sequentially consistent, as `dispose()`'s close and its read of
    /// `serializer` are: either `dispose` sees the state and waits for its lock, or this
    /// sees the gate closed and returns `false`, and the operator subscribes to nothing, so
    /// no value can be delivered under the lock unannounced.
    @usableFromInline
    override func serializeDeliveries(under state: LockedState) -> Bool {
        let candidate = Unmanaged.passRetained(state)
        if !serializer.compareExchange(expected: nil, desired: candidate, ordering: .sequentiallyConsistent).exchanged {
            candidate.release()
        }
        return self.state.load(ordering: .sequentiallyConsistent) & BlockSubscriber.closedBit == 0
    }

    /// True when the calling thread (`me`) holds the registered serializer's lock.
    @inlinable @inline(__always)
    func deliversUnderSerializer(_ me: Int) -> Bool {
        guard let held = serializer.load(ordering: .acquiring) else { return false }
        return held._withUnsafeGuaranteedRef { $0.lock.owner.load(ordering: .relaxed) == me }
    }

    /// The subscriber an operator may deliver to directly (``receiveUnderSerializer(_:)``),
    /// unretained, or `nil`: `subscriber` (handed over by ``SubscriberAwareSignal``) when
    /// `state` is its registered serializer (``serializeDeliveries(under:)``; the first
    /// registration wins, so a later one may not be) and it is the subscription's
    /// `lifetime`. Unretained because the operator's source closures, which call it, capture
    /// `lifetime` and so hold this subscriber for as long as they can run: a retain and
    /// release around each delivery would be two locked instructions per value.
    @inlinable
    static func direct(
        _ subscriber: BlockSubscriber?, serializedBy state: LockedState, _ lifetime: CompoundDisposable
    ) -> Unmanaged<BlockSubscriber>? {
        guard let subscriber, subscriber === lifetime,
              let held = subscriber.serializer.load(ordering: .acquiring),
              held.toOpaque() == Unmanaged.passUnretained(state).toOpaque()
        else { return nil }
        return Unmanaged.passUnretained(subscriber)
    }

    /// Delivers a value sent by the thread that holds the registered serializer's lock,
    /// called by that operator directly (``SubscriberAwareSignal``), not through the
    /// forwarding closure: the same delivery as ``receive(_:)``'s once it found the lock held
    /// by the calling thread (``deliversUnderSerializer(_:)``), without looking. The caller
    /// must hold the lock of the state for which ``direct(_:serializedBy:_:)`` returned this
    /// subscriber.
    ///
    /// Written out rather than calling ``deliver(_:sourceLockHeld:)``: its `defer` (the
    /// outermost delivery's end) stays out of line, a call per value; here the end is
    /// inline (the two-way `combineLatest` row: 308.0 -> 304.0 instructions per update
    /// under callgrind). `deliver` keeps its `defer`: without it, `receive` was no longer
    /// inlined into a fused chain's last stage (the cold row: 913.0 -> 931.0 per cycle).
    @inlinable @inline(__always)
    func receiveUnderSerializer(_ value: Value) {
        let me = Int(bitPattern: csys_thread_token())
        let previous = subclassWord.load(ordering: .relaxed)
        if previous != me { subclassWord.store(me, ordering: .relaxed) }
        if state.load(ordering: .relaxed) & BlockSubscriber.closedBit == 0 {
            BlockSubscriber.call(&onNext, value)
        }
        if previous != me {
            // The outermost delivery on this thread: release the callbacks if a disposal
            // or a terminal event inside it left that to us (as `deliver`'s `defer` does).
            if state.load(ordering: .relaxed) & BlockSubscriber.releasePendingBit != 0 {
                releasePendingCallbacks()
            }
            subclassWord.store(0, ordering: .releasing)
        }
    }

    /// For a subscriber subscribed to a subject directly, that subscription's removal from
    /// the subject, `nil` otherwise: the way to the subject, which sends to this subscriber
    /// only while holding its lock (``receiveUnderSourceLock(_:)``), so `dispose()` from
    /// another thread waits for a send under way by taking that lock. The removal holds
    /// the subject's roster (its list and lock), not the subject (a subscription does not
    /// keep its subject alive); a strong reference to the removal rather than a weak one to
    /// the subject, because a weak field costs every subscription a runtime call to make
    /// and one to destroy. Set once, under the subject's lock, before `subscribe` returns
    /// the subscription.
    @usableFromInline @exclusivity(unchecked) final var sourceRemoval: Subject<Value>.Removal?

    /// Delivers an event from any source (the `attach` closure path).
    @inlinable
    func receive(_ event: Event<Value>) {
        deliver(event, sourceLockHeld: false)
    }

    /// Delivers an event sent by the subject of `sourceRemoval` with its lock held (a subject's send loop):
    /// the announcement is a plain store, because a `dispose()` on another thread waits on
    /// that lock instead of seeing the announcement (no locked instruction per delivery).
    @inlinable @inline(__always)
    func receiveUnderSourceLock(_ event: Event<Value>) {
        deliver(event, sourceLockHeld: true)
    }

    /// The delivery: announce this thread in `inFlight`, check the gate, call the callback.
    ///
    /// A value: without `sourceLockHeld` the announcement is an exchange and the gate read
    /// sequentially consistent (the Dekker handshake with `dispose` described above); with
    /// it both are relaxed: only the lock holder delivers, it reads its own announcement
    /// back exactly (re-entrancy, a callback disposing itself), and `dispose` on another
    /// thread takes the lock before it releases anything.
    ///
    /// A terminal event: the announcement is a plain store in either case, because the
    /// event's one locked instruction, the compare-exchange that closes the gate
    /// (``closeForTermination(_:)``), is the handshake: `dispose` sets the closed bit with
    /// a read-modify-write of the same word, so the two are ordered; if the close comes
    /// first, its release publishes the announcement to the `dispose` that then finds the
    /// gate closed and waits; if `dispose` comes first, the close fails and nothing is
    /// called. (One locked instruction per terminal event instead of two.)
    ///
    /// A value delivered by the thread that holds the registered `serializer`'s lock is
    /// treated as one with `sourceLockHeld`: `dispose` takes that lock too.
    @inlinable @inline(__always)
    func deliver(_ event: Event<Value>, sourceLockHeld lockHeldByCaller: Bool) {
        let me = Int(bitPattern: csys_thread_token())
        var sourceLockHeld = lockHeldByCaller
        let previous: Int
        if sourceLockHeld || event.isTerminating {
            previous = subclassWord.load(ordering: .relaxed)
            if previous != me { subclassWord.store(me, ordering: .relaxed) }
        } else if deliversUnderSerializer(me) {
            // Written out again rather than folded into the branch above: folded, the
            // specialized combineLatest row took one instruction more per update (363.0
            // against 362.0 under callgrind).
            sourceLockHeld = true
            previous = subclassWord.load(ordering: .relaxed)
            if previous != me { subclassWord.store(me, ordering: .relaxed) }
        } else {
            previous = subclassWord.exchange(me, ordering: .sequentiallyConsistent)
        }
        defer {
            if previous != me {
                // The outermost delivery on this thread: release the callbacks if a
                // disposal or a terminal event inside it left that to us.
                if state.load(ordering: .relaxed) & BlockSubscriber.releasePendingBit != 0 {
                    releasePendingCallbacks()
                }
                subclassWord.store(0, ordering: .releasing)
            }
        }
        switch event {
        case .next(let value):
            // Two spellings because an `Atomic` ordering must be a constant.
            let gate = sourceLockHeld
                ? state.load(ordering: .relaxed) : state.load(ordering: .sequentiallyConsistent)
            if gate & BlockSubscriber.closedBit != 0 { return }
            BlockSubscriber.call(&onNext, value)
        case .error, .completed:
            deliverTerminal(event, insideDelivery: previous == me)
        }
    }

    /// A terminal event's part of ``deliver(_:sourceLockHeld:)``: close the gate, call the
    /// callback, release the callbacks, dispose the members.
    ///
    /// Out of line (still specialized in the caller's module) because it runs once per
    /// subscription: inline, it made `deliver` too large for the optimizer to inline
    /// `receive` into a fused chain's last stage once the value path checked for a
    /// registered `serializer` (the pipeline row: a call per value, 237.5 → 246.5
    /// instructions; forcing `receive` inline instead put the cold row's subscription on
    /// the heap).
    @inlinable @inline(never)
    final func deliverTerminal(_ event: Event<Value>, insideDelivery: Bool) {
        guard let was = closeForTermination() else { return }
        switch event {
        case .next: break
        case .error(let error): BlockSubscriber.call(&onError, error)
        case .completed: BlockSubscriber.call(&onCompleted)
        }
        releaseCallbacksAfterClosing(insideDelivery: insideDelivery)
        if was & Disposable.disposedBit == 0 { disposeMembers() }
        // A `dispose()` after this returns early, and this subscriber keeps a registered
        // serializer until it is freed: its latest values go now, once per subscription
        // and out of the value path (in the state's own terminal step it cost every update
        // 3 instructions).
        releaseSerializerValues()
    }

    /// Has a registered serializer's state drop its latest values (and ignore any later
    /// event), under its lock: a subscriber keeps that state until it is freed, and must
    /// keep no value past its end. The lock is recursive, so this may run on a thread
    /// that holds it (a terminal event sent by the state itself).
    @usableFromInline
    final func releaseSerializerValues() {
        if let held = serializer.load(ordering: .sequentiallyConsistent) {
            held._withUnsafeGuaranteedRef { $0.lock.lock(); $0.releaseValues(); $0.lock.unlock() }
        }
    }

    /// A terminal event's one locked instruction: closes the gate and sets the disposed
    /// bit together, unless the gate is already closed (then `nil`: nothing is delivered).
    /// Returns the word from before. The members are disposed after the callback, as
    /// before, by whoever set the disposed bit (`disposeMembers`); setting it with the
    /// closed bit rather than in a second locked instruction afterwards only means that
    /// the subscription already reads as disposed inside its terminal callback (as in
    /// RAC, whose subscriber disposes before it calls the completed or error block) and
    /// that a member added from that callback is disposed at once. A compare-exchange,
    /// not a fetch-or: the disposed bit must stay clear when the gate was closed by
    /// `dispose()`, which disposes the members itself afterwards.
    @inlinable @inline(__always)
    func closeForTermination() -> Int? {
        let closing = BlockSubscriber.closedBit | Disposable.disposedBit
        var was = state.load(ordering: .relaxed)
        while true {
            if was & BlockSubscriber.closedBit != 0 { return nil }
            let (exchanged, original) = state.compareExchange(
                expected: was, desired: was | closing, ordering: .sequentiallyConsistent)
            if exchanged { return was }
            was = original
        }
    }

    /// Calls a callback in place, without retaining what it captures: the `inout` access
    /// promises that nothing replaces the callback during the call, which is what lets
    /// the compiler borrow it (a plain `onNext?(value)` on a `var` costs a retain and a
    /// release per event, two locked instructions). The promise holds because callbacks
    /// are only released when no delivery of this subscriber is running: a disposal or
    /// terminal event from inside a callback leaves the release to the outermost
    /// delivery on that thread (`releasePendingBit`), and `dispose()` from another thread
    /// waits for the delivery first.
    @inlinable @inline(__always)
    static func call<Argument>(_ callback: inout ((Argument) -> Void)?, _ argument: Argument) {
        callback?(argument)
    }

    /// ``call(_:_:)`` for the completion callback.
    @inlinable @inline(__always)
    static func call(_ callback: inout (() -> Void)?) {
        callback?()
    }

    /// Drops the callbacks (and what they capture); called once, by the thread that closed
    /// the gate, when no other thread is delivering.
    @usableFromInline
    final func releaseCallbacks() {
        onNext = nil
        onError = nil
        onCompleted = nil
    }

    /// After the gate closed on this thread: releases the callbacks now, or, inside a
    /// delivery of this subscriber (a callback of it is still running and borrows its
    /// closure), marks them for the outermost delivery to release.
    @usableFromInline
    final func releaseCallbacksAfterClosing(insideDelivery: Bool) {
        if insideDelivery {
            state.bitwiseOr(BlockSubscriber.releasePendingBit, ordering: .sequentiallyConsistent)
        } else {
            releaseCallbacks()
        }
    }

    /// The outermost delivery's part of a deferred release: whoever clears the pending
    /// bit releases, once.
    @usableFromInline
    final func releasePendingCallbacks() {
        let was = state.bitwiseAnd(~BlockSubscriber.releasePendingBit, ordering: .sequentiallyConsistent).oldValue
        if was & BlockSubscriber.releasePendingBit != 0 { releaseCallbacks() }
    }

    /// Closes the gate, waits for a delivery running on another thread, then disposes the
    /// subscription's resources.
    @usableFromInline
    override func dispose() {
        // Already disposed (a terminal event ended it, the common case for a subscription
        // disposed by its owner afterwards) and no delivery under way: the callbacks are
        // gone and the members disposed, so no locked instruction is needed.
        if state.load(ordering: .sequentiallyConsistent) & Disposable.disposedBit != 0
            && subclassWord.load(ordering: .sequentiallyConsistent) == 0 {
            return
        }
        let closedHere = state.bitwiseOr(BlockSubscriber.closedBit, ordering: .sequentiallyConsistent).oldValue
            & BlockSubscriber.closedBit == 0
        let me = Int(bitPattern: csys_thread_token())
        var spins = 0
        var delivering = 0
        while true {
            delivering = subclassWord.load(ordering: .sequentiallyConsistent)
            if delivering == 0 || delivering == me { break }
            spins += 1
            if spins > 64 { csys_thread_yield() }
        }
        // A subject's send announces itself with a plain store, which this thread may not
        // see yet: wait for a send under way by taking the subject's lock (re-entrant, so
        // from inside a send on this thread it returns at once and `delivering` above,
        // this thread's own store, tells whether this subscriber's callback is running).
        sourceRemoval?.roster.waitForSends()
        // Likewise for a value delivered under a registered serializer's lock. Read after
        // the close (both sequentially consistent; see `serializeDeliveries(under:)`).
        // Under that lock the state also drops its latest values (and ignores any later
        // event), so this subscriber, which keeps the state until it is freed, keeps no
        // value past its disposal.
        releaseSerializerValues()
        // `delivering == me`: called from inside one of this subscriber's callbacks, which
        // is still running on its borrowed closure; the delivery releases them on its way out.
        if closedHere { releaseCallbacksAfterClosing(insideDelivery: delivering == me) }
        super.dispose()
    }
}

// The per-subscription state of the typed `combineLatest` of 2 to 6 signals: the latest
// value of each source in a typed slot, and how many sources are still active. One class
// per arity (generated shape: only the slot lists differ), so values are never boxed.
//
// Each source's sink hands `receive` a `store` closure that is given the state rather than
// capturing it (`{ $0.a = $1 }`, not `{ state.a = $0 }`): a closure that captured the state
// made the optimizer retain and release the state around every event: two locked
// instructions and two runtime calls per value (the two-way row: 435 instructions per
// update under callgrind with them, 362 without; Benchmarks/README.md, "combineLatest
// below its closure baseline"). Capturing nothing, the closure is a plain function and is
// inlined into the specialized `receive`.
//
// Every value is sent on with `lock` held, which is why each form registers its state with
// the subscription before subscribing (`lifetime.serializeDeliveries(under: state)`): a
// `BlockSubscriber` then delivers a value arriving under this lock without its locked
// announcement, and its `dispose()` takes the lock instead (docs/ENGINE.md, "Who owns which
// state bit"). A `receive` that sent a value after unlocking would break that.
//
// Subscribed to directly, each form is handed the subscriber (`SubscriberAwareSignal`) and
// `receive` gets it unretained (`BlockSubscriber.direct(_:serializedBy:_:)`, `nil` behind
// a stage): a value then goes straight to `receiveUnderSerializer` instead of through the
// forwarding closure (`sendNextLocked`); terminal events still take `observer`.

/// State of `combineLatest` of 2 signals (`Signal.combineLatest(_:_:…)` and `combineLatest(with:)`).
@usableFromInline
final class CombineLatest2State<A, B>: TerminableState, @unchecked Sendable {
    @usableFromInline @exclusivity(unchecked) var a: A?
    @usableFromInline @exclusivity(unchecked) var b: B?
    /// Sources that have not completed; guarded by `lock`.
    @usableFromInline @exclusivity(unchecked) var active = 2

    @inlinable
    override init() { super.init() }

    /// Drops the latest values and sets `done`, so a value arriving after this (a late
    /// source on another thread, already past the subscriber's gate) stores nothing.
    @usableFromInline
    override func releaseValues() { done = true; a = nil; b = nil }

    /// Handles one source's event; `store` puts a value into that source's slot of the
    /// state it is given (a closure that captures nothing: see the top of this file).
    ///
    /// The lock is held while the tuple is sent, so emissions never overlap; it is
    /// re-entrant, so the downstream may send into a source from its callback.
    @inlinable
    func receive<S>(_ event: Event<S>, _ observer: Sink<(A, B)>, _ subscriber: Unmanaged<BlockSubscriber<(A, B)>>?, _ lifetime: CompoundDisposable, _ store: (CombineLatest2State, S) -> Void) {
        lock.lock()
        if done {
            lock.unlock()
            return
        }
        switch event {
        case .next(let value):
            store(self, value)
            if let a, let b { sendNextLocked((a, b), observer, subscriber) }
            lock.unlock()
        case .error(let error):
            finishLocked(.error(error), observer, lifetime)
        case .completed:
            active -= 1
            if active == 0 {
                finishLocked(.completed, observer, lifetime)
            } else {
                lock.unlock()
            }
        }
    }
}

/// State of `combineLatest` of 3 signals (`Signal.combineLatest(_:_:…)`).
@usableFromInline
final class CombineLatest3State<A, B, C>: TerminableState, @unchecked Sendable {
    @usableFromInline @exclusivity(unchecked) var a: A?
    @usableFromInline @exclusivity(unchecked) var b: B?
    @usableFromInline @exclusivity(unchecked) var c: C?
    /// Sources that have not completed; guarded by `lock`.
    @usableFromInline @exclusivity(unchecked) var active = 3

    @inlinable
    override init() { super.init() }

    /// Drops the latest values and sets `done`, so a value arriving after this (a late
    /// source on another thread, already past the subscriber's gate) stores nothing.
    @usableFromInline
    override func releaseValues() { done = true; a = nil; b = nil; c = nil }

    /// Handles one source's event; `store` puts a value into that source's slot of the
    /// state it is given (a closure that captures nothing: see the top of this file).
    ///
    /// The lock is held while the tuple is sent, so emissions never overlap; it is
    /// re-entrant, so the downstream may send into a source from its callback.
    @inlinable
    func receive<S>(_ event: Event<S>, _ observer: Sink<(A, B, C)>, _ subscriber: Unmanaged<BlockSubscriber<(A, B, C)>>?, _ lifetime: CompoundDisposable, _ store: (CombineLatest3State, S) -> Void) {
        lock.lock()
        if done {
            lock.unlock()
            return
        }
        switch event {
        case .next(let value):
            store(self, value)
            if let a, let b, let c { sendNextLocked((a, b, c), observer, subscriber) }
            lock.unlock()
        case .error(let error):
            finishLocked(.error(error), observer, lifetime)
        case .completed:
            active -= 1
            if active == 0 {
                finishLocked(.completed, observer, lifetime)
            } else {
                lock.unlock()
            }
        }
    }
}

/// State of `combineLatest` of 4 signals (`Signal.combineLatest(_:_:…)`).
@usableFromInline
final class CombineLatest4State<A, B, C, D>: TerminableState, @unchecked Sendable {
    @usableFromInline @exclusivity(unchecked) var a: A?
    @usableFromInline @exclusivity(unchecked) var b: B?
    @usableFromInline @exclusivity(unchecked) var c: C?
    @usableFromInline @exclusivity(unchecked) var d: D?
    /// Sources that have not completed; guarded by `lock`.
    @usableFromInline @exclusivity(unchecked) var active = 4

    @inlinable
    override init() { super.init() }

    /// Drops the latest values and sets `done`, so a value arriving after this (a late
    /// source on another thread, already past the subscriber's gate) stores nothing.
    @usableFromInline
    override func releaseValues() { done = true; a = nil; b = nil; c = nil; d = nil }

    /// Handles one source's event; `store` puts a value into that source's slot of the
    /// state it is given (a closure that captures nothing: see the top of this file).
    ///
    /// The lock is held while the tuple is sent, so emissions never overlap; it is
    /// re-entrant, so the downstream may send into a source from its callback.
    @inlinable
    func receive<S>(_ event: Event<S>, _ observer: Sink<(A, B, C, D)>, _ subscriber: Unmanaged<BlockSubscriber<(A, B, C, D)>>?, _ lifetime: CompoundDisposable, _ store: (CombineLatest4State, S) -> Void) {
        lock.lock()
        if done {
            lock.unlock()
            return
        }
        switch event {
        case .next(let value):
            store(self, value)
            if let a, let b, let c, let d { sendNextLocked((a, b, c, d), observer, subscriber) }
            lock.unlock()
        case .error(let error):
            finishLocked(.error(error), observer, lifetime)
        case .completed:
            active -= 1
            if active == 0 {
                finishLocked(.completed, observer, lifetime)
            } else {
                lock.unlock()
            }
        }
    }
}

/// State of `combineLatest` of 5 signals (`Signal.combineLatest(_:_:…)`).
@usableFromInline
final class CombineLatest5State<A, B, C, D, E>: TerminableState, @unchecked Sendable {
    @usableFromInline @exclusivity(unchecked) var a: A?
    @usableFromInline @exclusivity(unchecked) var b: B?
    @usableFromInline @exclusivity(unchecked) var c: C?
    @usableFromInline @exclusivity(unchecked) var d: D?
    @usableFromInline @exclusivity(unchecked) var e: E?
    /// Sources that have not completed; guarded by `lock`.
    @usableFromInline @exclusivity(unchecked) var active = 5

    @inlinable
    override init() { super.init() }

    /// Drops the latest values and sets `done`, so a value arriving after this (a late
    /// source on another thread, already past the subscriber's gate) stores nothing.
    @usableFromInline
    override func releaseValues() { done = true; a = nil; b = nil; c = nil; d = nil; e = nil }

    /// Handles one source's event; `store` puts a value into that source's slot of the
    /// state it is given (a closure that captures nothing: see the top of this file).
    ///
    /// The lock is held while the tuple is sent, so emissions never overlap; it is
    /// re-entrant, so the downstream may send into a source from its callback.
    @inlinable
    func receive<S>(_ event: Event<S>, _ observer: Sink<(A, B, C, D, E)>, _ subscriber: Unmanaged<BlockSubscriber<(A, B, C, D, E)>>?, _ lifetime: CompoundDisposable, _ store: (CombineLatest5State, S) -> Void) {
        lock.lock()
        if done {
            lock.unlock()
            return
        }
        switch event {
        case .next(let value):
            store(self, value)
            if let a, let b, let c, let d, let e { sendNextLocked((a, b, c, d, e), observer, subscriber) }
            lock.unlock()
        case .error(let error):
            finishLocked(.error(error), observer, lifetime)
        case .completed:
            active -= 1
            if active == 0 {
                finishLocked(.completed, observer, lifetime)
            } else {
                lock.unlock()
            }
        }
    }
}

/// State of `combineLatest` of 6 signals (`Signal.combineLatest(_:_:…)`).
@usableFromInline
final class CombineLatest6State<A, B, C, D, E, F>: TerminableState, @unchecked Sendable {
    @usableFromInline @exclusivity(unchecked) var a: A?
    @usableFromInline @exclusivity(unchecked) var b: B?
    @usableFromInline @exclusivity(unchecked) var c: C?
    @usableFromInline @exclusivity(unchecked) var d: D?
    @usableFromInline @exclusivity(unchecked) var e: E?
    @usableFromInline @exclusivity(unchecked) var f: F?
    /// Sources that have not completed; guarded by `lock`.
    @usableFromInline @exclusivity(unchecked) var active = 6

    @inlinable
    override init() { super.init() }

    /// Drops the latest values and sets `done`, so a value arriving after this (a late
    /// source on another thread, already past the subscriber's gate) stores nothing.
    @usableFromInline
    override func releaseValues() { done = true; a = nil; b = nil; c = nil; d = nil; e = nil; f = nil }

    /// Handles one source's event; `store` puts a value into that source's slot of the
    /// state it is given (a closure that captures nothing: see the top of this file).
    ///
    /// The lock is held while the tuple is sent, so emissions never overlap; it is
    /// re-entrant, so the downstream may send into a source from its callback.
    @inlinable
    func receive<S>(_ event: Event<S>, _ observer: Sink<(A, B, C, D, E, F)>, _ subscriber: Unmanaged<BlockSubscriber<(A, B, C, D, E, F)>>?, _ lifetime: CompoundDisposable, _ store: (CombineLatest6State, S) -> Void) {
        lock.lock()
        if done {
            lock.unlock()
            return
        }
        switch event {
        case .next(let value):
            store(self, value)
            if let a, let b, let c, let d, let e, let f { sendNextLocked((a, b, c, d, e, f), observer, subscriber) }
            lock.unlock()
        case .error(let error):
            finishLocked(.error(error), observer, lifetime)
        case .completed:
            active -= 1
            if active == 0 {
                finishLocked(.completed, observer, lifetime)
            } else {
                lock.unlock()
            }
        }
    }
}

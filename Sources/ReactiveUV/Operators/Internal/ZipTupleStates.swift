// The per-subscription state of the typed `zip` of 2 to 6 signals: a typed queue per
// source (``ZipQueue``). One class per arity (generated shape: only the queue lists differ),
// so values are never boxed.

/// State of `zip` of 2 signals (`Signal.zip(_:_:…)` and `zip(with:)`).
@usableFromInline
final class Zip2State<A, B>: TerminableState, @unchecked Sendable {
    @usableFromInline @exclusivity(unchecked) var a = ZipQueue<A>()
    @usableFromInline @exclusivity(unchecked) var b = ZipQueue<B>()

    @inlinable
    override init() { super.init() }

    /// Handles one source's event: `push` queues a value for that source, `completed` marks
    /// it complete (a completion event carries no source, so each source says which).
    ///
    /// RAC's rule: a tuple goes out once every queue has a value; the zip completes as soon
    /// as a completed source has nothing queued; an error goes out at once.
    @inlinable
    func receive<S>(
        _ event: Event<S>, _ observer: Sink<(A, B)>, _ lifetime: CompoundDisposable,
        _ push: (S) -> Void, completed: () -> Void
    ) {
        lock.lock()
        if done {
            lock.unlock()
            return
        }
        switch event {
        case .next(let value):
            push(value)
            if !a.isEmpty && !b.isEmpty { observer(.next((a.pop(), b.pop()))) }
        case .error(let error):
            finishLocked(.error(error), observer, lifetime)
            return
        case .completed:
            completed()
        }
        if !done && (a.isFinished || b.isFinished) {
            finishLocked(.completed, observer, lifetime)
            return
        }
        lock.unlock()
    }
}

/// State of `zip` of 3 signals (`Signal.zip(_:_:…)`).
@usableFromInline
final class Zip3State<A, B, C>: TerminableState, @unchecked Sendable {
    @usableFromInline @exclusivity(unchecked) var a = ZipQueue<A>()
    @usableFromInline @exclusivity(unchecked) var b = ZipQueue<B>()
    @usableFromInline @exclusivity(unchecked) var c = ZipQueue<C>()

    @inlinable
    override init() { super.init() }

    /// Handles one source's event: `push` queues a value for that source, `completed` marks
    /// it complete (a completion event carries no source, so each source says which).
    ///
    /// RAC's rule: a tuple goes out once every queue has a value; the zip completes as soon
    /// as a completed source has nothing queued; an error goes out at once.
    @inlinable
    func receive<S>(
        _ event: Event<S>, _ observer: Sink<(A, B, C)>, _ lifetime: CompoundDisposable,
        _ push: (S) -> Void, completed: () -> Void
    ) {
        lock.lock()
        if done {
            lock.unlock()
            return
        }
        switch event {
        case .next(let value):
            push(value)
            if !a.isEmpty && !b.isEmpty && !c.isEmpty { observer(.next((a.pop(), b.pop(), c.pop()))) }
        case .error(let error):
            finishLocked(.error(error), observer, lifetime)
            return
        case .completed:
            completed()
        }
        if !done && (a.isFinished || b.isFinished || c.isFinished) {
            finishLocked(.completed, observer, lifetime)
            return
        }
        lock.unlock()
    }
}

/// State of `zip` of 4 signals (`Signal.zip(_:_:…)`).
@usableFromInline
final class Zip4State<A, B, C, D>: TerminableState, @unchecked Sendable {
    @usableFromInline @exclusivity(unchecked) var a = ZipQueue<A>()
    @usableFromInline @exclusivity(unchecked) var b = ZipQueue<B>()
    @usableFromInline @exclusivity(unchecked) var c = ZipQueue<C>()
    @usableFromInline @exclusivity(unchecked) var d = ZipQueue<D>()

    @inlinable
    override init() { super.init() }

    /// Handles one source's event: `push` queues a value for that source, `completed` marks
    /// it complete (a completion event carries no source, so each source says which).
    ///
    /// RAC's rule: a tuple goes out once every queue has a value; the zip completes as soon
    /// as a completed source has nothing queued; an error goes out at once.
    @inlinable
    func receive<S>(
        _ event: Event<S>, _ observer: Sink<(A, B, C, D)>, _ lifetime: CompoundDisposable,
        _ push: (S) -> Void, completed: () -> Void
    ) {
        lock.lock()
        if done {
            lock.unlock()
            return
        }
        switch event {
        case .next(let value):
            push(value)
            if !a.isEmpty && !b.isEmpty && !c.isEmpty && !d.isEmpty { observer(.next((a.pop(), b.pop(), c.pop(), d.pop()))) }
        case .error(let error):
            finishLocked(.error(error), observer, lifetime)
            return
        case .completed:
            completed()
        }
        if !done && (a.isFinished || b.isFinished || c.isFinished || d.isFinished) {
            finishLocked(.completed, observer, lifetime)
            return
        }
        lock.unlock()
    }
}

/// State of `zip` of 5 signals (`Signal.zip(_:_:…)`).
@usableFromInline
final class Zip5State<A, B, C, D, E>: TerminableState, @unchecked Sendable {
    @usableFromInline @exclusivity(unchecked) var a = ZipQueue<A>()
    @usableFromInline @exclusivity(unchecked) var b = ZipQueue<B>()
    @usableFromInline @exclusivity(unchecked) var c = ZipQueue<C>()
    @usableFromInline @exclusivity(unchecked) var d = ZipQueue<D>()
    @usableFromInline @exclusivity(unchecked) var e = ZipQueue<E>()

    @inlinable
    override init() { super.init() }

    /// Handles one source's event: `push` queues a value for that source, `completed` marks
    /// it complete (a completion event carries no source, so each source says which).
    ///
    /// RAC's rule: a tuple goes out once every queue has a value; the zip completes as soon
    /// as a completed source has nothing queued; an error goes out at once.
    @inlinable
    func receive<S>(
        _ event: Event<S>, _ observer: Sink<(A, B, C, D, E)>, _ lifetime: CompoundDisposable,
        _ push: (S) -> Void, completed: () -> Void
    ) {
        lock.lock()
        if done {
            lock.unlock()
            return
        }
        switch event {
        case .next(let value):
            push(value)
            if !a.isEmpty && !b.isEmpty && !c.isEmpty && !d.isEmpty && !e.isEmpty { observer(.next((a.pop(), b.pop(), c.pop(), d.pop(), e.pop()))) }
        case .error(let error):
            finishLocked(.error(error), observer, lifetime)
            return
        case .completed:
            completed()
        }
        if !done && (a.isFinished || b.isFinished || c.isFinished || d.isFinished || e.isFinished) {
            finishLocked(.completed, observer, lifetime)
            return
        }
        lock.unlock()
    }
}

/// State of `zip` of 6 signals (`Signal.zip(_:_:…)`).
@usableFromInline
final class Zip6State<A, B, C, D, E, F>: TerminableState, @unchecked Sendable {
    @usableFromInline @exclusivity(unchecked) var a = ZipQueue<A>()
    @usableFromInline @exclusivity(unchecked) var b = ZipQueue<B>()
    @usableFromInline @exclusivity(unchecked) var c = ZipQueue<C>()
    @usableFromInline @exclusivity(unchecked) var d = ZipQueue<D>()
    @usableFromInline @exclusivity(unchecked) var e = ZipQueue<E>()
    @usableFromInline @exclusivity(unchecked) var f = ZipQueue<F>()

    @inlinable
    override init() { super.init() }

    /// Handles one source's event: `push` queues a value for that source, `completed` marks
    /// it complete (a completion event carries no source, so each source says which).
    ///
    /// RAC's rule: a tuple goes out once every queue has a value; the zip completes as soon
    /// as a completed source has nothing queued; an error goes out at once.
    @inlinable
    func receive<S>(
        _ event: Event<S>, _ observer: Sink<(A, B, C, D, E, F)>, _ lifetime: CompoundDisposable,
        _ push: (S) -> Void, completed: () -> Void
    ) {
        lock.lock()
        if done {
            lock.unlock()
            return
        }
        switch event {
        case .next(let value):
            push(value)
            if !a.isEmpty && !b.isEmpty && !c.isEmpty && !d.isEmpty && !e.isEmpty && !f.isEmpty { observer(.next((a.pop(), b.pop(), c.pop(), d.pop(), e.pop(), f.pop()))) }
        case .error(let error):
            finishLocked(.error(error), observer, lifetime)
            return
        case .completed:
            completed()
        }
        if !done && (a.isFinished || b.isFinished || c.isFinished || d.isFinished || e.isFinished || f.isFinished) {
            finishLocked(.completed, observer, lifetime)
            return
        }
        lock.unlock()
    }
}

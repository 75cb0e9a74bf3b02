/// State of `flatten(_:)` (and so of `merge`, `flattenMap` and `concat()`): the active
/// inner count, inners waiting for a free slot, and whether the outer has ended.
///
/// Starting waiting inners is trampolined: whichever thread finds the slot free starts
/// them in a loop, so 100,000 synchronous inners concatenated never deepen the stack.
@usableFromInline
final class FlattenState<Value>: LockedState, @unchecked Sendable {
    @usableFromInline let maxConcurrent: Int
    @usableFromInline let observer: Sink<Value>
    @usableFromInline let lifetime: CompoundDisposable
    @usableFromInline @exclusivity(unchecked) var active = 0
    @usableFromInline @exclusivity(unchecked) var waiting: [Signal<Value>] = []
    @usableFromInline @exclusivity(unchecked) var waitingHead = 0
    @usableFromInline @exclusivity(unchecked) var outerDone = false
    @usableFromInline @exclusivity(unchecked) var done = false
    @usableFromInline @exclusivity(unchecked) var draining = false

    @inlinable
    init(maxConcurrent: Int, observer: @escaping Sink<Value>, lifetime: CompoundDisposable) {
        self.maxConcurrent = maxConcurrent
        self.observer = observer
        self.lifetime = lifetime
        super.init()
    }

    @inlinable
    func outer(_ event: Event<Signal<Value>>) {
        switch event {
        case .next(let inner):
            lock.lock()
            if done {
                lock.unlock()
                return
            }
            waiting.append(inner)
            lock.unlock()
            drain()
        case .error(let e): fail(e)
        case .completed:
            lock.lock()
            outerDone = true
            lock.unlock()
            completeIfFinished()
        }
    }

    /// Starts waiting inners while slots are free.
    @inlinable
    func drain() {
        lock.lock()
        if draining {
            lock.unlock()
            return
        }
        draining = true
        while !done && waitingHead < waiting.count && (maxConcurrent <= 0 || active < maxConcurrent) {
            let inner = waiting[waitingHead]
            waitingHead += 1
            if waitingHead == waiting.count {
                waiting.removeAll(keepingCapacity: true)
                waitingHead = 0
            }
            active += 1
            lock.unlock()
            subscribe(inner)
            lock.lock()
        }
        draining = false
        lock.unlock()
        // The outer may have completed while this frame was starting inners (re-entrantly,
        // from an inner's value) with nothing left to start: check it now.
        completeIfFinished()
    }

    @inlinable
    func subscribe(_ inner: Signal<Value>) {
        let part = lifetime.child()
        inner.attach({ [self] event in
            switch event {
            case .next:
                lock.lock()
                if !done { observer(event) }
                lock.unlock()
            case .error(let e): fail(e)
            case .completed:
                lifetime.end(part)
                lock.lock()
                active -= 1
                lock.unlock()
                drain()
                completeIfFinished()
            }
        }, part)
    }

    @inlinable
    func fail(_ error: any Error) {
        lock.lock()
        if done {
            lock.unlock()
            return
        }
        done = true
        observer(.error(error))
        lock.unlock()
        lifetime.dispose()
    }

    @inlinable
    func completeIfFinished() {
        lock.lock()
        // Not gated on `draining`: when the last inner completes synchronously inside its
        // own subscription (started by a draining frame further up this stack), the result
        // completes and the outer is disposed right there, before that subscription block
        // returns (RAC's `-flatten:` finishes in step). The frame that was draining finds
        // `done` set and stops; `active` already counts every inner being started, so
        // nothing is lost.
        if done || !outerDone || active > 0 || waitingHead < waiting.count {
            lock.unlock()
            return
        }
        done = true
        observer(.completed)
        lock.unlock()
        lifetime.dispose()
    }
}

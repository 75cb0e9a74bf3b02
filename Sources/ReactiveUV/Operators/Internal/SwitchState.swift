/// State of `switchToLatest`: which inner is the latest (by generation), and whether the
/// outer and the latest inner have ended.
@usableFromInline
final class SwitchState<Value>: LockedState, @unchecked Sendable {
    @usableFromInline let observer: Sink<Value>
    @usableFromInline let lifetime: CompoundDisposable
    @usableFromInline @exclusivity(unchecked) var generation = 0
    @usableFromInline @exclusivity(unchecked) var current: CompoundDisposable?
    @usableFromInline @exclusivity(unchecked) var innerActive = false
    @usableFromInline @exclusivity(unchecked) var outerDone = false
    @usableFromInline @exclusivity(unchecked) var done = false

    @inlinable
    init(observer: @escaping Sink<Value>, lifetime: CompoundDisposable) {
        self.observer = observer
        self.lifetime = lifetime
        super.init()
    }

    @inlinable
    func outer(_ event: Event<Signal<Value>>) {
        switch event {
        case .next(let inner):
            let part = CompoundDisposable()
            lock.lock()
            if done {
                lock.unlock()
                return
            }
            generation += 1
            let gen = generation
            let previous = current
            current = part
            innerActive = true
            lock.unlock()
            if let previous { lifetime.end(previous) }
            lifetime.add(part)
            inner.attach({ [self] event in
                lock.lock()
                if done || gen != generation {
                    lock.unlock()
                    return
                }
                switch event {
                case .next:
                    observer(event)
                    lock.unlock()
                case .error:
                    done = true
                    observer(event)
                    lock.unlock()
                    lifetime.dispose()
                case .completed:
                    innerActive = false
                    let finished = outerDone
                    if finished {
                        done = true
                        observer(.completed)
                    }
                    lock.unlock()
                    if finished { lifetime.dispose() } else { lifetime.end(part) }
                }
            }, part)
        case .error(let error):
            lock.lock()
            if done {
                lock.unlock()
                return
            }
            done = true
            observer(.error(error))
            lock.unlock()
            lifetime.dispose()
        case .completed:
            lock.lock()
            outerDone = true
            let finished = !innerActive && !done
            if finished {
                done = true
                observer(.completed)
            }
            lock.unlock()
            if finished { lifetime.dispose() }
        }
    }
}

/// State of `Signal.combineLatest(_:)` over a collection of signals of one type: the latest
/// value of each source, typed (no boxing).
///
/// Until every source has sent, values wait in `partial`; from then on they live in
/// `latest`, and each update writes one element and sends the array itself. A subscriber
/// that does not keep the array leaves it uniquely referenced again, so the next update
/// writes in place: no allocation per emission (one that keeps it gets its own copy on the
/// next write, as arrays do).
@usableFromInline
final class CombineLatestArrayState<Value>: TerminableState, @unchecked Sendable {
    @usableFromInline @exclusivity(unchecked) var partial: [Value?]
    @usableFromInline @exclusivity(unchecked) var latest: [Value] = []
    /// Sources that have not sent yet.
    @usableFromInline @exclusivity(unchecked) var missing: Int
    /// Sources that have not completed.
    @usableFromInline @exclusivity(unchecked) var active: Int

    @inlinable
    init(count: Int) {
        partial = Array(repeating: nil, count: count)
        missing = count
        active = count
        super.init()
    }

    /// Drops the latest values and sets `done`, so a value arriving after this stores
    /// nothing (nor indexes the emptied `latest`).
    @usableFromInline
    override func releaseValues() { done = true; partial = []; latest = [] }

    /// Handles an event of the source at `index`; sends with the lock held (re-entrant).
    @inlinable
    func receive(_ event: Event<Value>, at index: Int, _ observer: Sink<[Value]>, _ lifetime: CompoundDisposable) {
        lock.lock()
        if done {
            lock.unlock()
            return
        }
        switch event {
        case .next(let value):
            if missing == 0 {
                latest[index] = value
                observer(.next(latest))
            } else {
                if partial[index] == nil { missing -= 1 }
                partial[index] = value
                if missing == 0 {
                    latest = partial.map { $0! }
                    partial = []
                    observer(.next(latest))
                }
            }
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

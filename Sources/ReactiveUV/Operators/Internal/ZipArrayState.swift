/// State of `Signal.zip(_:)` over a collection of signals of one type: a typed
/// ``ZipQueue`` per source (no boxing).
///
/// `empty` counts the queues with nothing waiting, so knowing whether an array can go out
/// is O(1) per value. The outgoing array is built in `out`, reused the way
/// ``CombineLatestArrayState`` reuses its array: no allocation per emission when the
/// subscriber does not keep it.
@usableFromInline
final class ZipArrayState<Value>: TerminableState, @unchecked Sendable {
    @usableFromInline @exclusivity(unchecked) var queues: [ZipQueue<Value>]
    @usableFromInline @exclusivity(unchecked) var empty: Int
    @usableFromInline @exclusivity(unchecked) var out: [Value] = []

    @inlinable
    init(count: Int) {
        queues = Array(repeating: ZipQueue(), count: count)
        empty = count
        super.init()
        out.reserveCapacity(count)
    }

    /// Handles an event of the source at `index` (RAC's rules as ``Zip2State``'s).
    @inlinable
    func receive(_ event: Event<Value>, at index: Int, _ observer: Sink<[Value]>, _ lifetime: CompoundDisposable) {
        lock.lock()
        if done {
            lock.unlock()
            return
        }
        var finished = false
        switch event {
        case .next(let value):
            if queues[index].isEmpty { empty -= 1 }
            queues[index].push(value)
            if empty == 0 {
                out.removeAll(keepingCapacity: true)
                for i in queues.indices {
                    out.append(queues[i].pop())
                    if queues[i].isEmpty {
                        empty += 1
                        if queues[i].completed { finished = true }
                    }
                }
                observer(.next(out))
            }
        case .error(let error):
            finishLocked(.error(error), observer, lifetime)
            return
        case .completed:
            queues[index].completed = true
            finished = queues[index].isEmpty
        }
        if finished && !done {
            finishLocked(.completed, observer, lifetime)
            return
        }
        lock.unlock()
    }
}

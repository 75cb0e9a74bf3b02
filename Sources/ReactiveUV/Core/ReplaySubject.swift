/// A subject that replays the values it has seen to new subscribers: RAC's `RACReplaySubject`.
///
/// It keeps the last `capacity` values (``unlimited`` keeps all; 0 keeps none) and its
/// terminal event. A new subscriber first gets the buffered values, then the terminal event
/// if there was one, otherwise live events. The replay happens under the subject's lock, so
/// no live event or termination interleaves with it; disposing during the replay stops it.
public final class ReplaySubject<Value>: Subject<Value>, @unchecked Sendable {
    /// The capacity that keeps every value.
    public static var unlimited: Int { Int.max }

    /// How many values are kept.
    public let capacity: Int
    // Unchecked exclusivity below: every access happens under the subject's lock, and the
    // dynamic check costs a thread-local lookup on each value sent.
    /// The buffered values, oldest first (guarded by the subject's lock).
    @usableFromInline @exclusivity(unchecked) var buffer: [Value] = []
    /// Index of the oldest live value in `buffer` (trimming is amortized).
    @usableFromInline @exclusivity(unchecked) var head = 0
    /// Values ever removed from the front of `buffer` by compaction, so a replay in
    /// progress can keep its place when a re-entrant send compacts the buffer.
    @usableFromInline @exclusivity(unchecked) var compacted = 0

    /// Creates a replay subject keeping the last `capacity` values (negative counts as 0).
    public init(capacity: Int = ReplaySubject.unlimited) {
        self.capacity = max(0, capacity)
        super.init(remembersValues: true)
    }

    @usableFromInline
    override func willSendNext(_ value: Value) {
        guard capacity > 0 else { return }
        buffer.append(value)
        if buffer.count - head > capacity {
            head += 1
            if head > 64 && head * 2 > buffer.count {
                buffer.removeFirst(head)
                compacted += head
                head = 0
            }
        }
    }

    @usableFromInline
    override func attach(_ observer: @escaping Sink<Value>, _ lifetime: CompoundDisposable, subscriber: BlockSubscriber<Value>?) {
        roster.lock.lock()
        // Positions are absolute (counting compacted values), and the bound is re-read each
        // time: a value sent re-entrantly during the replay is appended and replayed too.
        var position = compacted + head
        while true {
            let index = max(position - compacted, head)
            if index >= buffer.count { break }
            if lifetime.isDisposed {
                roster.lock.unlock()
                return
            }
            // The next position is fixed before the callback, which may compact the buffer.
            position = compacted + index + 1
            observer(.next(buffer[index]))
        }
        if let terminal {
            roster.lock.unlock()
            if !lifetime.isDisposed { observer(terminal) }
            return
        }
        if lifetime.isDisposed {
            roster.lock.unlock()
            return
        }
        let id = addEntry(observer, lifetime, subscriber: subscriber)
        roster.lock.unlock()
        registerRemoval(id, lifetime)
    }
}

/// State of `retry`/`repeat`/`retry(when:)`: whether an attempt is being subscribed on this
/// stack, and whether another was requested meanwhile (turning recursion into a loop).
@usableFromInline
class ResubscribeState: LockedState, @unchecked Sendable {
    @usableFromInline var attaching = false
    var again = false
    /// Resubscriptions so far; read and written by the attempt's error path (serialized by
    /// the source's contract).
    @usableFromInline var retries = 0

    @inlinable
    override init() { super.init() }

    /// Runs `attempt`, and again each time it was requested from inside the attempt on this
    /// stack, until no new request came or `lifetime` ended. A request made while an attempt
    /// is being subscribed only marks it; the running loop picks it up.
    ///
    /// - Returns: whether this call ran the loop (`false`: the request was deferred).
    @discardableResult
    @usableFromInline
    func trampoline(_ lifetime: CompoundDisposable, _ attempt: () -> Void) -> Bool {
        lock.lock()
        if attaching {
            again = true
            lock.unlock()
            return false
        }
        attaching = true
        lock.unlock()
        repeat {
            lock.lock()
            again = false
            lock.unlock()
            if lifetime.isDisposed { break }
            attempt()
            lock.lock()
            let more = again
            lock.unlock()
            if !more { break }
        } while true
        lock.lock()
        attaching = false
        lock.unlock()
        return true
    }
}

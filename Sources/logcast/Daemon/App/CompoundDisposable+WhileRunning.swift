import ReactiveUV

// The daemon's long-lived compounds (`running`, `subscriptions`) live as long as the process.
// A plain `running += signal.subscribe(…)` keeps the subscription there after it has ended
// (a compound never drops a member by itself), so one publish per batch, one lookup per
// duplicate, two subscriptions per forward connection and one timer per retry would each
// leave a finished object behind for the rest of the daemon's life. These hold one only
// while it runs.

extension CompoundDisposable {
    /// Subscribes to `signal` and keeps the subscription in this compound until it ends:
    /// a terminal event removes it (before `error` or `completed` runs); disposing the
    /// compound first disposes it, as `+=` would.
    ///
    /// For signals whose events arrive on the thread that subscribes (the daemon's loop):
    /// the removal and the adding are not synchronized with each other.
    ///
    /// - Returns: the subscription (already ended if the signal ended synchronously).
    @discardableResult
    func whileRunning<Value>(
        _ signal: Signal<Value>,
        next: @escaping (Value) -> Void = { _ in },
        error: @escaping (any Error) -> Void = { _ in },
        completed: @escaping () -> Void = {}
    ) -> Disposable {
        hold { ended in
            signal.subscribe(
                next: next,
                error: { failure in
                    ended()
                    error(failure)
                },
                completed: {
                    ended()
                    completed()
                })
        }
    }

    /// Runs `block` on `scheduler` after `delay` seconds, keeping the timer in this compound
    /// until it has fired (disposing the compound first cancels it).
    ///
    /// - Returns: the timer's disposable (`nil` if the scheduler could not schedule it).
    @discardableResult
    func afterDelay(_ delay: Double, on scheduler: Scheduler = .main, _ block: @escaping () -> Void) -> Disposable? {
        var timer: Disposable?
        hold { ended in
            timer = scheduler.afterDelay(delay) {
                ended()
                block()
            }
            // No timer (the scheduler ran `block` at once): nothing to hold, and an already
            // disposed member is never added.
            if let timer { return timer }
            let none = Disposable()
            none.dispose()
            return none
        }
        return timer
    }

    /// Adds what `start` returns unless it has ended by then, and removes it when it calls
    /// the `ended` it was handed. `ended` holds the compound weakly, so a member that
    /// outlives the compound (a pending timer) does not keep it alive.
    @discardableResult
    private func hold(_ start: (_ ended: @escaping () -> Void) -> Disposable) -> Disposable {
        final class Held {
            var member: Disposable?
            var ended = false
        }
        let held = Held()
        let member = start { [weak self] in
            held.ended = true
            // Breaks the member → callback → held → member cycle as it ends.
            if let member = held.member {
                held.member = nil
                self?.remove(member)
            }
        }
        if !held.ended {
            held.member = member
            add(member)
        }
        return member
    }
}

/// Waits for a signal's answer on the calling thread (the blocking operators).
///
/// On a thread that runs an event loop, waiting on a condition would deadlock with work
/// queued to that same loop, so the loop is run until the answer arrives instead (the
/// threading contract). Elsewhere it waits on a condition from CSystemShims.
final class BlockingWait: @unchecked Sendable {
    /// Guards `finished`.
    let condition = ConditionLock()
    var finished = false
    /// The loop being run by the waiting thread, woken when the answer comes from elsewhere.
    var runningLoop: EventLoop?

    func finish() {
        condition.lock()
        finished = true
        let loop = runningLoop
        condition.signal()
        condition.unlock()
        loop?.wakeUp()
    }

    var isFinished: Bool {
        condition.lock()
        defer { condition.unlock() }
        return finished
    }

    /// Blocks until `finish()` or until `timeout` seconds pass; true when finished.
    func wait(timeout: Double = .infinity) -> Bool {
        // Already answered (a synchronous source): touch no loop, so a blocking operator
        // called from inside a loop callback on a synchronous signal is safe.
        if isFinished { return true }
        if let loop = EventLoop.runnableCurrentThreadLoop {
            condition.lock()
            runningLoop = loop
            condition.unlock()
            return loop.run(until: { self.isFinished }, timeout: timeout)
        }
        // Any other thread — or a loop thread inside one of its own callbacks, where the loop
        // cannot be run again: wait on the condition. (Blocking inside a loop callback on
        // work that needs that same loop cannot finish; the docs say so.)
        condition.lock()
        defer { condition.unlock() }
        if timeout.isInfinite {
            while !finished { condition.wait() }
            return true
        }
        let deadline = SchedulerTime.monotonicNow.advanced(by: timeout)
        while !finished {
            let now = SchedulerTime.monotonicNow
            if now >= deadline { return false }
            _ = condition.wait(nanoseconds: deadline.nanoseconds - now.nanoseconds)
        }
        return true
    }
}

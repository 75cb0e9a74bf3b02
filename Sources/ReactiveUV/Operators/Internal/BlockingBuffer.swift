/// A FIFO that blocks its reader until a value or the end arrives.
final class BlockingBuffer<Value>: @unchecked Sendable {
    /// Guards `values`, `head` and `ended`.
    let condition = ConditionLock()
    var values: [Value] = []
    var head = 0
    var ended = false
    /// The error that ended the signal, if it failed.
    var failure: (any Error)?

    /// The loop the reader is running while it waits, woken on each push.
    var runningLoop: EventLoop?

    func push(_ value: Value) {
        condition.lock()
        values.append(value)
        let loop = runningLoop
        condition.signal()
        condition.unlock()
        loop?.wakeUp()
    }

    func finish(error: (any Error)? = nil) {
        condition.lock()
        ended = true
        failure = error
        let loop = runningLoop
        condition.signal()
        condition.unlock()
        loop?.wakeUp()
    }

    func pop() -> Value? {
        let ready: () -> Bool = { [self] in
            condition.lock()
            defer { condition.unlock() }
            return head < values.count || ended
        }
        if !ready(), let loop = EventLoop.runnableCurrentThreadLoop {
            condition.lock()
            runningLoop = loop
            condition.unlock()
            _ = loop.run(until: ready, timeout: Double.infinity)
        }
        condition.lock()
        defer { condition.unlock() }
        while head >= values.count && !ended { condition.wait() }
        if head < values.count {
            let v = values[head]
            head += 1
            return v
        }
        return nil
    }
}

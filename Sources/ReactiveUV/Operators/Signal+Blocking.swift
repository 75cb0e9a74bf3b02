// Blocking operators (RACSignal+Operations' first, firstOrDefault, waitUntilCompleted,
// toArray, sequence) and the asynchronous waits that spin the main loop. Called on a loop's
// own thread they run that loop until the answer arrives, so they cannot deadlock on work
// queued to it; elsewhere they wait on a condition.

extension Signal {
    /// Blocks until the first value or a terminal event: RAC's
    /// `-firstOrDefault:success:error:`. The source is disposed after the first value.
    ///
    /// - Parameters:
    ///   - defaultValue: returned when no value arrives.
    ///   - success: set to `true` when a value arrived or the signal completed, `false` on error.
    ///   - error: set to the error, if the signal failed.
    /// - Returns: the first value, or `defaultValue`.
    public func firstOrDefault(_ defaultValue: Value, success: inout Bool, error: inout (any Error)?) -> Value {
        let wait = BlockingWait()
        var result: Value?
        var failure: (any Error)?
        let d = take(1).subscribe(
            next: { result = $0 },
            error: { e in
                failure = e
                wait.finish()
            },
            completed: { wait.finish() })
        _ = wait.wait()
        d.dispose()
        wait.condition.lock()
        defer { wait.condition.unlock() }
        success = failure == nil
        error = failure
        return result ?? defaultValue
    }

    /// Blocks until the first value; `defaultValue` when the signal ends without one:
    /// RAC's `-firstOrDefault:`.
    public func firstOrDefault(_ defaultValue: Value) -> Value {
        var success = false
        var error: (any Error)?
        return firstOrDefault(defaultValue, success: &success, error: &error)
    }

    /// Blocks until the first value; `nil` when the signal ends without one: RAC's `-first`.
    public func first() -> Value? {
        map { Optional($0) }.firstOrDefault(nil)
    }

    /// Blocks until the signal terminates, ignoring values: RAC's `-waitUntilCompleted:`.
    ///
    /// - Parameter error: set to the error when the signal failed.
    /// - Returns: `true` when it completed, `false` when it failed.
    public func waitUntilCompleted(error: inout (any Error)?) -> Bool {
        var success = false
        ignoreValues().map { _ in () }.firstOrDefault((), success: &success, error: &error)
        return success
    }

    /// Blocks until the signal terminates; throws its error.
    public func waitUntilCompleted() throws {
        var error: (any Error)?
        if !waitUntilCompleted(error: &error), let error { throw error }
    }

    /// Blocks until completion and returns every value; throws the error if the signal
    /// fails, even after values (RAC returned nil): RAC's `-toArray`.
    public func toArray() throws -> [Value] {
        var success = false
        var error: (any Error)?
        let values = collect().firstOrDefault([], success: &success, error: &error)
        if let error { throw error }
        return values
    }

    /// Waits for the signal to complete while running the main loop, up to `timeout`
    /// seconds: RAC's `-asynchronouslyWaitUntilCompleted:timeout:`. Call it on the main thread.
    ///
    /// - Throws: the signal's error, or ``SignalError/timedOut``.
    public func asynchronouslyWaitUntilCompleted(timeout: Double = 10) throws {
        _ = try asynchronousFirstOrDefault(nil as Value?, ignoringValues: true, timeout: timeout)
    }

    /// Waits for the first value while running the main loop, up to `timeout` seconds:
    /// RAC's `-asynchronousFirstOrDefault:success:error:timeout:`. Call it on the main thread.
    ///
    /// - Returns: the first value, or `defaultValue` when the signal completes without one.
    /// - Throws: the signal's error, or ``SignalError/timedOut``.
    public func asynchronousFirstOrDefault(_ defaultValue: Value, timeout: Double = 10) throws -> Value {
        try asynchronousFirstOrDefault(defaultValue as Value?, ignoringValues: false, timeout: timeout) ?? defaultValue
    }

    func asynchronousFirstOrDefault(_ defaultValue: Value?, ignoringValues: Bool, timeout: Double) throws -> Value? {
        let wait = BlockingWait()
        wait.runningLoop = EventLoop.main
        var result: Value?
        var failure: (any Error)?
        let source = ignoringValues ? ignoreValues() : take(1)
        let d = source.subscribe(
            next: { result = $0 },
            error: { e in
                failure = e
                wait.finish()
            },
            completed: { wait.finish() })
        let finished = EventLoop.main.run(until: { wait.isFinished }, timeout: timeout)
        d.dispose()
        if !finished { throw SignalError.timedOut }
        if let failure { throw failure }
        return result ?? defaultValue
    }

    /// The signal as a lazy Swift `Sequence`: RAC's `sequence`. Iterating subscribes; asking
    /// for an element not yet sent blocks; the sequence ends at completion or error.
    public var blockingSequence: BlockingSequence<Value> { BlockingSequence(signal: self) }
}

/// A signal read as a blocking `Sequence` (see ``Signal/blockingSequence``).
public struct BlockingSequence<Value>: Sequence {
    let signal: Signal<Value>

    /// Subscribes and returns an iterator over the values.
    public func makeIterator() -> Iterator { Iterator(signal: signal) }

    /// Blocks for each next value; disposes the subscription when it is deallocated.
    public final class Iterator: IteratorProtocol {
        let buffer = BlockingBuffer<Value>()
        var subscription: Disposable?

        init(signal: Signal<Value>) {
            let buffer = self.buffer
            subscription = signal.subscribe(
                next: { buffer.push($0) }, error: { _ in buffer.finish() }, completed: { buffer.finish() })
        }

        deinit { subscription?.dispose() }

        /// The next value, blocking until it is sent; `nil` after the signal ended.
        public func next() -> Value? { buffer.pop() }
    }
}

/// A FIFO that blocks its reader until a value or the end arrives.
final class BlockingBuffer<Value>: @unchecked Sendable {
    /// Guards `values`, `head` and `ended`.
    let condition = ConditionLock()
    var values: [Value] = []
    var head = 0
    var ended = false

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

    func finish() {
        condition.lock()
        ended = true
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

import CSystemShims

// Blocking operators (RACSignal+Operations' first, firstOrDefault, waitUntilCompleted,
// toArray, sequence) and the asynchronous waits that spin the main loop. Called on a loop's
// own thread they run that loop until the answer arrives, so they cannot deadlock on work
// queued to it; elsewhere they wait on a condition.

extension Signal {
    /// Blocks until the first value or a terminal event: RAC's
    /// `-firstOrDefault:success:error:`. The source is disposed after the first value.
    ///
    /// **Error:** returns `defaultValue`, sets `success` to `false` and `error` to the
    /// signal's error (the throwing forms are ``first()-7053l`` and ``firstOrDefault(_:)-6a1a7``).
    /// Subscribes on the calling thread; on a loop's own thread it runs that loop until the
    /// answer arrives, elsewhere it waits on a condition (see the threading article).
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

    /// Blocks until the first value; `defaultValue` when the signal completes without one:
    /// RAC's `-firstOrDefault:`.
    ///
    /// **Error:** thrown (RAC returned the default and dropped the error; the
    /// ``firstOrDefault(_:success:error:)`` form still does that, reporting it by reference).
    ///
    /// - Parameter defaultValue: returned when the signal completes without a value.
    /// - Returns: the first value, or `defaultValue`.
    /// - Throws: the signal's error.
    public func firstOrDefault(_ defaultValue: Value) throws -> Value {
        var success = false
        var error: (any Error)?
        let value = firstOrDefault(defaultValue, success: &success, error: &error)
        if let error { throw error }
        return value
    }

    /// Blocks until the first value; `nil` when the signal completes without one: RAC's
    /// `-first`. The source is disposed after the first value.
    ///
    /// **Error:** thrown, so a failure cannot pass for "no value":
    ///
    /// ```swift
    /// do { let connection = try TCP.listen(host: "127.0.0.1", port: 80).first() }
    /// catch UVError.permissionDenied { ... }
    /// ```
    ///
    /// - Returns: the first value, or `nil` when the signal completed without one.
    /// - Throws: the signal's error.
    @discardableResult
    public func first() throws -> Value? {
        try map { Optional($0) }.firstOrDefault(nil)
    }

    /// Blocks until the signal terminates, ignoring values: RAC's `-waitUntilCompleted:`.
    ///
    /// **Error:** returns `false` and sets `error` (the throwing form is
    /// ``waitUntilCompleted()-2gv39``).
    ///
    /// - Parameter error: set to the error when the signal failed.
    /// - Returns: `true` when it completed, `false` when it failed.
    public func waitUntilCompleted(error: inout (any Error)?) -> Bool {
        var success = false
        ignoreValues().map { _ in () }.firstOrDefault((), success: &success, error: &error)
        return success
    }

    /// Blocks until the signal terminates, ignoring values (RAC's `-waitUntilCompleted:`).
    ///
    /// **Error:** thrown.
    ///
    /// - Throws: the signal's error.
    public func waitUntilCompleted() throws {
        var error: (any Error)?
        if !waitUntilCompleted(error: &error), let error { throw error }
    }

    /// Blocks until completion and returns every value: RAC's `-toArray`.
    ///
    /// **Error:** thrown, even after values (RAC returned `nil`); the values sent before it
    /// are lost (use ``materialize()`` to keep them).
    ///
    /// - Returns: every value, in order.
    /// - Throws: the signal's error.
    public func toArray() throws -> [Value] {
        var success = false
        var error: (any Error)?
        let values = collect().firstOrDefault([], success: &success, error: &error)
        if let error { throw error }
        return values
    }

    /// Waits for the signal to terminate while running the main loop, up to `timeout`
    /// seconds: RAC's `-asynchronouslyWaitUntilCompleted:timeout:`. Call it on the main
    /// thread (from another thread it throws ``SignalError/invalidScheduler(_:)``).
    ///
    /// As in RAC, the answer comes back through ``Scheduler/main``: the main loop always
    /// runs before this returns, so a block scheduled on the main scheduler before the call
    /// has run by then, even when the signal had already terminated.
    ///
    /// **Error:** thrown, as is ``SignalError/timedOut`` when time runs out (the
    /// subscription is disposed then).
    ///
    /// - Parameter timeout: the longest wait, in seconds.
    /// - Throws: the signal's error, or ``SignalError/timedOut``.
    public func asynchronouslyWaitUntilCompleted(timeout: Double = 10) throws {
        _ = try asynchronousFirstOrDefault(nil as Value?, ignoringValues: true, timeout: timeout)
    }

    /// RAC's `-asynchronouslyWaitUntilCompleted:error:` (``asynchronouslyWaitUntilCompleted(timeout:)``
    /// without `throws`).
    ///
    /// **Error:** returns `false` and sets `error` (a time-out is ``SignalError/timedOut``).
    ///
    /// - Parameters:
    ///   - timeout: the longest wait, in seconds.
    ///   - error: set to the error when the signal failed or timed out.
    /// - Returns: `true` when the signal completed in time.
    public func asynchronouslyWaitUntilCompleted(timeout: Double = 10, error: inout (any Error)?) -> Bool {
        do {
            try asynchronouslyWaitUntilCompleted(timeout: timeout)
            return true
        } catch let e {
            error = e
            return false
        }
    }

    /// Waits for the first value while running the main loop, up to `timeout` seconds:
    /// RAC's `-asynchronousFirstOrDefault:success:error:timeout:`. Call it on the main thread
    /// (from another thread it throws ``SignalError/invalidScheduler(_:)``).
    ///
    /// As in RAC, the answer comes back through ``Scheduler/main``: the main loop always
    /// runs before this returns, so a block scheduled on the main scheduler before the call
    /// has run by then, even when the signal had already answered.
    ///
    /// **Error:** thrown, as is ``SignalError/timedOut`` when time runs out (the
    /// subscription is disposed then).
    ///
    /// - Parameters:
    ///   - defaultValue: returned when the signal completes without a value.
    ///   - timeout: the longest wait, in seconds.
    /// - Returns: the first value, or `defaultValue` when the signal completes without one.
    /// - Throws: the signal's error, or ``SignalError/timedOut``.
    public func asynchronousFirstOrDefault(_ defaultValue: Value, timeout: Double = 10) throws -> Value {
        try asynchronousFirstOrDefault(defaultValue as Value?, ignoringValues: false, timeout: timeout) ?? defaultValue
    }

    /// RAC's `-asynchronousFirstOrDefault:success:error:timeout:` with its by-reference
    /// results (``asynchronousFirstOrDefault(_:timeout:)`` without `throws`).
    ///
    /// **Error:** returns `defaultValue`, sets `success` to `false` and `error` to the error
    /// (a time-out is ``SignalError/timedOut``).
    ///
    /// - Parameters:
    ///   - defaultValue: returned when no value arrives.
    ///   - success: set to `false` on error or time-out, else `true`.
    ///   - error: set to the error, if any.
    ///   - timeout: the longest wait, in seconds.
    /// - Returns: the first value, or `defaultValue`.
    public func asynchronousFirstOrDefault(
        _ defaultValue: Value, success: inout Bool, error: inout (any Error)?, timeout: Double = 10
    ) -> Value {
        do {
            let value = try asynchronousFirstOrDefault(defaultValue, timeout: timeout)
            success = true
            return value
        } catch let e {
            success = false
            error = e
            return defaultValue
        }
    }

    func asynchronousFirstOrDefault(_ defaultValue: Value?, ignoringValues: Bool, timeout: Double) throws -> Value? {
        guard csys_thread_is_main() else {
            throw SignalError.invalidScheduler("asynchronous waits run the main loop: call them on the main thread")
        }
        var result: Value?
        var failure: (any Error)?
        var finished = false
        let source = ignoringValues ? ignoreValues() : take(1)
        // RAC delivers the answer with `deliverOn:mainThreadScheduler`, which always
        // enqueues: the loop runs at least once, and work queued on main before the call
        // (first in, first out) runs before the answer is seen.
        let d = source.deliverOn(Scheduler.main).subscribe(
            next: { result = $0 },
            error: { e in
                failure = e
                finished = true
            },
            completed: { finished = true })
        let answered = EventLoop.main.run(until: { finished }, timeout: timeout)
        d.dispose()
        if !answered { throw SignalError.timedOut }
        if let failure { throw failure }
        return result ?? defaultValue
    }

    /// The signal as a lazy Swift `Sequence`: RAC's `sequence`. Iterating subscribes; asking
    /// for an element not yet sent blocks; the sequence ends at completion or error.
    ///
    /// **Error:** ends the sequence (a `Sequence` cannot throw); the iterator's
    /// ``BlockingSequence/Iterator/error`` holds it afterwards. ``Signal/values`` is the
    /// throwing (asynchronous) form.
    ///
    /// **RAC:** `-sequence`. **Thread:** values are handed from the source's thread to the
    /// iterating thread, which blocks. **Disposal:** the subscription is disposed when the
    /// iterator is deallocated. **Terminates:** the sequence ends at completion or error.
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
                next: { buffer.push($0) }, error: { buffer.finish(error: $0) }, completed: { buffer.finish() })
        }

        /// The signal's error, once ``next()`` has returned `nil` because the signal failed;
        /// `nil` while values remain or after completion.
        public var error: (any Error)? {
            buffer.condition.lock()
            defer { buffer.condition.unlock() }
            return buffer.head >= buffer.values.count ? buffer.failure : nil
        }

        deinit { subscription?.dispose() }

        /// The next value, blocking until it is sent; `nil` after the signal ended.
        public func next() -> Value? { buffer.pop() }
    }
}

// Time operators (RACSignal+Operations' interval, delay, throttle, timeout, bufferWithTime;
// debounce beyond RAC). `timer` is in Signal+Timer.swift.
// All of them run on a scheduler's timers, never a sleeping thread; given the immediate
// scheduler (which cannot keep time) they fail with `SignalError.invalidScheduler`.

extension Signal where Value == SchedulerTime {
    /// Sends the scheduler's current time every `interval` seconds, starting one interval
    /// after subscription; never completes; disposal cancels the timer: RAC's
    /// `+interval:onScheduler:withLeeway:`.
    ///
    /// **RAC:** `+interval:onScheduler:withLeeway:`. **Thread:** the scheduler's.
    /// **Disposal:** cancels the timer. **Terminates:** never (an immediate scheduler fails
    /// it at once with `SignalError.invalidScheduler`).
    ///
    /// - Parameters:
    ///   - interval: seconds between ticks; must be positive.
    ///   - scheduler: where the ticks are sent; not the immediate scheduler.
    ///   - leeway: how late a tick may be (a hint).
    public static func interval(_ interval: Double, on scheduler: Scheduler, leeway: Double = 0) -> Signal<SchedulerTime> {
        if scheduler.isImmediate {
            return .error(SignalError.invalidScheduler("interval needs a scheduler that keeps time, not the immediate one"))
        }
        if !(interval > 0) {
            return .error(SignalError.invalidArgument("interval(\(interval)): the interval must be positive"))
        }
        return AnonymousSignal { observer, lifetime in
            let start = scheduler.now.advanced(by: interval)
            lifetime.add(scheduler.after(start, repeatingEvery: interval, withLeeway: leeway) {
                if !lifetime.isDisposed { observer(.next(scheduler.now)) }
            })
        }
    }
}

extension Signal {
    /// Re-sends values and completion `interval` seconds later; an error is forwarded at
    /// once and drops what was pending: RAC's `-delay:`.
    ///
    /// **RAC:** `-delay:`. **Thread:** the scheduler's (the current one, or a background
    /// one). **Disposal:** disposes the source and cancels the pending deliveries.
    /// **Terminates:** completion is delayed like the values; an error passes at once.
    ///
    /// - Parameters:
    ///   - interval: the delay in seconds.
    ///   - scheduler: where delayed events are sent; by default the current scheduler at
    ///     subscription, or a background one.
    @inlinable
    public func delay(_ interval: Double, on scheduler: Scheduler? = nil) -> Signal<Value> {
        if let scheduler, scheduler.isImmediate {
            return .error(SignalError.invalidScheduler("delay needs a scheduler that keeps time"))
        }
        let source = self
        return AnonymousSignal { observer, lifetime in
            let scheduler = scheduler ?? Scheduler.currentOrBackground()
            let state = TimeState<Value>()
            source.attach({ event in
                if case .error = event {
                    state.lock.lock()
                    if !state.done {
                        state.done = true
                        observer(event)
                    }
                    state.lock.unlock()
                    lifetime.dispose()
                    return
                }
                let slot = SerialDisposable()
                lifetime.add(slot)
                slot.inner = scheduler.afterDelay(interval) {
                    lifetime.remove(slot)
                    state.lock.lock()
                    if !state.done && !lifetime.isDisposed {
                        if event.isTerminating { state.done = true }
                        observer(event)
                    }
                    state.lock.unlock()
                }
            }, lifetime.child())
        }
    }

    /// RAC's `-throttle:`, which is a **debounce**: a value is held, a newer one replaces it
    /// and restarts the wait, and the held value is sent once `interval` seconds pass with
    /// no newer value. Completion sends a held value first; an error drops it.
    ///
    /// `-a-b-----c--|` → `throttle(2 ticks)` → `-----b-----c|`
    ///
    /// **RAC:** `-throttle:`. **Thread:** the scheduler's for held values; the source's for
    /// terminal events. **Disposal:** disposes the source and cancels the timer.
    /// **Terminates:** when the source terminates (a held value is sent first on
    /// completion, dropped on error).
    @inlinable
    public func throttle(_ interval: Double, on scheduler: Scheduler? = nil) -> Signal<Value> {
        throttle(interval, valuesPassingTest: { _ in true }, on: scheduler)
    }

    /// ``throttle(_:on:)`` for the values passing `predicate` only; a value failing it is
    /// sent at once and drops any held value: RAC's `-throttle:valuesPassingTest:`.
    ///
    /// **RAC:** `-throttle:valuesPassingTest:`. **Thread:** the scheduler's for held
    /// values; the source's for the others and for terminal events. **Disposal:** disposes
    /// the source and cancels the timer. **Terminates:** when the source terminates (a held
    /// value is sent first on completion, dropped on error).
    @inlinable
    public func throttle(
        _ interval: Double, valuesPassingTest predicate: @escaping (Value) -> Bool, on scheduler: Scheduler? = nil
    ) -> Signal<Value> {
        debounceCore(interval, valuesPassingTest: predicate, on: scheduler, flushOnCompletion: true)
    }

    /// The debounce behind `throttle` and `debounce`. Inlinable, so a value's way through
    /// it (lock, predicate, deadline update) is specialized in the caller's module.
    @inlinable
    func debounceCore(
        _ interval: Double, valuesPassingTest predicate: @escaping (Value) -> Bool, on scheduler: Scheduler?,
        flushOnCompletion: Bool
    ) -> Signal<Value> {
        if let scheduler, scheduler.isImmediate {
            return .error(SignalError.invalidScheduler("throttle needs a scheduler that keeps time"))
        }
        let source = self
        return AnonymousSignal { observer, lifetime in
            let scheduler = scheduler ?? Scheduler.currentOrBackground()
            let state = TimeState<Value>()
            lifetime.add(state.timer)
            // One timer per quiet period, not one per value: a newer value only moves the
            // deadline, and a timer that fires early re-arms for what is left. A burst of a
            // million values costs a million deadline updates, not a million timers.
            func arm(at deadline: SchedulerTime) {
                state.timerArmed = true
                state.timer.replace(scheduler.after(deadline) {
                    state.lock.lock()
                    defer { state.lock.unlock() }
                    state.timerArmed = false
                    guard !state.done, state.held != nil else { return }
                    if scheduler.now < state.deadline {
                        arm(at: state.deadline)
                        return
                    }
                    let held = state.held!
                    state.held = nil
                    observer(.next(held))
                })
            }
            source.attach({ event in
                state.lock.lock()
                defer { state.lock.unlock() }
                if state.done { return }
                switch event {
                case .next(let v):
                    if !predicate(v) {
                        state.held = nil
                        observer(.next(v))
                        return
                    }
                    state.held = v
                    state.deadline = scheduler.now.advanced(by: interval)
                    if !state.timerArmed { arm(at: state.deadline) }
                case .error:
                    state.done = true
                    state.held = nil
                    state.timer.replace(nil)
                    observer(event)
                case .completed:
                    state.done = true
                    state.timer.replace(nil)
                    if flushOnCompletion, let held = state.held {
                        state.held = nil
                        observer(.next(held))
                    }
                    observer(.completed)
                }
            }, lifetime)
        }
    }

    /// Fails with ``SignalError/timedOut`` if the receiver has not **terminated** within
    /// `interval` seconds, disposing it; values do not restart the timer (a total-duration
    /// limit): RAC's `-timeout:onScheduler:`.
    ///
    /// **RAC:** `-timeout:onScheduler:`. **Thread:** the source's; the time-out error on
    /// the scheduler's. **Disposal:** disposes the source and cancels the timer.
    /// **Terminates:** with the source, or with `SignalError.timedOut` when the interval
    /// passes first.
    @inlinable
    public func timeout(_ interval: Double, on scheduler: Scheduler) -> Signal<Value> {
        if scheduler.isImmediate {
            return .error(SignalError.invalidScheduler("timeout needs a scheduler that keeps time"))
        }
        let source = self
        return AnonymousSignal { observer, lifetime in
            let state = TimeState<Value>()
            let part = lifetime.child()
            lifetime.add(state.timer)
            state.timer.inner = scheduler.afterDelay(interval) {
                state.lock.lock()
                if state.done {
                    state.lock.unlock()
                    return
                }
                state.done = true
                state.lock.unlock()
                lifetime.end(part)
                state.lock.lock()
                observer(.error(SignalError.timedOut))
                state.lock.unlock()
                lifetime.dispose()
            }
            source.attach({ event in
                state.lock.lock()
                if state.done {
                    state.lock.unlock()
                    return
                }
                if event.isTerminating { state.done = true }
                observer(event)
                state.lock.unlock()
                if event.isTerminating { state.timer.dispose() }
            }, part)
        }
    }

    /// Collects values into arrays: the first value into an empty buffer starts an
    /// `interval` timer, and when it fires the buffer is sent (nothing for an empty buffer).
    /// Completion flushes the buffer, then completes; an error drops it: RAC's
    /// `-bufferWithTime:onScheduler:`.
    ///
    /// **RAC:** `-bufferWithTime:onScheduler:`. **Thread:** the scheduler's for the arrays;
    /// the source's for terminal events. **Disposal:** disposes the source and cancels the
    /// timer. **Terminates:** when the source terminates (the current array is sent first
    /// on completion).
    @inlinable
    public func bufferWithTime(_ interval: Double, on scheduler: Scheduler) -> Signal<[Value]> {
        if scheduler.isImmediate {
            return .error(SignalError.invalidScheduler("bufferWithTime needs a scheduler that keeps time"))
        }
        let source = self
        return AnonymousSignal { observer, lifetime in
            let state = TimeState<Value>()
            lifetime.add(state.timer)
            let flush = {
                if !state.buffer.isEmpty {
                    let values = state.buffer
                    state.buffer = []
                    observer(.next(values))
                }
            }
            source.attach({ event in
                state.lock.lock()
                defer { state.lock.unlock() }
                if state.done { return }
                switch event {
                case .next(let v):
                    state.buffer.append(v)
                    if state.buffer.count == 1 {
                        state.timer.replace(scheduler.afterDelay(interval) {
                            state.lock.lock()
                            defer { state.lock.unlock() }
                            if !state.done { flush() }
                        })
                    }
                case .error(let e):
                    state.done = true
                    state.buffer = []
                    observer(.error(e))
                case .completed:
                    state.done = true
                    flush()
                    observer(.completed)
                }
            }, lifetime)
        }
    }
}

extension Signal {
    /// Sends a value only after `interval` seconds pass without a newer one (Rx's
    /// `debounce`). RAC's ``throttle(_:on:)`` is the same idea under RAC's name and always
    /// sends a held value on completion; `debounce` drops it unless `flushOnCompletion`.
    ///
    /// `-a-b-----c-|` → `debounce(2 ticks)` → `-----b-----|`
    ///
    /// **RAC:** none (Rx's `debounce`; RAC's is ``throttle(_:on:)``). **Thread:** the
    /// scheduler's for held values; the source's for terminal events. **Disposal:**
    /// disposes the source and cancels the timer. **Terminates:** when the source
    /// terminates (a held value is dropped unless `flushOnCompletion`).
    @inlinable
    public func debounce(_ interval: Double, on scheduler: Scheduler, flushOnCompletion: Bool = false) -> Signal<Value> {
        debounceCore(interval, valuesPassingTest: { _ in true }, on: scheduler, flushOnCompletion: flushOnCompletion)
    }
}

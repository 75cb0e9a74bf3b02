// Creating signals beyond `create`/`return`/`empty`/`never`/`error`/`defer`/`try` (which
// are in Core/Signal.swift): signals whose work runs once and is shared (RAC's
// +startLazilyWithScheduler:block: and +startEagerlyWithScheduler:block:), sequences sent
// one value per scheduling step (RACSequence's -signalWithScheduler:), and a resource held
// for each subscription (`using`, beyond RAC).

extension Signal {
    /// Runs `block` **once**, at the first subscription, on `scheduler`; its events go into
    /// an unlimited ``ReplaySubject`` so every subscriber gets all of them. The work is
    /// never cancelled; disposing a subscriber only detaches it: RAC's
    /// `+startLazilyWithScheduler:block:`.
    ///
    /// **RAC:** `+startLazilyWithScheduler:block:`. **Thread:** the block's events on the
    /// thread it sends from; replayed ones on `scheduler`. **Disposal:** detaches the
    /// subscriber only; the work is never cancelled. **Terminates:** when the block sends a
    /// terminal event.
    public static func startLazily(on scheduler: Scheduler, _ block: @escaping (Subscriber<Value>) -> Void) -> Signal<Value> {
        let connection = Signal.create { subscriber -> Disposable? in
            block(subscriber)
            return nil
        }.multicast(ReplaySubject())
        // As in RAC, both the subscription to the replay subject and the connection happen
        // on `scheduler`, so a subscriber added after eager work was scheduled gets its
        // events after that work has run.
        return AnonymousSignal { observer, lifetime in
            connection.subject.attach(observer, lifetime)
            connection.connect()
        }.subscribeOn(scheduler)
    }

    /// ``startLazily(on:_:)`` that schedules `block` right away: RAC's
    /// `+startEagerlyWithScheduler:block:`.
    ///
    /// **RAC:** `+startEagerlyWithScheduler:block:`. **Thread:** the block's events on the
    /// thread it sends from; replayed ones on `scheduler`. **Disposal:** detaches the
    /// subscriber only; the work is never cancelled. **Terminates:** when the block sends a
    /// terminal event.
    public static func startEagerly(on scheduler: Scheduler, _ block: @escaping (Subscriber<Value>) -> Void) -> Signal<Value> {
        let signal = startLazily(on: scheduler, block)
        signal.publish().connect()
        return signal
    }

    /// Sends the elements of `sequence`, one per scheduling step on `scheduler`, then
    /// completes: RACSequence's `-signalWithScheduler:`. Disposal stops it between elements.
    ///
    /// **RAC:** RACSequence's `-signalWithScheduler:`. **Thread:** the scheduler's.
    /// **Disposal:** stops between elements. **Terminates:** after the last element.
    public convenience init<S: Sequence>(sequence: S, on scheduler: Scheduler) where S.Element == Value {
        self.init(body: { observer, lifetime in
            var iterator = sequence.makeIterator()
            lifetime.add(scheduler.scheduleRecursive { reschedule in
                if lifetime.isDisposed { return }
                if let v = iterator.next() {
                    observer(.next(v))
                    reschedule()
                } else {
                    observer(.completed)
                }
            })
        })
    }
}

extension Signal {
    /// Creates a resource at each subscription and disposes it when the subscription ends
    /// (Rx's `using`).
    ///
    /// **RAC:** none (Rx's `using`). **Thread:** the built signal's. **Disposal:** disposes
    /// the built signal's subscription and the resource. **Terminates:** when the built
    /// signal terminates (the resource is disposed then), or at once with the error
    /// `resource` throws.
    ///
    /// - Parameters:
    ///   - resource: makes the resource.
    ///   - signal: builds the signal that uses it.
    public static func using<R: Disposable>(
        _ resource: @escaping () throws -> R, _ signal: @escaping (R) -> Signal<Value>
    ) -> Signal<Value> {
        AnonymousSignal { observer, lifetime in
            let r: R
            do { r = try resource() } catch {
                observer(.error(error))
                return
            }
            lifetime.add(r)
            signal(r).attach(observer, lifetime)
        }
    }
}

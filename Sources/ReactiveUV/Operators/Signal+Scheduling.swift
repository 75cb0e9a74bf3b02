import CSystemShims

// Moving events and subscriptions between schedulers (RACSignal+Operations' deliverOn:,
// subscribeOn:, deliverOnMainThread). Inlinable, so that the closure each event goes
// through is formed, specialized, in the caller's module rather than in the library's
// generic copy (which ran generic code, with runtime metadata lookups, per event).

extension Signal {
    /// Re-sends every event on `scheduler`, in order; the receiver's side effects stay on
    /// their own thread: RAC's `-deliverOn:`. Events still queued when the subscription is
    /// disposed are dropped.
    ///
    /// **RAC:** `-deliverOn:`. **Thread:** the scheduler's. **Disposal:** disposes the
    /// source; events still queued on the scheduler are dropped. **Terminates:** when the
    /// source's terminal event has been delivered on the scheduler.
    @inlinable
    public func deliverOn(_ scheduler: Scheduler) -> Signal<Value> {
        let source = self
        return AnonymousSignal { observer, lifetime in
            // The source gets its own part: its completion must not cancel the deliveries
            // still queued on the scheduler.
            source.attach({ event in
                scheduler.scheduleUncancellable {
                    if !lifetime.isDisposed { observer(event) }
                }
            }, lifetime.child())
        }
    }

    /// Subscribes to the receiver on `scheduler` (so its side effects run there); events are
    /// then delivered wherever the receiver sends them: RAC's `-subscribeOn:`. Disposing
    /// before the scheduled subscription runs prevents it.
    ///
    /// **RAC:** `-subscribeOn:`. **Thread:** wherever the source sends them (the
    /// subscription itself runs on `scheduler`). **Disposal:** cancels the scheduled
    /// subscription, or disposes the source. **Terminates:** when the source terminates.
    @inlinable
    public func subscribeOn(_ scheduler: Scheduler) -> Signal<Value> {
        let source = self
        return AnonymousSignal { observer, lifetime in
            lifetime.add(scheduler.schedule {
                if !lifetime.isDisposed { source.attach(observer, lifetime) }
            })
        }
    }

    /// Delivers events on the main thread: inline when already on the main thread **and**
    /// nothing of this subscription is queued there, otherwise through ``Scheduler/main``;
    /// order is preserved: RAC's `-deliverOnMainThread`.
    ///
    /// **RAC:** `-deliverOnMainThread`. **Thread:** the main thread. **Disposal:** disposes
    /// the source; events still queued are dropped. **Terminates:** when the source's
    /// terminal event has been delivered on the main thread.
    @inlinable
    public func deliverOnMainThread() -> Signal<Value> {
        let source = self
        return AnonymousSignal { observer, lifetime in
            let queued = AtomicCounter()
            source.attach({ event in
                let pending = queued.atomic.fetchAdd(1) + 1
                if pending == 1 && csys_thread_is_main() {
                    if !lifetime.isDisposed { observer(event) }
                    queued.atomic.fetchSub(1)
                    return
                }
                Scheduler.main.scheduleUncancellable {
                    if !lifetime.isDisposed { observer(event) }
                    queued.atomic.fetchSub(1)
                }
            }, lifetime.child())
        }
    }
}

extension Scheduler {
    /// The scheduler a time operator uses when none is given: the current one (RAC's
    /// `currentScheduler`), or a new background scheduler.
    @usableFromInline
    static func currentOrBackground() -> Scheduler {
        if let current = Scheduler.current, !current.isImmediate { return current }
        return Scheduler.background()
    }
}

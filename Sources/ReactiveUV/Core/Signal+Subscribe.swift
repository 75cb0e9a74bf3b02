extension Signal {
    /// Subscribes with blocks for each kind of event: RAC's `-subscribeNext:error:completed:`.
    ///
    /// - Parameters:
    ///   - next: called for each value.
    ///   - error: called once if the signal fails.
    ///   - completed: called once if the signal completes.
    /// - Returns: the subscription; dispose it to stop receiving (no callback starts after
    ///   `dispose()` returns, whatever thread calls it).
    @inlinable
    @discardableResult
    public func subscribe(
        next: ((Value) -> Void)? = nil, error: ((any Error) -> Void)? = nil, completed: (() -> Void)? = nil
    ) -> Disposable {
        let sink = BlockSubscriber<Value>(next: next, error: error, completed: completed)
        // The forwarding closure is formed here, specialized in the caller's module (see
        // `attach(subscriber:observer:)`); it captures only `sink`, so it allocates nothing.
        attach(subscriber: sink, observer: { sink.receive($0) })
        return sink
    }

    /// Subscribes to values only; errors are ignored (RAC's `-subscribeNext:`).
    @inlinable
    @discardableResult
    public func subscribeNext(_ next: @escaping (Value) -> Void) -> Disposable {
        subscribe(next: next, error: nil, completed: nil)
    }

    /// Subscribes to the error only (RAC's `-subscribeError:`).
    @inlinable
    @discardableResult
    public func subscribeError(_ error: @escaping (any Error) -> Void) -> Disposable {
        subscribe(next: nil, error: error, completed: nil)
    }

    /// Subscribes to completion only (RAC's `-subscribeCompleted:`).
    @inlinable
    @discardableResult
    public func subscribeCompleted(_ completed: @escaping () -> Void) -> Disposable {
        subscribe(next: nil, error: nil, completed: completed)
    }

    /// Subscribes with a block that receives every event.
    @inlinable
    @discardableResult
    public func subscribeEvents(_ handler: @escaping (Event<Value>) -> Void) -> Disposable {
        subscribe(next: { handler(.next($0)) }, error: { handler(.error($0)) }, completed: { handler(.completed) })
    }

    /// Subscribes any ``SubscriberProtocol`` (a subject, for instance): RAC's `-subscribe:`.
    ///
    /// The subscriber is handed the subscription's disposable first (`didSubscribe(with:)`),
    /// so its first terminal event from any source can end all of its subscriptions.
    ///
    /// A subscriber that has already terminated (a subject that sent `completed`, say)
    /// disposes that disposable at once. The signal's subscription block still runs, as in
    /// RAC (`RACPassthroughSubscriber` subscribes whatever the subscriber's state): its
    /// events are dropped and whatever it returns to be disposed is disposed as soon as it
    /// is added.
    ///
    /// - Returns: the subscription's disposable.
    @inlinable
    @discardableResult
    public func subscribe<S: SubscriberProtocol>(_ subscriber: S) -> Disposable where S.Value == Value {
        let lifetime = CompoundDisposable()
        subscriber.didSubscribe(with: lifetime)
        attach({ event in
            if lifetime.isDisposed { return }
            subscriber.send(event)
            if event.isTerminating { lifetime.dispose() }
        }, lifetime)
        return lifetime
    }
}

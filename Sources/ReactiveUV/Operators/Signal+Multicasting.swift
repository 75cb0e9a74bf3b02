// Sharing one subscription among many subscribers (RACSignal+Operations' publish,
// multicast:, replay, replayLast, replayLazily; share(replay:scope:) beyond RAC).
// All inlinable, with `MulticastConnection.connect()`: the subject's subscription to the
// source forwards every value, and formed in the library's generic copy that forwarding
// ran generic code (the subject's send included) with runtime metadata lookups per value.

extension Signal {
    /// A connection to a new plain ``Subject``; nothing is subscribed until `connect()`:
    /// RAC's `-publish`.
    ///
    /// **RAC:** `-publish`. **Thread:** the subject's subscribers get events on the
    /// source's thread. **Disposal:** disposing the connection disposes the source's one
    /// subscription. **Terminates:** when the source terminates (the subject replays its
    /// terminal event to later subscribers).
    @inlinable
    public func publish() -> MulticastConnection<Value> { multicast(Subject()) }

    /// A connection from the receiver to `subject`: RAC's `-multicast:`.
    ///
    /// **RAC:** `-multicast:`. **Thread:** the subject's subscribers get events on the
    /// source's thread. **Disposal:** disposing the connection disposes the source's one
    /// subscription. **Terminates:** when the source terminates.
    @inlinable
    public func multicast(_ subject: Subject<Value>) -> MulticastConnection<Value> {
        MulticastConnection(source: self, subject: subject)
    }

    /// Subscribes now, once, into an unlimited ``ReplaySubject``; every subscriber gets
    /// every value and the terminal event. Never disconnects: RAC's `-replay`.
    ///
    /// **RAC:** `-replay`. **Thread:** live events on the source's thread; replayed ones on
    /// the subscribing thread. **Disposal:** a subscriber's disposal detaches it only; the
    /// source stays connected. **Terminates:** when the source terminates; later
    /// subscribers get everything, then the terminal event.
    @inlinable
    public func replay() -> Signal<Value> {
        let connection = multicast(ReplaySubject())
        connection.connect()
        return connection.signal
    }

    /// ``replay()`` keeping only the latest value: RAC's `-replayLast`.
    ///
    /// **RAC:** `-replayLast`. **Thread:** live events on the source's thread; the replayed
    /// one on the subscribing thread. **Disposal:** a subscriber's disposal detaches it
    /// only; the source stays connected. **Terminates:** when the source terminates.
    @inlinable
    public func replayLast() -> Signal<Value> {
        let connection = multicast(ReplaySubject(capacity: 1))
        connection.connect()
        return connection.signal
    }

    /// ``replay()`` that subscribes at the **first subscription** rather than now; it never
    /// disconnects, even when every subscriber has gone: RAC's `-replayLazily`.
    ///
    /// **RAC:** `-replayLazily`. **Thread:** live events on the source's thread; replayed
    /// ones on the subscribing thread. **Disposal:** a subscriber's disposal detaches it
    /// only; the source, connected at the first subscription, stays connected.
    /// **Terminates:** when the source terminates.
    @inlinable
    public func replayLazily() -> Signal<Value> {
        let connection = multicast(ReplaySubject())
        return Signal.defer {
            connection.connect()
            return connection.signal
        }
    }
}

extension Signal {
    /// Shares one subscription to the receiver among subscribers, replaying the last
    /// `replay` values to late ones (Rx's `share(replay:scope:)`).
    ///
    /// With `.whileConnected` the source is disposed when the last subscriber leaves and a
    /// later subscriber starts it again (with a fresh buffer); with `.forever` it connects at
    /// the first subscriber and stays connected (like ``replayLazily()`` with a bound).
    ///
    /// **RAC:** none (Rx's `share(replay:scope:)`). **Thread:** live events on the source's
    /// thread; replayed ones on the subscribing thread. **Disposal:** detaches the
    /// subscriber; with `.whileConnected` the last one leaving disposes the source.
    /// **Terminates:** when the source terminates.
    @inlinable
    public func share(replay: Int = 0, scope: ShareScope = .whileConnected) -> Signal<Value> {
        let source = self
        let state = ShareState<Value>()
        return AnonymousSignal { observer, lifetime in
            state.lock.lock()
            if state.subject == nil || (scope == .whileConnected && state.subject!.hasTerminated) {
                state.subject = ReplaySubject(capacity: replay)
                state.connection = nil
            }
            let subject = state.subject!
            state.subscribers += 1
            let connect = state.connection == nil
            if connect { state.connection = SerialDisposable() }
            let connection = state.connection!
            state.lock.unlock()
            subject.attach(observer, lifetime)
            if connect { connection.inner = source.subscribe(subject) }
            lifetime.add(Disposable {
                state.lock.lock()
                state.subscribers -= 1
                let last = state.subscribers == 0 && scope == .whileConnected
                if last {
                    state.subject = nil
                    state.connection = nil
                }
                state.lock.unlock()
                if last { connection.dispose() }
            })
        }
    }
}

/// How long ``Signal/share(replay:scope:)`` keeps its source connected.
public enum ShareScope: Sendable {
    /// Until the last subscriber leaves; a later subscriber reconnects.
    case whileConnected
    /// From the first subscriber on, for good.
    case forever
}

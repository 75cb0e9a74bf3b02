// Sharing one subscription among many subscribers (RACSignal+Operations' publish,
// multicast:, replay, replayLast, replayLazily).

extension Signal {
    /// A connection to a new plain ``Subject``; nothing is subscribed until `connect()`:
    /// RAC's `-publish`.
    public func publish() -> MulticastConnection<Value> { multicast(Subject()) }

    /// A connection from the receiver to `subject`: RAC's `-multicast:`.
    public func multicast(_ subject: Subject<Value>) -> MulticastConnection<Value> {
        MulticastConnection(source: self, subject: subject)
    }

    /// Subscribes now, once, into an unlimited ``ReplaySubject``; every subscriber gets
    /// every value and the terminal event. Never disconnects: RAC's `-replay`.
    public func replay() -> Signal<Value> {
        let connection = multicast(ReplaySubject())
        connection.connect()
        return connection.signal
    }

    /// ``replay()`` keeping only the latest value: RAC's `-replayLast`.
    public func replayLast() -> Signal<Value> {
        let connection = multicast(ReplaySubject(capacity: 1))
        connection.connect()
        return connection.signal
    }

    /// ``replay()`` that subscribes at the **first subscription** rather than now; it never
    /// disconnects, even when every subscriber has gone: RAC's `-replayLazily`.
    public func replayLazily() -> Signal<Value> {
        let connection = multicast(ReplaySubject())
        return Signal.defer {
            connection.connect()
            return connection.signal
        }
    }
}

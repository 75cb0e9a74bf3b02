/// Shares one subscription to a source among many subscribers: RAC's `RACMulticastConnection`.
///
/// Nothing flows until ``connect()``, which subscribes the subject to the source **once**,
/// however often and from however many threads it is called, and always returns the same
/// disposable. Disposing that disposable disconnects for good: later `connect()` calls do
/// not reconnect.
public final class MulticastConnection<Value>: @unchecked Sendable {
    /// The hot signal subscribers attach to (the subject).
    public let signal: Signal<Value>
    @usableFromInline let subject: Subject<Value>
    @usableFromInline let source: Signal<Value>
    @usableFromInline let serial = SerialDisposable()
    @usableFromInline let connected = UnsafeAtomicFlag()

    /// Creates a connection from `source` to `subject` (see ``Signal/multicast(_:)``).
    @inlinable
    public init(source: Signal<Value>, subject: Subject<Value>) {
        self.source = source
        self.subject = subject
        self.signal = subject
    }

    deinit { connected.destroy() }

    /// Subscribes the subject to the source, once.
    ///
    /// - Returns: the connection's disposable (the same on every call).
    @discardableResult
    @inlinable
    public func connect() -> Disposable {
        if connected.set() {
            serial.inner = source.subscribe(subject)
        }
        return serial
    }

    /// A signal that connects at its first subscriber and disconnects when the number of
    /// subscribers drops to zero; it **never reconnects** (later subscribers just subscribe
    /// to the subject, so a replay subject still replays): RAC's `-autoconnect`.
    @inlinable
    public func autoconnect() -> Signal<Value> {
        let count = AtomicCounter()
        return AnonymousSignal { [self] observer, lifetime in
            count.atomic.fetchAdd(1)
            subject.attach(observer, lifetime)
            let d = connect()
            lifetime.add(Disposable {
                if count.atomic.fetchSub(1) == 1 { d.dispose() }
            })
        }
    }
}

/// A stream of events: RAC 2's `RACSignal`.
///
/// A signal is *cold* unless it is a subject: each subscription runs its side effects again
/// (RAC's rule C3). Subscription is synchronous on the caller's thread (ReactiveUV parts from
/// RAC 2 here on purpose: RAC hopped to a background scheduler when the caller had no current
/// scheduler, which made ordering depend on the caller's thread). Events reach a subscriber
/// on whichever thread sends them unless ``deliverOn(_:)`` moves them; they never overlap,
/// and nothing follows a terminal event or disposal. See the contracts article in the docs.
///
/// ```swift
/// let s = Signal<Int>.create { subscriber in
///     subscriber.sendNext(1); subscriber.sendCompleted()
///     return nil
/// }
/// let d = s.map { $0 * 2 }.subscribeNext { print($0) }
/// ```
public class Signal<Value>: @unchecked Sendable {
    /// A debug name (RAC's `name`), set with ``named(_:)``.
    public var name: String = ""

    /// The subscription closure of signals built from one (operators, `create`); `nil` for
    /// subjects, which override ``attach(_:_:)``.
    @usableFromInline let body: ((@escaping Sink<Value>, CompoundDisposable) -> Void)?

    @usableFromInline
    init() { body = nil }

    @usableFromInline
    init(body: @escaping (@escaping Sink<Value>, CompoundDisposable) -> Void) { self.body = body }

    /// Connects `observer` to this signal for one subscription.
    ///
    /// The subscription's resources go into `lifetime`, which the caller (the downstream)
    /// created before calling, so a source that sends synchronously forever can see the
    /// subscription end (`lifetime.isDisposed`). Overridden by every kind of signal; the
    /// per-event path is the `observer` closure alone, with no lock between operators.
    @usableFromInline
    func attach(_ observer: @escaping Sink<Value>, _ lifetime: CompoundDisposable) {
        body?(observer, lifetime)
    }

    /// Connects the block subscriber of `subscribe(next:error:completed:)`, with
    /// `observer` the closure that forwards to it: the same as ``attach(_:_:)``, except for
    /// subjects, which keep the subscriber itself and call it without the forwarding closure
    /// (one call less per delivery of a fan-out).
    ///
    /// The forwarding closure is formed by the caller (`subscribe`, inlinable), not here:
    /// this method is reached through the vtable whenever the signal's class is not known
    /// where it is subscribed (a signal returned by `merge`, kept in a property…), and a
    /// closure formed in this generic copy would call the generic `receive`, which looks
    /// `Event<Value>` up in the runtime's metadata cache on **every value** (a third of a
    /// merge's time). Inlinable so that, devirtualized for a signal the optimizer can see
    /// (`return` and the stages of ``StageSignal``), it starts the fused path of ``attach(sink:closing:_:)``
    /// with the subscriber as the last sink, and the signal still stays off the heap;
    /// otherwise `closing` hands back `observer` and it is the plain `attach`.
    @inlinable
    func attach(subscriber: BlockSubscriber<Value>, observer: @escaping Sink<Value>) {
        attach(sink: subscriber, closing: { _ in observer }, subscriber)
    }

    /// Connects a typed sink for one subscription: the fused path of a cold chain of
    /// stages (`return`, then ``StageSignal``'s: `map`, `filter`, `scan`), where each stage wraps the sink below
    /// it in a struct instead of forming a closure, so a subscription the optimizer sees
    /// whole (`Signal.return(i).map { … }.filter { … }.subscribeNext { … }`) makes no
    /// closure context per stage. `closing` turns the sink into the closure of
    /// ``attach(_:_:)``; it is formed where the sink's type is known, so the closure it
    /// makes runs specialized code.
    ///
    /// Signals without a fused path (this default) take the closure. So does a fused stage
    /// running in the library's unspecialized copy (reached through the vtable, where the
    /// subscriber's module could not see the signal's class): there a struct sink would
    /// run every value through generic code with runtime metadata lookups, so it asks
    /// `closing` for the specialized closure instead (see ``StageSignal``).
    @inlinable
    func attach<S: EventSink>(sink: S, closing: (S) -> Sink<Value>, _ lifetime: CompoundDisposable)
    where S.Value == Value {
        attach(closing(sink), lifetime)
    }
}

/// The per-event path between operators: one closure call per event and stage.
@usableFromInline
typealias Sink<Value> = (Event<Value>) -> Void

/// A signal whose subscription is a closure. Operators are built from these: the closure
/// is formed in `@inlinable` operator code, so a client module gets it specialized.
@usableFromInline
final class AnonymousSignal<Value>: Signal<Value>, @unchecked Sendable {
    @inlinable
    init(_ body: @escaping (@escaping Sink<Value>, CompoundDisposable) -> Void) {
        super.init(body: body)
    }
}

extension Signal {
    /// Creates a signal from a block that runs once **per subscription**: RAC's `+createSignal:`.
    ///
    /// The block may send events synchronously or later, from any thread (the subscriber
    /// serializes them, re-entrantly). The disposable it returns (or `nil`) is disposed when
    /// the subscription is disposed and also when a terminal event is sent. Events sent after
    /// that are dropped.
    ///
    /// **RAC:** `+createSignal:`. **Thread:** whichever thread the block sends from
    /// (serialized, re-entrantly). **Disposal:** disposes the disposable the block
    /// returned; later sends are dropped. **Terminates:** when the block sends a terminal
    /// event.
    ///
    /// - Parameter didSubscribe: the subscription block.
    /// - Returns: a cold signal.
    @inlinable
    public static func create(_ didSubscribe: @escaping (Subscriber<Value>) -> Disposable?) -> Signal<Value> {
        AnonymousSignal { observer, lifetime in
            let subscriber = Subscriber(observer, lifetime)
            lifetime.add(didSubscribe(subscriber))
        }
    }

    /// A signal that sends `value` and completes on subscription: RAC's `+return:`.
    ///
    /// **RAC:** `+return:`. **Thread:** the subscribing thread, synchronously.
    /// **Disposal:** nothing to cancel. **Terminates:** right after its value.
    @inlinable
    public static func `return`(_ value: Value) -> Signal<Value> {
        ReturnSignal(value)
    }

    /// A signal that completes on subscription: RAC's `+empty`.
    ///
    /// **RAC:** `+empty`. **Thread:** the subscribing thread, synchronously. **Disposal:**
    /// nothing to cancel. **Terminates:** at once.
    @inlinable
    public static func empty() -> Signal<Value> {
        AnonymousSignal { observer, _ in observer(.completed) }
    }

    /// A signal that never sends anything: RAC's `+never`.
    ///
    /// **RAC:** `+never`. **Thread:** none. **Disposal:** nothing to cancel.
    /// **Terminates:** never.
    @inlinable
    public static func never() -> Signal<Value> {
        AnonymousSignal { _, _ in }
    }

    /// A signal that fails with `error` on subscription: RAC's `+error:`.
    ///
    /// **RAC:** `+error:`. **Thread:** the subscribing thread, synchronously. **Disposal:**
    /// nothing to cancel. **Terminates:** at once, with the error.
    @inlinable
    public static func error(_ error: any Error) -> Signal<Value> {
        AnonymousSignal { observer, _ in observer(.error(error)) }
    }

    /// Calls `factory` at each subscription and subscribes to the signal it returns: RAC's
    /// `+defer:` ("turns a hot signal cold"). The block never runs without a subscription.
    ///
    /// **RAC:** `+defer:`. **Thread:** the built signal's. **Disposal:** disposes the built
    /// signal's subscription. **Terminates:** when the built signal terminates.
    @inlinable
    public static func `defer`(_ factory: @escaping () -> Signal<Value>) -> Signal<Value> {
        AnonymousSignal { observer, lifetime in
            factory().attach(observer, lifetime)
        }
    }

    /// Runs `body` at each subscription: its result is sent and the signal completes; a
    /// thrown error is sent instead. RAC's `+try:`.
    ///
    /// **RAC:** `+try:`. **Thread:** the subscribing thread, synchronously. **Disposal:**
    /// nothing to cancel. **Terminates:** right after the value, or at once with the thrown
    /// error.
    @inlinable
    public static func `try`(_ body: @escaping () throws -> Value) -> Signal<Value> {
        AnonymousSignal { observer, _ in
            do {
                let v = try body()
                observer(.next(v))
                observer(.completed)
            } catch {
                observer(.error(error))
            }
        }
    }

    /// Sets the debug name (RAC's `-setNameWithFormat:`) and returns the receiver.
    @discardableResult
    public func named(_ name: String) -> Self {
        self.name = name
        return self
    }
}

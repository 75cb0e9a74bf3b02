/// A signal whose subscription is a closure that is also handed the `BlockSubscriber` when
/// one is subscribed to it directly (`signal.subscribe(next:…)` on this signal), `nil`
/// otherwise: for an operator that sends every value with its own lock held and registers
/// that lock with the subscriber (`serializeDeliveries(under:)`, the `combineLatest`
/// forms). Such an operator may then deliver a value straight to the subscriber
/// (``BlockSubscriber/receiveUnderSerializer(_:)``) instead of through the forwarding
/// closure that `subscribe` formed, its `receive` and its check of who holds the registered
/// lock: the two-way `combineLatest` row spent about 60 of its 362 instructions per update
/// on that way (Benchmarks/README.md, issue #35).
///
/// The closure is formed in the operator's `@inlinable` code, so it is specialized in the
/// caller's module, as a `Subject`'s `connect` is: this class's overrides, reached through
/// the vtable, run generic code only for the one call that starts the subscription.
@usableFromInline
final class SubscriberAwareSignal<Value>: Signal<Value>, @unchecked Sendable {
    @usableFromInline
    let run: (@escaping Sink<Value>, CompoundDisposable, BlockSubscriber<Value>?) -> Void

    @inlinable
    init(_ run: @escaping (@escaping Sink<Value>, CompoundDisposable, BlockSubscriber<Value>?) -> Void) {
        self.run = run
        super.init()
    }

    @usableFromInline
    override func attach(_ observer: @escaping Sink<Value>, _ lifetime: CompoundDisposable) {
        run(observer, lifetime, nil)
    }

    @usableFromInline
    override func attach(subscriber: BlockSubscriber<Value>, observer: @escaping Sink<Value>) {
        run(observer, subscriber, subscriber)
    }
}

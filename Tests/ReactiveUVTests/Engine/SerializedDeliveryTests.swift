import CSystemShims
import Testing
@testable import ReactiveUV

/// `combineLatest` registers its state's lock with the subscriber
/// (`CompoundDisposable.serializeDeliveries(under:)`), and a value delivered by the thread
/// holding that lock skips the subscriber's locked announcement: `dispose()` waits for the
/// lock instead. These tests check what that must not break: nothing starts after
/// `dispose()` returns from another thread, a callback disposing its own subscription
/// finishes on its captures, and who owns the registered state.
@Suite struct SerializedDeliveryTests {
    /// Two threads send into the two sources, so every value is delivered under the
    /// state's lock by one of them; the test thread disposes. The callback reads what it
    /// captured on every call (a release under a running callback is a use after free for
    /// the ASan lane).
    @Test func nothingArrivesAfterDisposeReturnsWhileTwoThreadsSend() {
        for round in 0..<20 {
            let a = Subject<Int>(), b = Subject<Int>()
            let watch = DeliveryWatch()
            let captured = Captured("round \(round)")
            let d = a.combineLatest(with: b).subscribeNext { _ in
                if captured.name.isEmpty { return }
                watch.delivered()
            }
            let senderA = BusySender { a.sendNext($0) }
            let senderB = BusySender { b.sendNext($0) }
            let until = deadline(inSeconds: 30)
            watch.waitForDeliveries(Int64(100 + round * 50), until: until)
            d.dispose()
            watch.disposeHasReturned()
            senderA.waitForMoreSends(1_000, until: until)
            senderB.waitForMoreSends(1_000, until: until)
            senderA.stop()
            senderB.stop()
            #expect(watch.received >= 100, "round \(round): values flowed")
            #expect(watch.late == 0, "round \(round)")
        }
    }

    /// A callback that disposes its own subscription, delivered under the state's lock:
    /// `dispose()` takes the lock again on the same thread (re-entrant) instead of
    /// waiting, the callback finishes on its captures, and nothing more arrives.
    @Test func callbackDisposingItselfUnderTheStateLockFinishesAndStops() {
        let a = Subject<Int>(), b = Subject<Int>()
        var got: [String] = []
        weak var watched: Captured?
        var d: Disposable?
        do {
            let captured = Captured("c")
            watched = captured
            d = a.combineLatest(with: b).subscribeNext { [captured] pair in
                if pair.1 == 20 { d?.dispose() }
                got.append("\(captured.name)\(pair.0),\(pair.1)")
            }
        }
        a.sendNext(1)
        b.sendNext(10)
        b.sendNext(20)
        a.sendNext(2)
        b.sendNext(30)
        #expect(got == ["c1,10", "c1,20"])
        #expect(watched == nil)
    }

    /// The first registration wins and is kept until the subscription object goes; a
    /// later one is given back at once; a closed subscription refuses (the operator then
    /// subscribes to nothing).
    @Test func registeredStateIsOwnedByTheSubscriptionAndAClosedOneRefuses() {
        weak var first: LockedState?
        weak var second: LockedState?
        var subscriber: BlockSubscriber<Int>? = BlockSubscriber(next: { _ in }, error: nil, completed: nil)
        do {
            let s1 = LockedState(), s2 = LockedState()
            first = s1
            second = s2
            #expect(subscriber?.serializeDeliveries(under: s1) == true)
            #expect(subscriber?.serializeDeliveries(under: s2) == true)
        }
        #expect(first != nil)
        #expect(second == nil)
        subscriber?.dispose()
        #expect(first != nil)
        #expect(subscriber?.serializeDeliveries(under: LockedState()) == false)
        subscriber = nil
        #expect(first == nil)
    }
}

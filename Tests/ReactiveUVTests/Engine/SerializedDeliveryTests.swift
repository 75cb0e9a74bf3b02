import CSystemShims
import Glibc
import Synchronization
import Testing
@testable import ReactiveUV

/// `combineLatest` registers its state's lock with the subscriber
/// (`CompoundDisposable.serializeDeliveries(under:)`), as a subject registers its roster's
/// for a subscription through stages, and a value delivered by the thread
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
        disposeWhileTwoThreadsSend(rounds: 20) { a, b, value in
            a.combineLatest(with: b).subscribeNext { _ in value() }
        }
    }

    /// Two threads send into `a` and `b` without pause while the subscription `subscribe`
    /// makes of them takes values (calling `value` for each); the test thread disposes it
    /// once values flowed, and nothing may arrive after `dispose()` returned. `value`
    /// reads what it captured on every call (a release under a running callback is a use
    /// after free for the ASan lane).
    private func disposeWhileTwoThreadsSend(
        rounds: Int, _ subscribe: (Subject<Int>, Subject<Int>, @escaping @Sendable () -> Void) -> Disposable
    ) {
        for round in 0..<rounds {
            let a = Subject<Int>(), b = Subject<Int>()
            let watch = DeliveryWatch()
            let captured = Captured("round \(round)")
            let d = subscribe(a, b) {
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

    /// The same with a `map` between `combineLatest` and the subscriber: there the operator
    /// is not handed the subscriber (`SubscriberAwareSignal` hands it over only when it is
    /// subscribed to directly), so values go through the forwarding closure and the
    /// subscriber's own check that the calling thread holds the registered lock.
    @Test func nothingArrivesAfterDisposeReturnsThroughAStageWhileTwoThreadsSend() {
        disposeWhileTwoThreadsSend(rounds: 10) { a, b, value in
            a.combineLatest(with: b).map { $0.0 &+ $0.1 }.subscribeNext { _ in value() }
        }
    }

    /// A subject with stages between it and the subscriber registers its roster (whose
    /// lock it holds around every send) as the subscriber's serializer, so its values are
    /// announced with plain stores. Both threads send into `a` (`b` forwards into it), and
    /// `dispose()` from the test thread must wait for a send under way.
    @Test func nothingArrivesAfterDisposeReturnsThroughStagesOfASubjectWhileTwoThreadsSend() {
        disposeWhileTwoThreadsSend(rounds: 10) { a, b, value in
            let forward = b.subscribeNext { a.sendNext($0) }
            let d = a.map { $0 &+ 1 }.filter { $0 != 0 }.subscribeNext { _ in value() }
            return Disposable {
                d.dispose()
                forward.dispose()
            }
        }
    }

    /// The subject's roster is the registered serializer of a subscription through stages
    /// (not of one to the subject directly, which the send loop calls itself), and a
    /// subscription already closed is not connected at all.
    @Test func aSubjectRegistersItsRosterWithASubscriptionThroughStages() throws {
        let subject = Subject<Int>()
        var got: [Int] = []
        let d = subject.map { $0 * 10 }.filter { $0 != 20 }.subscribeNext { got.append($0) }
        let subscriber = try #require(d as? BlockSubscriber<Int>)
        let held = subscriber.serializer.load(ordering: .sequentiallyConsistent)
        #expect(held?.takeUnretainedValue() === subject.roster)
        subject.sendNext(1)
        subject.sendNext(2)
        subject.sendNext(3)
        #expect(got == [10, 30])
        d.dispose()
        subject.sendNext(4)
        #expect(got == [10, 30])

        let direct = subject.subscribeNext { _ in }
        let directSubscriber = try #require(direct as? BlockSubscriber<Int>)
        #expect(directSubscriber.serializer.load(ordering: .sequentiallyConsistent) == nil)
        direct.dispose()

        let closed = BlockSubscriber<Int>(next: { _ in Issue.record("a closed subscription got a value") },
                                          error: nil, completed: nil)
        closed.dispose()
        subject.attach({ _ in Issue.record("a closed subscription was connected") }, closed)
        #expect(subject.roster.entries.allSatisfy { $0.entry.lifetime !== closed })
        subject.sendNext(5)
    }

    /// Subscribed directly, `combineLatest` is handed the subscriber and calls it
    /// unretained (`BlockSubscriber.direct(_:serializedBy:_:)`), counting on its source
    /// closures holding it as their `lifetime`. A callback that disposes its own
    /// subscription and drops the last reference from outside: the subscriber lives until
    /// the delivery under way has returned (the sending subject's retired list holds the
    /// closure), and is freed after it (a use after free here is the ASan lane's to see).
    @Test func directDeliveryKeepsTheSubscriberAliveWhenItsCallbackDropsIt() {
        let a = Subject<Int>(), b = Subject<Int>()
        weak var watched: BlockSubscriber<(Int, Int)>?
        var d: Disposable?
        var got: [Int] = []
        var aliveInCall = false
        d = a.combineLatest(with: b).subscribeNext { pair in
            got.append(pair.1)
            if pair.1 == 20 {
                d?.dispose()
                d = nil
                aliveInCall = watched != nil
            }
        }
        watched = d as? BlockSubscriber<(Int, Int)>
        #expect(watched != nil)
        a.sendNext(1)
        b.sendNext(10)
        b.sendNext(20)
        b.sendNext(30)
        a.sendNext(2)
        #expect(got == [10, 20])
        #expect(aliveInCall)
        #expect(watched == nil)
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
    /// Weak references to the two values ``sendOneEach(_:_:)`` sent.
    final class SentPair {
        weak var a: Captured?
        weak var b: Captured?
    }

    /// Sends a new ``Captured`` into each of `a` and `b`, in that order, and returns weak
    /// references to them: once this returns, what keeps them alive is what the
    /// subscription keeps.
    func sendOneEach(_ a: Subject<Captured>, _ b: Subject<Captured>) -> SentPair {
        let sent = SentPair()
        let x = Captured("a"), y = Captured("b")
        sent.a = x
        sent.b = y
        a.sendNext(x)
        b.sendNext(y)
        return sent
    }

    /// The subscriber keeps the registered state until the subscription object is freed,
    /// but not the latest values in it: `dispose()` drops them (under the state's lock)
    /// while the test still holds the subscription. (Failed before `releaseValues()`.)
    @Test func disposeReleasesTheLatestValuesWhileTheSubscriptionObjectLives() {
        let a = Subject<Captured>(), b = Subject<Captured>()
        var got = 0
        let d = a.combineLatest(with: b).subscribeNext { _ in got += 1 }
        let sent = sendOneEach(a, b)
        #expect(got == 1)
        #expect(sent.a != nil, "the state remembers the latest values while subscribed")
        d.dispose()
        #expect(sent.a == nil)
        #expect(sent.b == nil)
        // A value arriving after the clear is neither delivered nor stored.
        weak var late: Captured?
        do {
            let z = Captured("late")
            late = z
            a.sendNext(z)
        }
        #expect(late == nil)
        #expect(got == 1)
        withExtendedLifetime(d) {}
    }

    /// After the combined signal completed (both sources did), a `dispose()` returns
    /// early; the subscriber's terminal step has already dropped the values its state
    /// remembered, though the subscription object (which keeps the state) lives on.
    @Test func completionReleasesTheLatestValuesWhileTheSubscriptionObjectLives() {
        let a = Subject<Captured>(), b = Subject<Captured>()
        var got = 0
        var completed = false
        let d = a.combineLatest(with: b).subscribe(next: { _ in got += 1 }, completed: { completed = true })
        let sent = sendOneEach(a, b)
        #expect(got == 1)
        #expect(sent.b != nil, "the state remembers the latest values until the end")
        a.sendCompleted()
        #expect(!completed)
        #expect(sent.a != nil, "one source's completion ends nothing")
        b.sendCompleted()
        #expect(completed)
        #expect(sent.a == nil)
        #expect(sent.b == nil)
        d.dispose()
        withExtendedLifetime(d) {}
    }

    /// Thread B holds the registered state's lock (as it does around every value it
    /// delivers with a plain, relaxed announcement) and sends a value under it only after
    /// `dispose()` has started on thread C: `dispose()` must not return while B holds the
    /// lock, and no value may reach the callback after it returned. Without the lock
    /// wait in `dispose()` it returns at once (nothing announced yet), which this sees.
    @Test func disposeWaitsForAThreadHoldingTheStateLock() {
        let a = Subject<Int>(), b = Subject<Int>()
        let events = EventLog()
        let d = a.combineLatest(with: b).subscribeNext { pair in
            let late = events.disposeReturned.load(ordering: .sequentiallyConsistent)
            events.append(late ? "late \(pair.0)" : "next \(pair.0)")
        }
        a.sendNext(1)
        b.sendNext(10)
        guard let subscriber = d as? BlockSubscriber<(Int, Int)>,
              let held = subscriber.serializer.load(ordering: .sequentiallyConsistent) else {
            Issue.record("combineLatest registered no serializer")
            return
        }
        let state = held.takeUnretainedValue()
        let locked = Latch(), go = Latch(), disposeStarted = Latch()
        let sender = TestThread {
            state.lock.lock()
            locked.countDown()
            _ = go.wait(timeout: 30)
            a.sendNext(2)
            events.append("unlock")
            state.lock.unlock()
        }
        #expect(locked.wait(timeout: 30))
        let disposer = TestThread {
            disposeStarted.countDown()
            d.dispose()
            events.disposeReturned.store(true, ordering: .sequentiallyConsistent)
            events.append("disposed")
        }
        #expect(disposeStarted.wait(timeout: 30))
        // The positive marker that dispose() is under way: it closed the subscriber's gate,
        // which it does before it waits for the state's lock.
        let until = deadline(inSeconds: 30)
        while subscriber.state.load(ordering: .sequentiallyConsistent) & BlockSubscriber<(Int, Int)>.closedBit == 0,
              csys_monotonic_ns() < until {
            csys_thread_yield()
        }
        #expect(subscriber.state.load(ordering: .sequentiallyConsistent) & BlockSubscriber<(Int, Int)>.closedBit != 0,
                "dispose() never closed the gate")
        // What must not happen (dispose() returning) has no marker of its own: after the
        // gate closed, a dispose() that does not wait returns within microseconds; 200 ms
        // of watching sees it. A slow machine can only make this miss such a return,
        // never fail a dispose() that waits.
        let watchUntil = csys_monotonic_ns() + 200_000_000
        while csys_monotonic_ns() < watchUntil, !events.disposeReturned.load(ordering: .sequentiallyConsistent) {
            csys_thread_yield()
        }
        let returnedEarly = events.disposeReturned.load(ordering: .sequentiallyConsistent)
        #expect(!returnedEarly, "dispose() returned while another thread held the state's lock")
        go.countDown()
        sender.join()
        disposer.join()
        let order = events.snapshot()
        #expect(order.first == "next 1")
        #expect(order.last == "disposed")
        #expect(order.firstIndex(of: "unlock").map { $0 < order.count - 1 } == true)
        #expect(!order.contains { $0.hasPrefix("late") })
    }
}

/// An append-only log shared by the threads of a test, and whether `dispose()` returned.
final class EventLog: @unchecked Sendable {
    private let entries = Mutex<[String]>([])
    let disposeReturned = Atomic<Bool>(false)
    func append(_ entry: String) { entries.withLock { $0.append(entry) } }
    func snapshot() -> [String] { entries.withLock { $0 } }
}

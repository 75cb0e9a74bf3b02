import CSystemShims
import Testing
@testable import ReactiveUV

/// The threading contract under real threads: serialized delivery, exactly-once, and
/// nothing after `dispose()` returns.
@Suite struct ConcurrencyTests {
    @Test func fourThreadsIntoOneSubjectDeliverEveryValueOnceAndNeverConcurrently() {
        let subject = Subject<Int>()
        let perThread = 100_000
        let inside = SharedBox(csys_atomic_int(value: 0))
        let seen = SharedBox([UInt8](repeating: 0, count: 4 * perThread))
        let overlaps = SharedBox(0)
        let count = SharedBox(0)
        let d = subject.subscribeNext { v in
            if csys_atomic_int_fetch_add(&inside.value, 1, csys_acq_rel) != 0 { overlaps.value += 1 }
            seen.value[v] &+= 1
            count.value += 1
            csys_atomic_int_fetch_sub(&inside.value, 1, csys_acq_rel)
        }
        runOnThreads(4) { t in
            for i in 0..<perThread { subject.sendNext(t * perThread + i) }
        }
        d.dispose()
        #expect(overlaps.value == 0)
        #expect(count.value == 4 * perThread)
        #expect(seen.value.allSatisfy { $0 == 1 })
    }

    @Test func perThreadOrderIsKept() {
        let subject = Subject<(Int, Int)>()
        let last = SharedBox([Int](repeating: -1, count: 4))
        let outOfOrder = SharedBox(0)
        let d = subject.subscribeNext { (t, i) in
            if i != last.value[t] + 1 { outOfOrder.value += 1 }
            last.value[t] = i
        }
        runOnThreads(4) { t in
            for i in 0..<50_000 { subject.sendNext((t, i)) }
        }
        d.dispose()
        #expect(outOfOrder.value == 0)
        #expect(last.value == [49_999, 49_999, 49_999, 49_999])
    }

    @Test func nothingArrivesAfterDisposeReturnsFromAnotherThread() {
        for round in 0..<20 {
            let subject = Subject<Int>()
            let watch = DeliveryWatch()
            let d = subject.subscribeNext { _ in watch.delivered() }
            let sender = BusySender { _ in subject.sendNext(0) }
            // Let values flow, then dispose from this (another) thread; then let the sender
            // go on for a while to give a late delivery every chance to show.
            let until = deadline(inSeconds: 30)
            watch.waitForDeliveries(Int64(100 + round * 50), until: until)
            d.dispose()
            watch.disposeHasReturned()
            sender.waitForMoreSends(1_000, until: until)
            sender.stop()
            #expect(watch.received >= 100, "round \(round): values flowed")
            #expect(watch.late == 0, "round \(round)")
        }
    }

    /// The other way round: the thread that subscribed delivers and another thread
    /// disposes. Nothing may start after `dispose()` returns, and the callback, released by
    /// the disposing thread, must not be running then (it reads what it captured on every
    /// call: AddressSanitizer would see a use after free).
    @Test func nothingArrivesAfterDisposeReturnsWhileTheSubscribingThreadDelivers() {
        for round in 0..<20 {
            let subject = Subject<Int>()
            let watch = DeliveryWatch()
            let stop = SharedBox(csys_atomic_bool(value: false))
            let subscription = SharedBox<Disposable?>(nil)
            let subscribed = SharedBox(csys_atomic_bool(value: false))
            let join = startThread {
                let captured = Captured("round \(round)")
                let d = subject.subscribeNext { _ in
                    if captured.name.isEmpty { return }
                    watch.delivered()
                }
                subscription.value = d
                csys_atomic_bool_store(&subscribed.value, true, csys_release)
                while !csys_atomic_bool_load(&stop.value, csys_acquire) { subject.sendNext(0) }
            }
            let until = deadline(inSeconds: 30)
            while !csys_atomic_bool_load(&subscribed.value, csys_acquire) && csys_monotonic_ns() < until {
                csys_thread_yield()
            }
            watch.waitForDeliveries(Int64(100 + round * 50), until: until)
            subscription.value?.dispose()
            watch.disposeHasReturned()
            let receivedAtDispose = watch.received
            // The sender goes on for a while: a late delivery has every chance to show.
            for _ in 0..<2_000 { csys_thread_yield() }
            csys_atomic_bool_store(&stop.value, true, csys_release)
            join()
            #expect(receivedAtDispose >= 100, "round \(round): values flowed")
            #expect(watch.late == 0, "round \(round)")
        }
    }

    @Test func reentrantSendFromSubscriberDoesNotDeadlock() {
        let subject = Subject<Int>()
        var got: [Int] = []
        subject.subscribeNext { [unowned subject] v in
            got.append(v)
            if v < 3 { subject.sendNext(v + 1) }
        }
        subject.sendNext(0)
        #expect(got == [0, 1, 2, 3])
    }

    @Test func subscriberDisposingItselfInsideItsCallback() {
        let subject = Subject<Int>()
        var got: [Int] = []
        var d: Disposable?
        d = subject.subscribeNext { v in
            got.append(v)
            if v == 1 { d?.dispose() }
        }
        for i in 0..<5 { subject.sendNext(i) }
        #expect(got == [0, 1])
    }

    /// A callback that disposes its own subscription runs to its end on what it captured
    /// (callbacks are called without a reference of their own, so their release waits for
    /// the delivery to return), and what it captured is released right after.
    @Test func selfDisposingCallbackFinishesOnItsCapturesWhichAreReleasedAfterIt() {
        let subject = Subject<Int>()
        var got: [String] = []
        weak var watched: Captured?
        var d: Disposable?
        do {
            let captured = Captured("c")
            watched = captured
            d = subject.subscribeNext { [captured] v in
                d?.dispose()
                got.append("\(captured.name)\(v)")
            }
        }
        #expect(watched != nil)
        subject.sendNext(1)
        subject.sendNext(2)
        #expect(got == ["c1"])
        #expect(watched == nil)
    }

    /// A terminal event sent from inside a `next` callback reaches `completed` at once (RAC
    /// order), the `next` callback then finishes on its captures, and both callbacks'
    /// captures are released once the outer delivery returns.
    @Test func completionSentFromInsideANextCallbackLetsThatCallbackFinish() {
        let subject = Subject<Int>()
        var events: [String] = []
        weak var watched: Captured?
        do {
            let captured = Captured("c")
            watched = captured
            subject.subscribe(
                next: { [captured] v in
                    subject.sendCompleted()
                    events.append("next \(v) \(captured.name)")
                },
                completed: { [captured] in events.append("completed \(captured.name)") })
        }
        subject.sendNext(1)
        subject.sendNext(2)
        #expect(events == ["completed c", "next 1 c"])
        #expect(watched == nil)
    }
}

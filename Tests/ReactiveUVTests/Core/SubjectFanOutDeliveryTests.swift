import CSystemShims
import Testing
@testable import ReactiveUV

/// A subject's own subscribers (`subject.subscribeNext { … }`) are called straight from its
/// send loop, under its lock, with no locked instruction per delivery; `dispose()` from
/// another thread then waits on the subject's lock. These pin what that path must keep:
/// nothing after `dispose()` returns, callbacks released once and never while running,
/// and the same subscriber reached by both paths (a replay, then live values).
@Suite struct SubjectFanOutDeliveryTests {
    /// One subscriber of many is disposed from another thread while the sender fans out:
    /// it gets nothing once `dispose()` has returned, the others get every value, and its
    /// callback's captures are released by then (the disposing thread released them after
    /// the send under way had finished with them).
    @Test func aSubscriberDisposedFromAnotherThreadMidFanOutGetsNothingAfterwards() {
        for round in 0..<10 {
            let subject = Subject<Int>()
            let watch = DeliveryWatch()
            let others = SharedBox(csys_atomic_int(value: 0))
            let subscribeOthers = {
                (0..<50).map { _ in
                    subject.subscribeNext { _ in csys_atomic_int_fetch_add(&others.value, 1, csys_relaxed) }
                }
            }
            var subscriptions = subscribeOthers()
            weak var watched: Captured?
            var target: Disposable?
            do {
                let captured = Captured("target \(round)")
                watched = captured
                target = subject.subscribeNext { [captured] _ in
                    if captured.name.isEmpty { return }
                    watch.delivered()
                }
            }
            subscriptions += subscribeOthers()
            let sender = BusySender { subject.sendNext($0) }
            let until = deadline(inSeconds: 30)
            watch.waitForDeliveries(Int64(50 + round * 20), until: until)
            target?.dispose()
            watch.disposeHasReturned()
            target = nil
            // The subscription and its callback are gone once dispose has returned (the
            // subject's entry held the subscription; its removal happened in dispose).
            #expect(watched == nil, "round \(round): the callback's captures are released")
            sender.waitForMoreSends(200, until: until)
            let total = sender.stop()
            #expect(watch.late == 0, "round \(round)")
            #expect(csys_atomic_int_load(&others.value, csys_acquire) == total * 100, "round \(round)")
            for d in subscriptions { d.dispose() }
        }
    }

    /// A callback that disposes *another* subscriber of the same subject during a send:
    /// that subscriber is skipped for the rest of the send and after, and its callback's
    /// captures are released at once (no delivery of it is running on any thread).
    @Test func aCallbackDisposingAnotherSubscriberReleasesThatOnesCallbackAtOnce() {
        let subject = Subject<Int>()
        var got: [String] = []
        weak var watched: Captured?
        var second: Disposable?
        var releasedDuringTheSend: Bool?
        subject.subscribeNext { v in
            got.append("first \(v)")
            if v == 1 {
                second?.dispose()
                second = nil
                releasedDuringTheSend = watched == nil
            }
        }
        do {
            let captured = Captured("second")
            watched = captured
            second = subject.subscribeNext { [captured] v in got.append("\(captured.name) \(v)") }
        }
        subject.sendNext(0)
        subject.sendNext(1)
        subject.sendNext(2)
        #expect(got == ["first 0", "second 0", "first 1", "first 2"])
        #expect(releasedDuringTheSend == true)
    }

    /// A callback that captures its own subscription and disposes it from inside a send,
    /// beside other subscribers: the cycle is broken once its delivery returns, and the
    /// subscribers after it in the same send still get the value.
    @Test func aSelfDisposingSubscriberAmongOthersIsReleasedAndTheOthersStillGetTheValue() {
        let subject = Subject<Int>()
        var got: [String] = []
        weak var watched: Captured?
        subject.subscribeNext { v in got.append("a \(v)") }
        do {
            let captured = Captured("b")
            watched = captured
            var d: Disposable?
            d = subject.subscribeNext { [captured] v in
                d?.dispose()
                got.append("\(captured.name) \(v)")
            }
        }
        subject.subscribeNext { v in got.append("c \(v)") }
        #expect(watched != nil)
        subject.sendNext(1)
        #expect(watched == nil)
        subject.sendNext(2)
        #expect(got == ["a 1", "b 1", "c 1", "a 2", "c 2"])
    }

    /// A replay subject's subscriber gets the replay through the subscription closure and
    /// live values through the send loop: in order, each once, and a value sent from
    /// inside the replay reaches it live after the replay.
    @Test func aReplaySubscriberGetsTheReplayThenLiveValuesEachOnceInOrder() {
        let subject = ReplaySubject<Int>()
        subject.sendNext(1)
        subject.sendNext(2)
        var got: [Int] = []
        let d = subject.subscribeNext { v in
            got.append(v)
            if v == 2 { subject.sendNext(3) }
        }
        subject.sendNext(4)
        d.dispose()
        subject.sendNext(5)
        #expect(got == [1, 2, 3, 4])
    }

    /// A behavior subject's subscriber disposed from another thread while values flow:
    /// the same guarantee as a plain subject's.
    @Test func aBehaviorSubscriberDisposedFromAnotherThreadGetsNothingAfterwards() {
        let subject = BehaviorSubject(value: 0)
        let watch = DeliveryWatch()
        let d = subject.subscribeNext { _ in watch.delivered() }
        let sender = BusySender { subject.sendNext($0 + 1) }
        let until = deadline(inSeconds: 30)
        watch.waitForDeliveries(1_000, until: until)
        d.dispose()
        watch.disposeHasReturned()
        sender.waitForMoreSends(2_000, until: until)
        sender.stop()
        #expect(watch.received >= 1_000)
        #expect(watch.late == 0)
    }
}

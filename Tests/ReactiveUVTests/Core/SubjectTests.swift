import Testing
@testable import ReactiveUV

/// Subject, ReplaySubject, BehaviorSubject (catalogue §7, C6; ReactiveUV replays a
/// subject's terminal event to late subscribers, ARCHITECTURE.md).
@Suite struct SubjectTests {
    /// A subscriber object (not a block) that records events and keeps the disposables it
    /// was handed, so a test can dispose from inside a callback.
    final class RecordingSubscriber<Value>: SubscriberProtocol {
        var events: [Event<Value>] = []
        var disposables: [Disposable] = []
        var onNext: ((Value) -> Void)?
        func sendNext(_ value: Value) {
            events.append(.next(value))
            onNext?(value)
        }
        func sendError(_ error: any Error) { events.append(.error(error)) }
        func sendCompleted() { events.append(.completed) }
        func didSubscribe(with disposable: Disposable) { disposables.append(disposable) }
    }

    // MARK: Subject

    @Test func subjectIsHotAndForwardsToCurrentSubscribers() {
        let subject = Subject<Int>()
        subject.sendNext(0)
        let a = opRecord(subject)
        subject.sendNext(1)
        let b = opRecord(subject)
        subject.sendNext(2)
        subject.sendCompleted()
        subject.sendNext(3)
        #expect(a.events == [.next(1), .next(2), .completed])
        #expect(b.events == [.next(2), .completed])
    }

    @Test func subjectReplaysItsTerminalEventToLateSubscribers() {
        let completed = Subject<Int>()
        completed.sendCompleted()
        completed.sendNext(1)
        #expect(opRecord(completed).events == [.completed])
        let failed = Subject<Int>()
        failed.sendError(OpError.boom)
        failed.sendCompleted()
        #expect(opRecord(failed).events == [.error(OpError.boom)])
        #expect(failed.hasTerminated)
    }

    @Test func disposingASubscriptionRemovesThatSubscriber() {
        let subject = Subject<Int>()
        let a = opRecord(subject), b = opRecord(subject)
        a.dispose()
        #expect(subject.roster.entries.count == 1)
        subject.sendNext(1)
        #expect(a.events.isEmpty && b.values == [1])
    }

    @Test func reentrantSendIsDeliveredImmediatelyToEverySubscriber() {
        let subject = Subject<Int>()
        var a: [Int] = [], b: [Int] = []
        subject.subscribeNext { [unowned subject] v in
            a.append(v)
            if v == 1 { subject.sendNext(2) }
        }
        subject.subscribeNext { b.append($0) }
        subject.sendNext(1)
        #expect(a == [1, 2])
        #expect(b == [2, 1])
    }

    @Test func reentrantCompletionFromASubscriber() {
        let subject = Subject<Int>()
        var a: [Event<Int>] = [], b: [Event<Int>] = []
        subject.subscribeEvents { e in
            a.append(e)
            if case .next(1) = e { subject.sendCompleted() }
        }
        subject.subscribeEvents { b.append($0) }
        subject.sendNext(1)
        subject.sendNext(2)
        #expect(a == [.next(1), .completed])
        #expect(b == [.completed], "the completion overtakes the value, and nothing follows a terminal event")
    }

    @Test func subjectAsSubscriberOfSeveralSignalsEndsAtTheFirstTerminalEvent() {
        let subject = Subject<Int>()
        let log = opRecord(subject)
        let a = Subject<Int>(), b = Subject<Int>()
        let pb = OpProbe(), pc = OpProbe()
        a.subscribe(subject)
        b.probed(pb).subscribe(subject)
        a.sendNext(1)
        b.sendNext(2)
        a.sendCompleted()
        #expect(pb.live == 0, "its other subscriptions are disposed")
        b.sendNext(3)
        Signal<Int>.never().probed(pc).subscribe(subject)
        #expect(pc.live == 0, "and so are its future ones")
        #expect(log.events == [.next(1), .next(2), .completed])
    }

    @Test func subjectAsSubscriberEndsAtTheFirstError() {
        let subject = Subject<Int>()
        let log = opRecord(subject)
        let p = OpProbe()
        Signal<Int>.never().probed(p).subscribe(subject)
        Signal<Int>.error(OpError.boom).subscribe(subject)
        #expect(p.live == 0)
        #expect(log.events == [.error(OpError.boom)])
    }

    @Test func disposingAnotherSubscriberDuringDeliveryStopsDeliveryToIt() {
        let subject = Subject<Int>()
        var other: OpLog<Int>?
        var got: [Int] = []
        subject.subscribeNext { v in
            got.append(v)
            other?.dispose()
        }
        other = opRecord(subject)
        subject.sendNext(1)
        #expect(got == [1])
        #expect(other?.events == [])
    }

    @Test func aPropertyStyleClampFromTheCurrentValueCallback() {
        // The same re-entrancy through MutableProperty: an observer that corrects the value
        // it is first given must see its own correction.
        let p = MutableProperty(value: -1)
        var got: [Int] = []
        p.signal.subscribeNext { [unowned p] v in
            got.append(v)
            if v < 0 { p.value = 0 }
        }
        #expect(p.value == 0)
        #expect(got == [-1, 0])
        
    }

    @Test func subjectForgetsItsSubscriptionsToSourcesOnceTheyAreDisposed() {
        // RAC's -[RACSubject didSubscribeWithDisposable:] removes each disposable again when
        // it is disposed (catalogue §6: "no unbounded growth"): a long-lived subject that is
        // subscribed to many short-lived sources must not keep every finished subscription.
        let subject = Subject<Int>()
        weak var weakSubscription: Disposable?
        for _ in 0..<100 {
            let d = Signal<Int>.never().subscribe(subject)
            weakSubscription = d
            d.dispose()
        }
        #expect(subject.subscriptions.members.count == 0)
        #expect(weakSubscription == nil)
        
        // The subject still works, and still ends its live subscriptions at termination.
        let p = OpProbe()
        Signal<Int>.never().probed(p).subscribe(subject)
        subject.sendCompleted()
        #expect(p.live == 0)
    }

    // MARK: ReplaySubject

    @Test func unlimitedReplaySubjectReplaysEverythingThenGoesLive() {
        let subject = ReplaySubject<Int>()
        #expect(subject.capacity == ReplaySubject<Int>.unlimited)
        for i in 1...100 { subject.sendNext(i) }
        let log = opRecord(subject)
        subject.sendNext(101)
        #expect(log.values == Array(1...101))
    }

    @Test func replaySubjectKeepsTheLastCapacityValuesAndTheTerminalEvent() {
        let subject = ReplaySubject<Int>(capacity: 2)
        for i in 1...5 { subject.sendNext(i) }
        #expect(opRecord(subject).events == [.next(4), .next(5)])
        subject.sendError(OpError.boom)
        #expect(opRecord(subject).events == [.next(4), .next(5), .error(OpError.boom)])
    }

    @Test func replaySubjectTrimsCorrectlyPastItsCompactionThreshold() {
        let subject = ReplaySubject<Int>(capacity: 3)
        for i in 1...500 { subject.sendNext(i) }
        #expect(opRecord(subject).values == [498, 499, 500])
    }

    @Test func replaySubjectWithCapacityZeroKeepsNoValuesButTheTerminalEvent() {
        let subject = ReplaySubject<Int>(capacity: 0)
        subject.sendNext(1)
        let log = opRecord(subject)
        #expect(log.events.isEmpty)
        subject.sendNext(2)
        subject.sendCompleted()
        #expect(log.events == [.next(2), .completed])
        #expect(opRecord(subject).events == [.completed])
    }

    @Test func disposingMidReplayStopsTheReplay() {
        let subject = ReplaySubject<Int>()
        for i in 1...5 { subject.sendNext(i) }
        let subscriber = RecordingSubscriber<Int>()
        subscriber.onNext = { [unowned subscriber] v in if v == 2 { subscriber.disposables.forEach { $0.dispose() } } }
        subject.subscribe(subscriber)
        #expect(subscriber.events == [.next(1), .next(2)])
        subject.sendNext(6)
        #expect(subscriber.events == [.next(1), .next(2)])
        #expect(subject.roster.entries.isEmpty)
    }

    @Test func takeOfAReplaySubjectStopsTheReplay() {
        let subject = ReplaySubject<Int>()
        for i in 1...5 { subject.sendNext(i) }
        #expect(opRecord(subject.take(2)).events == [.next(1), .next(2), .completed])
        #expect(subject.roster.entries.isEmpty)
    }

    @Test func replaySubjectReentrantSendFromALiveSubscriber() {
        let subject = ReplaySubject<Int>()
        var got: [Int] = []
        subject.subscribeNext { [unowned subject] v in
            got.append(v)
            if v == 1 { subject.sendNext(2) }
        }
        subject.sendNext(1)
        #expect(got == [1, 2])
        #expect(opRecord(subject).values == [1, 2], "the buffer keeps the live order")
    }

    @Test func aValueSentDuringReplayReachesTheReplayingSubscriberInLiveOrder() {
        // A subscriber that sends into a replay subject while it is being replayed to gets
        // its own value right after the replayed ones, as a live subscriber would. The
        // buffer compacts its storage once 64 trimmed slots accumulate; compaction must not
        // change what a replay delivers.
        func replayWithReentrantSend(after count: Int) -> [Int] {
            let subject = ReplaySubject<Int>(capacity: 1)
            for i in 1...count { subject.sendNext(i) }
            var got: [Int] = []
            subject.subscribeNext { [unowned subject] v in
                got.append(v)
                if v == count { subject.sendNext(count + 1) }
            }
            return got
        }
        #expect(replayWithReentrantSend(after: 10) == [10, 11])
        #expect(replayWithReentrantSend(after: 64) == [64, 65])
        #expect(replayWithReentrantSend(after: 65) == [65, 66])
        
    }

    @Test func aSubscriberAddedDuringDeliveryDoesNotGetTheValueBeingDelivered() {
        let subject = Subject<Int>()
        var late: [Int] = []
        var added = false
        subject.subscribeNext { [unowned subject] _ in
            if !added {
                added = true
                subject.subscribeNext { late.append($0) }
            }
        }
        subject.sendNext(1)
        subject.sendNext(2)
        #expect(late == [2], "delivery goes to a snapshot of the subscribers")
    }

    // MARK: BehaviorSubject

    @Test func behaviorSubjectSendsTheCurrentValueThenLiveValues() {
        let subject = BehaviorSubject(value: 0)
        let a = opRecord(subject)
        subject.sendNext(1)
        let b = opRecord(subject)
        subject.sendNext(2)
        #expect(a.values == [0, 1, 2])
        #expect(b.values == [1, 2])
        #expect(subject.value == 2)
    }

    @Test func behaviorSubjectLateSubscriberGetsTheLastValueAndTheTerminalEvent() {
        let subject = BehaviorSubject(value: 0)
        subject.sendNext(5)
        subject.sendCompleted()
        subject.sendNext(6)
        #expect(opRecord(subject).events == [.next(5), .completed])
        let failed = BehaviorSubject(value: 1)
        failed.sendError(OpError.boom)
        #expect(opRecord(failed).events == [.next(1), .error(OpError.boom)])
    }

    @Test func behaviorSubjectTakeOneDoesNotStaySubscribed() {
        let subject = BehaviorSubject(value: 3)
        #expect(opRecord(subject.take(1)).events == [.next(3), .completed])
        #expect(subject.roster.entries.isEmpty)
    }

    @Test func behaviorSubjectReentrantSendFromTheInitialValue() {
        let subject = BehaviorSubject(value: 0)
        var got: [Int] = []
        subject.subscribeNext { [unowned subject] v in
            got.append(v)
            if v == 0 { subject.sendNext(1) }
        }
        subject.sendNext(2)
        // RAC's -[RACBehaviorSubject subscribe:] registers the subscriber, then sends the
        // current value: a value sent from that callback reaches the subscriber, nested.
        #expect(got == [0, 1, 2])
        
        #expect(subject.value == 2)
    }
}

import Testing
@testable import ReactiveUV

/// Creating signals (catalogue §1): create, return, empty, error, never, defer, try,
/// startLazily, startEagerly, and Signal(sequence:on:).
@Suite struct CreatingTests {
    // MARK: create and the constants

    @Test func createRunsOncePerSubscriptionAndItsDisposableEndsWithTheSubscription() {
        let p = OpProbe()
        let s: Signal<Int> = opCold(p) { sub in
            sub.sendNext(1)
            sub.sendCompleted()
            sub.sendNext(2)
        }
        #expect(opRecord(s).events == [.next(1), .completed])
        #expect(opRecord(s).events == [.next(1), .completed])
        #expect(p.subscriptions == 2 && p.live == 0, "disposed automatically on the terminal event")
    }

    @Test func createDropsEventsAfterDisposal() {
        var keep: Subscriber<Int>?
        let p = OpProbe()
        let log = opRecord(opCold(p) { (sub: Subscriber<Int>) in keep = sub })
        keep?.sendNext(1)
        log.dispose()
        #expect(p.live == 0)
        #expect(keep?.isDisposed == true)
        keep?.sendNext(2)
        keep?.sendCompleted()
        #expect(log.events == [.next(1)])
    }

    @Test func aCreateSubscriberForwardingOtherSignalsOwnsThoseSubscriptions() {
        // The RAC idiom `[signal subscribe:subscriber]` inside +createSignal:.
        let a = Subject<Int>(), b = Subject<Int>()
        let pb = OpProbe(), pc = OpProbe()
        let forwarded = Signal<Int>.create { sub in
            a.subscribe(sub)
            b.probed(pb).subscribe(sub)
            return nil
        }
        let log = opRecord(forwarded)
        a.sendNext(1)
        b.sendNext(2)
        a.sendCompleted()
        #expect(log.events == [.next(1), .next(2), .completed])
        #expect(pb.live == 0, "the first terminal event ends the subscriber's other subscriptions (C6)")

        let log2 = opRecord(Signal<Int>.create { sub in
            Signal<Int>.never().probed(pc).subscribe(sub)
            return nil
        })
        #expect(pc.live == 1)
        log2.dispose()
        #expect(pc.live == 0, "disposing the outer subscription disposes the forwarded one")
    }

    @Test func constants() {
        #expect(opRecord(Signal.return(1)).events == [.next(1), .completed])
        #expect(opRecord(Signal<Int>.empty()).events == [.completed])
        #expect(opRecord(Signal<Int>.error(OpError.boom)).events == [.error(OpError.boom)])
        let never = opRecord(Signal<Int>.never())
        #expect(never.events.isEmpty)
        never.dispose()
    }

    @Test func returnStopsAfterTheValueIfDisposed() {
        #expect(opRecord(Signal.return(1).take(1)).events == [.next(1), .completed])
    }

    // MARK: defer, try

    @Test func deferCallsTheFactoryAtEachSubscription() {
        var calls = 0
        let s = Signal<Int>.defer {
            calls += 1
            return .return(calls)
        }
        #expect(calls == 0)
        #expect(opRecord(s).values == [1])
        #expect(opRecord(s).values == [2])
    }

    @Test func deferTurnsAHotSignalCold() {
        let s = Signal<Int>.defer {
            let subject = ReplaySubject<Int>()
            subject.sendNext(7)
            subject.sendCompleted()
            return subject
        }
        #expect(opRecord(s).events == [.next(7), .completed])
        #expect(opRecord(s).events == [.next(7), .completed])
    }

    @Test func deferDisposalDisposesTheSignalItReturned() {
        let p = OpProbe()
        opRecord(Signal<Int>.defer { Signal<Int>.never().probed(p) }).dispose()
        #expect(p.subscriptions == 1 && p.live == 0)
    }

    @Test func tryRunsTheBlockAtEachSubscription() {
        var calls = 0
        let s = Signal<Int>.try {
            calls += 1
            if calls == 2 { throw OpError.boom }
            return calls
        }
        #expect(calls == 0)
        #expect(opRecord(s).events == [.next(1), .completed])
        #expect(opRecord(s).events == [.error(OpError.boom)])
        #expect(opRecord(s).events == [.next(3), .completed])
    }

    // MARK: startLazily, startEagerly

    @Test func startLazilyRunsTheBlockOnceOnTheFirstSubscriptionOnItsScheduler() {
        let s = TestScheduler()
        var runs = 0
        let started = Signal<Int>.startLazily(on: s) { sub in
            runs += 1
            sub.sendNext(1)
            sub.sendNext(2)
            sub.sendCompleted()
        }
        s.run()
        #expect(runs == 0, "nothing without a subscriber")
        let a = opRecord(started)
        #expect(runs == 0 && a.events.isEmpty, "scheduled, not inline")
        s.run()
        #expect(runs == 1)
        #expect(a.events == [.next(1), .next(2), .completed])
        let b = opRecord(started)
        s.run()
        #expect(b.events == [.next(1), .next(2), .completed], "later subscribers get every event")
        #expect(runs == 1)
    }

    @Test func startLazilyWorkIsNeverDisposedByItsSubscribers() {
        let s = TestScheduler()
        var worker: Subscriber<Int>?
        let started = Signal<Int>.startLazily(on: s) { sub in worker = sub }
        let a = opRecord(started)
        s.run()
        worker?.sendNext(1)
        a.dispose()
        #expect(worker?.isDisposed == false)
        worker?.sendNext(2)
        worker?.sendCompleted()
        let b = opRecord(started)
        s.run()
        #expect(a.events == [.next(1)])
        #expect(b.events == [.next(1), .next(2), .completed])
    }

    @Test func startLazilyOnTheImmediateSchedulerRunsInline() {
        var runs = 0
        let started = Signal<Int>.startLazily(on: Scheduler.immediate) { sub in
            runs += 1
            sub.sendNext(runs)
            sub.sendCompleted()
        }
        #expect(runs == 0)
        #expect(opRecord(started).events == [.next(1), .completed])
        #expect(opRecord(started).events == [.next(1), .completed])
        #expect(runs == 1)
    }

    @Test func startEagerlyRunsTheBlockWithoutASubscriber() {
        let s = TestScheduler()
        var runs = 0
        let started = Signal<Int>.startEagerly(on: s) { sub in
            runs += 1
            sub.sendNext(1)
            sub.sendError(OpError.boom)
        }
        #expect(runs == 0, "scheduled at creation, runs on the scheduler")
        s.run()
        #expect(runs == 1)
        let log = opRecord(started)
        s.run()
        #expect(log.events == [.next(1), .error(OpError.boom)])
        #expect(runs == 1)
    }

    // MARK: Signal(sequence:on:)

    @Test func sequenceSignalSendsOneValuePerSchedulerStep() {
        let s = TestScheduler()
        let log = opRecord(Signal(sequence: [1, 2, 3], on: s))
        #expect(log.events.isEmpty)
        s.step()
        #expect(log.events == [.next(1)])
        s.step()
        #expect(log.events == [.next(1), .next(2)])
        s.step()
        #expect(log.events == [.next(1), .next(2), .next(3)])
        s.step()
        #expect(log.events == [.next(1), .next(2), .next(3), .completed])
        #expect(s.pendingCount == 0)
    }

    @Test func sequenceSignalStopsWhenDisposed() {
        let s = TestScheduler()
        let log = opRecord(Signal(sequence: 1..., on: s))
        s.step(3)
        log.dispose()
        s.run()
        #expect(log.values == [1, 2, 3])
    }

    @Test(.timeLimit(.minutes(1))) func sequenceSignalOnTheImmediateSchedulerIsALoopThatStopsAtDisposal() {
        var count = 0
        Signal(sequence: 1...100_000, on: Scheduler.immediate).subscribeNext { _ in count += 1 }
        #expect(count == 100_000, "recursion is flattened: no stack overflow")
        #expect(opRecord(Signal(sequence: 1..., on: Scheduler.immediate).take(3)).events
            == [.next(1), .next(2), .next(3), .completed])
    }

    @Test func sequenceSignalIsColdAndInterleavesOnTheScheduler() {
        let s = TestScheduler()
        let signal = Signal(sequence: ["a", "b"], on: s)
        var order: [String] = []
        signal.subscribeNext { order.append("1\($0)") }
        signal.subscribeNext { order.append("2\($0)") }
        s.run()
        #expect(order == ["1a", "2a", "1b", "2b"])
    }
}

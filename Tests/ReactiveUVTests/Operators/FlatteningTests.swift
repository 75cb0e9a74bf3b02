import Testing
@testable import ReactiveUV

/// Signals of signals: flatten, flatten(n), concat(), flattenMap, switchToLatest,
/// Signal.switch, Signal.if, bind (catalogue §3, §4d, §19).
@Suite struct FlatteningTests {
    // MARK: flatten

    @Test func flattenMergesInnersAndCompletesAfterOuterAndAllInners() {
        let outer = Subject<Signal<Int>>()
        let i1 = Subject<Int>(), i2 = Subject<Int>()
        let log = opRecord(outer.flatten())
        outer.sendNext(i1)
        outer.sendNext(i2)
        i1.sendNext(1)
        i2.sendNext(2)
        i1.sendNext(3)
        outer.sendCompleted()
        i1.sendCompleted()
        #expect(!log.isTerminated)
        i2.sendCompleted()
        #expect(log.events == [.next(1), .next(2), .next(3), .completed])
    }

    @Test func flattenForwardsInnerAndOuterErrorsAndDisposesEverything() {
        let outer = Subject<Signal<Int>>()
        let p = OpProbe()
        let i1 = Subject<Int>()
        let log = opRecord(outer.flatten())
        outer.sendNext(Signal<Int>.never().probed(p))
        outer.sendNext(i1)
        i1.sendError(OpError.boom)
        #expect(log.events == [.error(OpError.boom)])
        #expect(p.live == 0)
        #expect(outer.roster.entries.isEmpty)

        let outer2 = Subject<Signal<Int>>()
        let log2 = opRecord(outer2.flatten())
        outer2.sendNext(Signal<Int>.never().probed(p))
        outer2.sendError(OpError.other)
        #expect(log2.events == [.error(OpError.other)])
        #expect(p.live == 0)
    }

    @Test func flattenDisposalDisposesOuterAndInners() {
        let outer = Subject<Signal<Int>>()
        let p1 = OpProbe(), p2 = OpProbe()
        let log = opRecord(outer.probed(p1).flatten())
        outer.sendNext(Signal<Int>.never().probed(p2))
        outer.sendNext(Signal<Int>.never().probed(p2))
        log.dispose()
        #expect(p1.live == 0 && p2.live == 0 && p2.subscriptions == 2)
    }

    @Test func flattenReentrantNewInnerFromTheSubscriber() {
        let outer = Subject<Signal<Int>>()
        var got: [Int] = []
        outer.flatten().subscribeNext { [unowned outer] v in
            got.append(v)
            if v == 1 { outer.sendNext(.return(2)) }
        }
        outer.sendNext(.return(1))
        outer.sendNext(.return(3))
        #expect(got == [1, 2, 3])
    }

    // An outer completion that arrives re-entrantly while an inner is being subscribed
    // (from the subscriber's callback) must still complete the result.
    @Test func flattenCompletesWhenTheOuterCompletesReentrantlyFromAnInnerValue() {
        let outer = Subject<Signal<Int>>()
        var events: [Event<Int>] = []
        outer.flatten().subscribeEvents { e in
            events.append(e)
            if case .next(1) = e { outer.sendCompleted() }
        }
        outer.sendNext(.return(1))
        #expect(events == [.next(1), .completed])
        
    }

    @Test func concatCompletesWhenTheOuterCompletesReentrantlyFromAnInnerValue() {
        let outer = Subject<Signal<Int>>()
        var events: [Event<Int>] = []
        outer.concat().subscribeEvents { e in
            events.append(e)
            if case .next(1) = e { outer.sendCompleted() }
        }
        outer.sendNext(.fromArray([1, 2]))
        #expect(events == [.next(1), .next(2), .completed])
        
    }

    @Test func flattenMapCompletesWhenTheSourceCompletesReentrantlyFromAnInnerValue() {
        let source = Subject<Int>()
        var events: [Event<Int>] = []
        source.flattenMap { Signal.return($0 * 10) }.subscribeEvents { e in
            events.append(e)
            if case .next(10) = e { source.sendCompleted() }
        }
        source.sendNext(1)
        #expect(events == [.next(10), .completed])
        
    }

    @Test func bindCompletesWhenTheSourceCompletesReentrantlyFromAnInnerValue() {
        let source = Subject<Int>()
        var events: [Event<Int>] = []
        source.bind { { v, _ in Signal.return(v) } }.subscribeEvents { e in
            events.append(e)
            if case .next(1) = e { source.sendCompleted() }
        }
        source.sendNext(1)
        #expect(events == [.next(1), .completed])
        
    }

    @Test func flattenCompletesWhenTheOuterCompletesReentrantlyAfterAnAsynchronousInner() {
        // The same re-entrant completion, but the inner is still running: not affected.
        let outer = Subject<Signal<Int>>()
        let inner = Subject<Int>()
        var events: [Event<Int>] = []
        outer.flatten().subscribeEvents { e in
            events.append(e)
            if case .next(1) = e { outer.sendCompleted() }
        }
        outer.sendNext(inner)
        inner.sendNext(1)
        inner.sendCompleted()
        #expect(events == [.next(1), .completed])
    }

    // MARK: flatten(n), concat()

    @Test func flattenWithLimitQueuesInnersFifo() {
        let outer = Subject<Signal<Int>>()
        let i1 = Subject<Int>(), i2 = Subject<Int>(), i3 = Subject<Int>()
        let p3 = OpProbe()
        let log = opRecord(outer.flatten(2))
        outer.sendNext(i1)
        outer.sendNext(i2)
        outer.sendNext(i3.probed(p3))
        #expect(p3.subscriptions == 0, "the third inner waits")
        i2.sendNext(2)
        i2.sendCompleted()
        #expect(p3.subscriptions == 1)
        i3.sendNext(3)
        i1.sendNext(1)
        outer.sendCompleted()
        i1.sendCompleted()
        #expect(!log.isTerminated)
        i3.sendCompleted()
        #expect(log.events == [.next(2), .next(3), .next(1), .completed])
    }

    @Test func flattenWithLimitCompletesOnlyAfterQueuedInnersComplete() {
        let outer = Subject<Signal<Int>>()
        let i1 = Subject<Int>()
        let log = opRecord(outer.flatten(1))
        outer.sendNext(i1)
        outer.sendNext(.return(9))
        outer.sendCompleted()
        #expect(log.events.isEmpty)
        i1.sendCompleted()
        #expect(log.events == [.next(9), .completed])
    }

    @Test func concatRunsInnersOneAfterAnotherInArrivalOrder() {
        let outer = Subject<Signal<Int>>()
        let i1 = Subject<Int>(), i2 = Subject<Int>()
        let log = opRecord(outer.concat())
        outer.sendNext(i1)
        outer.sendNext(i2)
        i2.sendNext(99)  // not yet subscribed: lost (hot)
        i1.sendNext(1)
        i1.sendCompleted()
        i2.sendNext(2)
        outer.sendNext(.return(3))  // sent later, still concatenated
        i2.sendCompleted()
        outer.sendCompleted()
        #expect(log.events == [.next(1), .next(2), .next(3), .completed])
    }

    @Test func concatOfSynchronousInnersAndErrors() {
        #expect(opRecord(Signal.fromArray([Signal.fromArray([1, 2]), .return(3)]).concat()).events
            == [.next(1), .next(2), .next(3), .completed])
        let p = OpProbe()
        let log = opRecord(Signal.fromArray([.error(OpError.boom), Signal<Int>.return(3).probed(p)]).concat())
        #expect(log.events == [.error(OpError.boom)])
        #expect(p.subscriptions == 0)
    }

    @Test func concatReentrantInnerFromTheSubscriberIsQueued() {
        let outer = Subject<Signal<Int>>()
        var got: [Int] = []
        outer.concat().subscribeNext { [unowned outer] v in
            got.append(v)
            if v == 1 { outer.sendNext(.return(3)) }
        }
        outer.sendNext(.fromArray([1, 2]))
        #expect(got == [1, 2, 3])
    }

    // MARK: flattenMap

    @Test func flattenMapMergesAndNilIsEmpty() {
        let log = opRecord(Signal.fromArray([1, 2, 3]).flattenMap { v -> Signal<Int>? in
            v == 2 ? nil : .fromArray([v, v * 10])
        })
        #expect(log.events == [.next(1), .next(10), .next(3), .next(30), .completed])
    }

    @Test func flattenMapCompletesAfterSourceAndInnersAndForwardsErrors() {
        let source = Subject<Int>()
        let inner = Subject<Int>()
        let log = opRecord(source.flattenMap { _ in inner })
        source.sendNext(1)
        source.sendCompleted()
        inner.sendNext(5)
        #expect(log.events == [.next(5)])
        inner.sendCompleted()
        #expect(log.events == [.next(5), .completed])
        #expect(opRecord(Signal.fromArray([1]).flattenMap { _ in Signal<Int>.error(OpError.boom) }).events == [.error(OpError.boom)])
    }

    @Test func flattenMapDisposalDisposesSourceAndInners() {
        let ps = OpProbe(), pi = OpProbe()
        let source = Subject<Int>()
        let log = opRecord(source.probed(ps).flattenMap { _ in Signal<Int>.never().probed(pi) })
        source.sendNext(1)
        source.sendNext(2)
        log.dispose()
        #expect(ps.live == 0 && pi.live == 0 && pi.subscriptions == 2)
    }

    // MARK: switchToLatest

    @Test func switchToLatestForwardsOnlyTheLatestInnerAndDisposesThePrevious() {
        let outer = Subject<Signal<Int>>()
        let i1 = Subject<Int>(), i2 = Subject<Int>()
        let p1 = OpProbe()
        let log = opRecord(outer.switchToLatest())
        outer.sendNext(i1.probed(p1))
        i1.sendNext(1)
        outer.sendNext(i2)
        #expect(p1.live == 0)
        i1.sendNext(99)
        i2.sendNext(2)
        #expect(log.events == [.next(1), .next(2)])
    }

    @Test func switchToLatestCompletesWhenOuterAndLatestInnerComplete() {
        let outer = Subject<Signal<Int>>()
        let i1 = Subject<Int>()
        let log = opRecord(outer.switchToLatest())
        outer.sendNext(i1)
        outer.sendCompleted()
        #expect(!log.isTerminated, "outer completion alone does not complete")
        i1.sendCompleted()
        #expect(log.events == [.completed])

        let outer2 = Subject<Signal<Int>>()
        let i2 = Subject<Int>()
        let log2 = opRecord(outer2.switchToLatest())
        outer2.sendNext(i2)
        i2.sendCompleted()
        #expect(!log2.isTerminated, "inner completion alone does not complete")
        outer2.sendCompleted()
        #expect(log2.events == [.completed])
        #expect(opRecord(Signal<Signal<Int>>.empty().switchToLatest()).events == [.completed])
    }

    @Test func switchToLatestForwardsErrorsOfOuterAndLatestInnerOnly() {
        let outer = Subject<Signal<Int>>()
        let i1 = Subject<Int>(), i2 = Subject<Int>()
        let log = opRecord(outer.switchToLatest())
        outer.sendNext(i1)
        outer.sendNext(i2)
        i1.sendError(OpError.other)
        #expect(log.events.isEmpty)
        i2.sendError(OpError.boom)
        #expect(log.events == [.error(OpError.boom)])

        let p = OpProbe()
        let outer2 = Subject<Signal<Int>>()
        let log2 = opRecord(outer2.switchToLatest())
        outer2.sendNext(Signal<Int>.never().probed(p))
        outer2.sendError(OpError.boom)
        #expect(log2.events == [.error(OpError.boom)])
        #expect(p.live == 0)
    }

    @Test func switchToLatestDisposalDisposesOuterAndInner() {
        let po = OpProbe(), pi = OpProbe()
        let outer = Subject<Signal<Int>>()
        let log = opRecord(outer.probed(po).switchToLatest())
        outer.sendNext(Signal<Int>.never().probed(pi))
        log.dispose()
        #expect(po.live == 0 && pi.live == 0)
    }

    @Test func switchToLatestReentrantNewInnerFromTheSubscriber() {
        let outer = Subject<Signal<Int>>()
        let i1 = Subject<Int>()
        var got: [Int] = []
        outer.switchToLatest().subscribeNext { [unowned outer] v in
            got.append(v)
            if v == 1 { outer.sendNext(.fromArray([2, 3])) }
        }
        outer.sendNext(i1)
        i1.sendNext(1)
        i1.sendNext(99)
        #expect(got == [1, 2, 3])
    }

    @Test func switchToLatestCompletesWhenTheOuterCompletesReentrantlyFromAnInnerValue() {
        let outer = Subject<Signal<Int>>()
        var events: [Event<Int>] = []
        outer.switchToLatest().subscribeEvents { e in
            events.append(e)
            if case .next(1) = e { outer.sendCompleted() }
        }
        outer.sendNext(.return(1))
        #expect(events == [.next(1), .completed])
    }

    // MARK: Signal.switch, Signal.if

    @Test func switchCasesPicksTheSignalForEachKey() {
        let keys = Subject<String>()
        let a = Subject<Int>(), b = Subject<Int>()
        let log = opRecord(Signal.switch(keys, cases: ["a": a, "b": b]))
        keys.sendNext("a")
        a.sendNext(1)
        keys.sendNext("b")
        a.sendNext(2)
        b.sendNext(3)
        keys.sendCompleted()
        b.sendCompleted()
        #expect(log.events == [.next(1), .next(3), .completed])
    }

    @Test func switchCasesUsesTheDefaultOrErrorsWithNoMatchingCase() {
        let log = opRecord(Signal.switch(Signal.fromArray(["x"]), cases: ["a": .return(1)], default: .return(0)))
        #expect(log.events == [.next(0), .completed])
        let failing = opRecord(Signal.switch(Signal.fromArray(["x"]), cases: ["a": Signal.return(1)]))
        #expect(failing.events.count == 1)
        #expect(failing.events.first?.error as? SignalError == .noMatchingCase(key: "x"))
    }

    @Test func ifSwitchesBetweenTwoSignals() {
        let condition = Subject<Bool>()
        let t = Subject<String>(), f = Subject<String>()
        let log = opRecord(Signal.if(condition, then: t, else: f))
        t.sendNext("early")
        condition.sendNext(true)
        t.sendNext("t1")
        f.sendNext("f0")
        condition.sendNext(false)
        t.sendNext("t2")
        f.sendNext("f1")
        #expect(log.events == [.next("t1"), .next("f1")])
        condition.sendError(OpError.boom)
        #expect(log.events.last == .error(OpError.boom))
    }

    // MARK: bind

    @Test func bindMakesTheBlockOncePerSubscriptionWithFreshState() {
        var made = 0
        let bound = Signal.fromArray([1, 2, 3]).bind { () -> (Int, inout Bool) -> Signal<Int>? in
            made += 1
            var sum = 0
            return { v, _ in
                sum += v
                return .return(sum)
            }
        }
        #expect(opRecord(bound).events == [.next(1), .next(3), .next(6), .completed])
        #expect(opRecord(bound).values == [1, 3, 6])
        #expect(made == 2)
    }

    @Test func bindStopSubscribesToTheReturnedSignalThenDisposesTheSource() {
        let source = Subject<Int>()
        let ps = OpProbe()
        let inner = Subject<Int>()
        let log = opRecord(source.probed(ps).bind {
            { v, stop in
                if v == 2 {
                    stop = true
                    return inner
                }
                return .return(v)
            }
        })
        source.sendNext(1)
        source.sendNext(2)
        #expect(ps.live == 0, "the source subscription is disposed")
        source.sendNext(3)
        inner.sendNext(20)
        #expect(!log.isTerminated)
        inner.sendCompleted()
        #expect(log.events == [.next(1), .next(20), .completed])
    }

    @Test func bindNilEndsTheSourceButKeepsAlreadySubscribedInners() {
        let source = Subject<Int>()
        let ps = OpProbe()
        let inner = Subject<Int>()
        let log = opRecord(source.probed(ps).bind {
            { v, _ in v == 1 ? inner : nil }
        })
        source.sendNext(1)
        source.sendNext(2)
        #expect(ps.live == 0)
        inner.sendNext(10)
        inner.sendCompleted()
        #expect(log.events == [.next(10), .completed])
    }

    @Test func bindForwardsErrorsAndIgnoresValuesAfterASynchronousError() {
        var calls = 0
        let source = Signal<Int>.create { s in
            s.sendNext(1)
            s.sendNext(2)
            s.sendCompleted()
            return nil
        }
        let log = opRecord(source.bind {
            { v, _ in
                calls += 1
                return v == 1 ? Signal<Int>.error(OpError.boom) : .return(v)
            }
        })
        #expect(log.events == [.error(OpError.boom)])
        #expect(calls == 1)
        #expect(opRecord(Signal<Int>.error(OpError.other).bind { { v, _ in .return(v) } }).events == [.error(OpError.other)])
    }

    @Test func bindDisposalDisposesSourceAndInners() {
        let ps = OpProbe(), pi = OpProbe()
        let source = Subject<Int>()
        let log = opRecord(source.probed(ps).bind { { _, _ in Signal<Int>.never().probed(pi) } })
        source.sendNext(1)
        source.sendNext(2)
        log.dispose()
        #expect(ps.live == 0 && pi.live == 0 && pi.subscriptions == 2)
    }

    @Test func switchToLatestNeverForwardsAnOldInnerAfterTheSwitch() {
        // The old inner keeps sending on another thread while the outer switches.
        let outer = Subject<Signal<Int>>()
        let old = Subject<Int>(), new = Subject<Int>()
        let got = Locked<[Int]>([])
        outer.switchToLatest().subscribeNext { v in got.withLock { $0.append(v) } }
        outer.sendNext(old)
        runOnThreads(2) { t in
            if t == 0 {
                for i in 0..<5000 { old.sendNext(i) }
            } else {
                outer.sendNext(new)
                new.sendNext(-1)
            }
        }
        let values = got.value
        let switchIndex = values.firstIndex(of: -1)
        #expect(switchIndex != nil)
        if let switchIndex { #expect(values[(switchIndex + 1)...].isEmpty, "nothing from the old inner after the new one spoke") }
        #expect(values.filter { $0 >= 0 } == Array(0..<values.filter { $0 >= 0 }.count), "the old inner's values arrive in order, without gaps")
    }
}

import Testing
@testable import ReactiveUV

/// concat, then, merge, zip, combineLatest, sample, takeUntil, takeUntilReplacement
/// (catalogue §3, §4c, §19).
@Suite struct CombiningTests {
    // MARK: concat

    @Test func concatSubscribesToTheArgumentWhenTheReceiverCompletes() {
        let first = Subject<Int>()
        let probe = OpProbe()
        let log = opRecord(first.concat(Signal.fromArray([3, 4]).probed(probe)))
        first.sendNext(1)
        first.sendNext(2)
        #expect(probe.subscriptions == 0)
        first.sendCompleted()
        #expect(log.events == [.next(1), .next(2), .next(3), .next(4), .completed])
        #expect(probe.subscriptions == 1)
    }

    @Test func concatReceiverErrorNeverSubscribesTheArgument() {
        let probe = OpProbe()
        let log = opRecord(Signal<Int>.return(1).concat(.error(OpError.boom)).concat(Signal.return(9).probed(probe)))
        #expect(log.events == [.next(1), .error(OpError.boom)])
        #expect(probe.subscriptions == 0)
    }

    @Test func concatDisposesWhicheverIsActive() {
        let p1 = OpProbe(), p2 = OpProbe()
        let first = Subject<Int>()
        let log = opRecord(first.probed(p1).concat(Signal<Int>.never().probed(p2)))
        log.dispose()
        #expect(p1.live == 0 && p2.subscriptions == 0)

        let log2 = opRecord(Signal<Int>.empty().probed(p1).concat(Signal<Int>.never().probed(p2)))
        #expect(p2.live == 1)
        log2.dispose()
        #expect(p2.live == 0)
    }

    @Test func concatReentrantSendIntoTheFirstSource() {
        let first = Subject<Int>()
        var got: [Int] = []
        first.concat(.return(9)).subscribeNext { v in
            got.append(v)
            if v == 1 { first.sendNext(2) }
            if v == 2 { first.sendCompleted() }
        }
        first.sendNext(1)
        #expect(got == [1, 2, 9])
    }

    @Test func staticConcatChainsInOrderAndEmptyIsEmpty() {
        #expect(opRecord(Signal.concat([.return(1), .fromArray([2, 3]), .return(4)])).events
            == [.next(1), .next(2), .next(3), .next(4), .completed])
        #expect(opRecord(Signal<Int>.concat([])).events == [.completed])
        #expect(opRecord(Signal.concat([.return(1), .error(OpError.boom), .return(4)])).events == [.next(1), .error(OpError.boom)])
    }

    // MARK: then

    @Test func thenIgnoresValuesAndSubscribesAfterCompletion() {
        var called = 0
        let source = Subject<Int>()
        let log = opRecord(source.then { () -> Signal<String> in
            called += 1
            return .return("done")
        })
        source.sendNext(1)
        #expect(called == 0)
        source.sendCompleted()
        #expect(called == 1)
        #expect(log.events == [.next("done"), .completed])
    }

    @Test func thenReceiverErrorNeverCallsTheBlock() {
        var called = false
        let log = opRecord(Signal<Int>.error(OpError.boom).then { () -> Signal<Int> in
            called = true
            return .return(1)
        })
        #expect(log.events == [.error(OpError.boom)])
        #expect(!called)
    }

    @Test func thenDisposalDisposesWhicheverIsActive() {
        let p1 = OpProbe(), p2 = OpProbe()
        opRecord(Signal<Int>.never().probed(p1).then { Signal<Int>.never().probed(p2) }).dispose()
        #expect(p1.live == 0 && p2.subscriptions == 0)
        opRecord(Signal<Int>.empty().probed(p1).then { Signal<Int>.never().probed(p2) }).dispose()
        #expect(p2.subscriptions == 1 && p2.live == 0)
    }

    // MARK: merge

    @Test func mergeForwardsAllValuesAndCompletesAfterAll() {
        let a = Subject<Int>(), b = Subject<Int>()
        let log = opRecord(a.merge(b))
        a.sendNext(1)
        b.sendNext(2)
        a.sendCompleted()
        b.sendNext(3)
        #expect(!log.isTerminated)
        b.sendCompleted()
        #expect(log.events == [.next(1), .next(2), .next(3), .completed])
    }

    @Test func mergeFirstErrorTerminatesAndDisposesTheRest() {
        let p = OpProbe()
        let a = Subject<Int>()
        let log = opRecord(Signal.merge([a, Signal<Int>.never().probed(p)]))
        a.sendError(OpError.boom)
        #expect(log.events == [.error(OpError.boom)])
        #expect(p.live == 0 && p.subscriptions == 1)
    }

    @Test func mergeSynchronousErrorPreventsLaterSubscriptions() {
        let p = OpProbe()
        let log = opRecord(Signal.merge([.return(1), .error(OpError.boom), Signal<Int>.return(3).probed(p)]))
        #expect(log.events == [.next(1), .error(OpError.boom)])
        #expect(p.subscriptions == 0)
    }

    @Test func mergeOfNothingCompletesImmediately() {
        #expect(opRecord(Signal<Int>.merge([])).events == [.completed])
    }

    @Test func mergeDisposalDisposesEverySource() {
        let p1 = OpProbe(), p2 = OpProbe()
        opRecord(Signal.merge([Signal<Int>.never().probed(p1), Signal<Int>.never().probed(p2)])).dispose()
        #expect(p1.live == 0 && p2.live == 0 && p1.subscriptions == 1 && p2.subscriptions == 1)
    }

    @Test func mergeReentrantSendIsDeliveredNested() {
        let a = Subject<Int>(), b = Subject<Int>()
        var got: [Int] = []
        a.merge(b).subscribeNext { [unowned a, unowned b] v in
            got.append(v)
            if v == 1 { b.sendNext(2) }
            if v == 2 { a.sendNext(3) }
        }
        a.sendNext(1)
        a.sendNext(4)
        #expect(got == [1, 2, 3, 4])
    }

    // MARK: zip

    @Test func zipPairsTheNthValues() {
        let a = Subject<Int>(), b = Subject<String>()
        let log = opRecord(a.zip(with: b))
        a.sendNext(1)
        a.sendNext(2)
        b.sendNext("a")
        b.sendNext("b")
        b.sendNext("c")
        #expect(opPairs(log.events) == [.next("1a"), .next("2b")])
    }

    @Test func zipCompletesAsSoonAsOneSideIsCompleteAndDrained() {
        let a = Subject<Int>(), b = Subject<String>()
        let pb = OpProbe()
        let log = opRecord(a.zip(with: b.probed(pb)))
        a.sendNext(1)
        a.sendNext(2)
        a.sendCompleted()
        #expect(log.events.isEmpty, "a still has queued values")
        b.sendNext("x")
        #expect(!log.isTerminated)
        b.sendNext("y")
        #expect(opPairs(log.events) == [.next("1x"), .next("2y"), .completed])
        #expect(pb.live == 0, "the other side is disposed")
    }

    @Test func zipCompletesAtOnceWhenACompletedSideHasNothingQueued() {
        let a = Subject<Int>(), b = Subject<Int>()
        let log = opRecord(a.zip(with: b))
        b.sendNext(1)
        a.sendCompleted()
        #expect(log.events.count == 1 && log.isTerminated)
    }

    @Test func zipErrorIsForwardedAtOnceEvenWithQueuedValues() {
        let a = Subject<Int>(), b = Subject<Int>()
        let log = opRecord(a.zip(with: b))
        a.sendNext(1)
        a.sendNext(2)
        b.sendError(OpError.boom)
        #expect(log.events.count == 1)
        #expect(log.events.first?.error as? OpError == .boom)
    }

    @Test func zipErrorsAfterCompletionAreIgnored() {
        let a = Subject<Int>(), b = Subject<Int>()
        let log = opRecord(a.zip(with: b))
        a.sendCompleted()
        b.sendError(OpError.boom)
        #expect(log.events.count == 1)
        #expect(log.events.first?.isTerminating == true && log.events.first?.error == nil)
    }

    @Test func zipDisposalDisposesBothSides() {
        let p1 = OpProbe(), p2 = OpProbe()
        opRecord(Signal<Int>.never().probed(p1).zip(with: Signal<Int>.never().probed(p2))).dispose()
        #expect(p1.live == 0 && p2.live == 0 && p1.subscriptions == 1 && p2.subscriptions == 1)
    }

    @Test func zipReentrantSend() {
        let a = Subject<Int>(), b = Subject<Int>()
        var got: [String] = []
        a.zip(with: b).subscribeNext { [unowned a, unowned b] pair in
            got.append("\(pair.0)\(pair.1)")
            if pair.0 == 1 {
                a.sendNext(2)
                b.sendNext(20)
            }
        }
        a.sendNext(1)
        b.sendNext(10)
        #expect(got == ["110", "220"])
    }

    @Test func staticZipOfAnArray() {
        let log = opRecord(Signal.zip([Signal.fromArray([1, 2, 3]), Signal.fromArray([10, 20])]))
        #expect(log.events == [.next([1, 10]), .next([2, 20]), .completed])
        #expect(opRecord(Signal<Int>.zip([Signal<Int>]())).events == [.completed])
        #expect(opRecord(Signal.zip([Signal.fromArray([1, 2])])).events == [.next([1]), .next([2]), .completed])
        #expect(opRecord(Signal.zip([Signal.fromArray([1, 2]), Signal.fromArray([3, 4])]) { $0.reduce(0, +) }).values == [4, 6])
    }

    @Test func staticZipSubscribesTheSameSignalTwice() {
        let p = OpProbe()
        let s = Signal.fromArray([1, 2]).probed(p)
        #expect(opRecord(Signal.zip([s, s])).values == [[1, 1], [2, 2]])
        #expect(p.subscriptions == 2)
    }

    @Test func typedZipOfTwoToSixSignals() {
        let i = Signal.fromArray([1, 2]), s = Signal.fromArray(["a", "b"]), b = Signal.fromArray([true, false])
        let d = Signal.fromArray([1.5, 2.5])
        var got: [String] = []
        Signal<(Int, String)>.zip(i, s).subscribeNext { got.append("\($0)\($1)") }
        Signal<(Int, String, Bool)>.zip(i, s, b).subscribeNext { got.append("\($0)\($1)\($2)") }
        Signal<(Int, String, Bool, Double)>.zip(i, s, b, d).subscribeNext { got.append("\($0)\($1)\($2)\($3)") }
        Signal<(Int, String, Bool, Double, Int)>.zip(i, s, b, d, i).subscribeNext { got.append("\($0)\($1)\($2)\($3)\($4)") }
        Signal<(Int, String, Bool, Double, Int, String)>.zip(i, s, b, d, i, s)
            .subscribeNext { got.append("\($0)\($1)\($2)\($3)\($4)\($5)") }
        #expect(got == [
            "1a", "2b", "1atrue", "2bfalse", "1atrue1.5", "2bfalse2.5", "1atrue1.51", "2bfalse2.52",
            "1atrue1.51a", "2bfalse2.52b",
        ])
        var completed = false
        Signal<(Int, String, Bool, Double, Int, String)>.zip(i, s, b, d, i, .empty()).subscribeCompleted { completed = true }
        #expect(completed)
    }

    // MARK: combineLatest

    @Test func combineLatestSendsOnceBothHaveSentThenOnEveryValue() {
        let a = Subject<Int>(), b = Subject<String>()
        let log = opRecord(a.combineLatest(with: b))
        a.sendNext(1)
        a.sendNext(2)
        #expect(log.events.isEmpty)
        b.sendNext("x")
        a.sendNext(3)
        b.sendNext("y")
        #expect(opPairs(log.events) == [.next("2x"), .next("3x"), .next("3y")])
    }

    @Test func combineLatestCompletesOnlyWhenAllComplete() {
        let a = Subject<Int>(), b = Subject<Int>()
        let log = opRecord(a.combineLatest(with: b))
        a.sendNext(1)
        a.sendCompleted()
        #expect(!log.isTerminated)
        b.sendCompleted()
        #expect(log.events.count == 1 && log.isTerminated, "completes even though b never sent")
    }

    @Test func combineLatestForwardsErrorsAndDisposesTheOtherSide() {
        let a = Subject<Int>()
        let p = OpProbe()
        let log = opRecord(a.combineLatest(with: Signal<Int>.never().probed(p)))
        a.sendError(OpError.boom)
        #expect(log.events.count == 1 && log.events.first?.error as? OpError == .boom)
        #expect(p.live == 0)
    }

    @Test func combineLatestDisposalDisposesBothSides() {
        let p1 = OpProbe(), p2 = OpProbe()
        opRecord(Signal<Int>.never().probed(p1).combineLatest(with: Signal<Int>.never().probed(p2))).dispose()
        #expect(p1.live == 0 && p2.live == 0 && p1.subscriptions == 1 && p2.subscriptions == 1)
    }

    @Test func combineLatestSubscribesTheSameSignalTwice() {
        let p = OpProbe()
        let s = Signal.fromArray([1, 2]).probed(p)
        #expect(opPairs(opRecord(s.combineLatest(with: s)).events) == [.next("21"), .next("22"), .completed])
        #expect(p.subscriptions == 2)
    }

    @Test func combineLatestReentrantSendIsDeliveredNested() {
        let a = Subject<Int>(), b = Subject<Int>()
        var got: [String] = []
        a.combineLatest(with: b).subscribeNext { [unowned a] pair in
            got.append("\(pair.0)\(pair.1)")
            if pair.0 == 1 && pair.1 == 1 { a.sendNext(2) }
        }
        a.sendNext(1)
        b.sendNext(1)
        b.sendNext(3)
        #expect(got == ["11", "21", "23"])
    }

    @Test func staticCombineLatestOfAnArray() {
        let a = Subject<Int>(), b = Subject<Int>()
        let log = opRecord(Signal.combineLatest([a, b]))
        a.sendNext(1)
        b.sendNext(2)
        a.sendNext(3)
        a.sendCompleted()
        b.sendCompleted()
        #expect(log.events == [.next([1, 2]), .next([3, 2]), .completed])
        #expect(opRecord(Signal<Int>.combineLatest([Signal<Int>]())).events == [.completed])
        #expect(opRecord(Signal.combineLatest([Signal.fromArray([1, 2])])).events == [.next([1]), .next([2]), .completed])
        #expect(opRecord(Signal.combineLatest([Signal.return(1), Signal.return(2)]) { $0.reduce(0, +) }).events
            == [.next(3), .completed])
    }

    @Test func typedCombineLatestOfTwoToSixSignals() {
        let i = Signal.return(1), s = Signal.return("a"), b = Signal.return(true), d = Signal.return(1.5)
        var got: [String] = []
        Signal<(Int, String)>.combineLatest(i, s).subscribeNext { got.append("\($0)\($1)") }
        Signal<(Int, String, Bool)>.combineLatest(i, s, b).subscribeNext { got.append("\($0)\($1)\($2)") }
        Signal<(Int, String, Bool, Double)>.combineLatest(i, s, b, d).subscribeNext { got.append("\($0)\($1)\($2)\($3)") }
        Signal<(Int, String, Bool, Double, Int)>.combineLatest(i, s, b, d, i)
            .subscribeNext { got.append("\($0)\($1)\($2)\($3)\($4)") }
        Signal<(Int, String, Bool, Double, Int, String)>.combineLatest(i, s, b, d, i, s)
            .subscribeNext { got.append("\($0)\($1)\($2)\($3)\($4)\($5)") }
        #expect(got == ["1a", "1atrue", "1atrue1.5", "1atrue1.51", "1atrue1.51a"])
    }

    // MARK: sample

    @Test func sampleSendsTheLatestValueOnEachSamplerValue() {
        let source = Subject<Int>(), sampler = Subject<Void>()
        let log = opRecord(source.sample(sampler))
        sampler.sendNext(())
        #expect(log.events.isEmpty, "nothing until the receiver has sent")
        source.sendNext(1)
        source.sendNext(2)
        sampler.sendNext(())
        sampler.sendNext(())
        #expect(log.events == [.next(2), .next(2)], "repeats when the receiver is silent")
    }

    @Test func sampleCompletesWhenEitherSideCompletesAndDisposesTheOther() {
        let source = Subject<Int>(), sampler = Subject<Void>()
        let ps = OpProbe(), pt = OpProbe()
        let log = opRecord(source.probed(ps).sample(sampler.probed(pt)))
        sampler.sendCompleted()
        #expect(log.events == [.completed])
        #expect(ps.live == 0 && pt.live == 0)

        let log2 = opRecord(Subject<Int>().sample(Signal<Void>.never().probed(pt)))
        #expect(pt.live == 1)
        let source2 = Subject<Int>()
        let log3 = opRecord(source2.sample(Signal<Void>.never().probed(pt)))
        source2.sendCompleted()
        #expect(log3.events == [.completed])
        log2.dispose()
        #expect(pt.live == 0)
    }

    @Test func sampleForwardsErrorsFromEitherSide() {
        let source = Subject<Int>(), sampler = Subject<Void>()
        let log = opRecord(source.sample(sampler))
        sampler.sendError(OpError.boom)
        #expect(log.events == [.error(OpError.boom)])
        let log2 = opRecord(Signal<Int>.error(OpError.other).sample(Signal<Void>.never()))
        #expect(log2.events == [.error(OpError.other)])
    }

    // MARK: takeUntil

    @Test func takeUntilForwardsUntilTheTriggerSends() {
        let source = Subject<Int>(), trigger = Subject<Void>()
        let ps = OpProbe(), pt = OpProbe()
        let log = opRecord(source.probed(ps).takeUntil(trigger.probed(pt)))
        source.sendNext(1)
        trigger.sendNext(())
        source.sendNext(2)
        #expect(log.events == [.next(1), .completed])
        #expect(ps.live == 0 && pt.live == 0)
    }

    @Test func takeUntilTriggerCompletionAlsoCompletes() {
        let trigger = Subject<Void>()
        let log = opRecord(Subject<Int>().takeUntil(trigger))
        trigger.sendCompleted()
        #expect(log.events == [.completed])
    }

    @Test func takeUntilSubscribesToTheTriggerFirst() {
        var order: [String] = []
        let source = Signal<Int>.create { _ in order.append("source"); return nil }
        let trigger = Signal<Void>.create { _ in order.append("trigger"); return nil }
        opRecord(source.takeUntil(trigger))
        #expect(order == ["trigger", "source"])
    }

    @Test func takeUntilSynchronousTriggerSquelchesEvenSynchronousValues() {
        let p = OpProbe()
        let log = opRecord(Signal.fromArray([1, 2]).probed(p).takeUntil(Signal<Void>.return(())))
        #expect(log.events == [.completed])
        #expect(p.subscriptions == 0, "the receiver is never subscribed")
    }

    @Test func takeUntilIgnoresTriggerErrors() {
        let source = Subject<Int>(), trigger = Subject<Void>()
        let log = opRecord(source.takeUntil(trigger))
        trigger.sendError(OpError.boom)
        source.sendNext(1)
        source.sendCompleted()
        #expect(log.events == [.next(1), .completed])
    }

    @Test func takeUntilASynchronousTriggerErrorIsIgnored() {
        let log = opRecord(Signal.fromArray([1, 2]).takeUntil(Signal<Void>.error(OpError.boom)))
        #expect(log.events == [.next(1), .next(2), .completed])
    }

    @Test func takeUntilForwardsReceiverErrorsAndDisposesTheTrigger() {
        let pt = OpProbe()
        let source = Subject<Int>()
        let log = opRecord(source.takeUntil(Signal<Void>.never().probed(pt)))
        source.sendError(OpError.boom)
        #expect(log.events == [.error(OpError.boom)])
        #expect(pt.live == 0)
        let log2 = opRecord(Subject<Int>().takeUntil(Signal<Void>.never().probed(pt)))
        log2.dispose()
        #expect(pt.live == 0 && pt.subscriptions == 2)
    }

    @Test func takeUntilReentrantTriggerFromTheSubscriber() {
        let source = Subject<Int>(), trigger = Subject<Void>()
        var events: [Event<Int>] = []
        source.takeUntil(trigger).subscribeEvents { e in
            events.append(e)
            if case .next(1) = e { trigger.sendNext(()) }
        }
        source.sendNext(1)
        source.sendNext(2)
        #expect(events == [.next(1), .completed])
    }

    // MARK: takeUntilReplacement

    @Test func takeUntilReplacementSwitchesToTheReplacement() {
        let source = Subject<Int>(), replacement = Subject<Int>()
        let ps = OpProbe()
        let log = opRecord(source.probed(ps).takeUntilReplacement(replacement))
        source.sendNext(1)
        replacement.sendNext(10)
        #expect(ps.live == 0, "the receiver is disposed at the replacement's first event")
        source.sendNext(2)
        replacement.sendNext(11)
        replacement.sendCompleted()
        #expect(log.events == [.next(1), .next(10), .next(11), .completed])
    }

    @Test func takeUntilReplacementDropsTheReceiversCompletionButForwardsItsError() {
        let source = Subject<Int>(), replacement = Subject<Int>()
        let log = opRecord(source.takeUntilReplacement(replacement))
        source.sendNext(1)
        source.sendCompleted()
        #expect(log.events == [.next(1)])
        replacement.sendNext(2)
        replacement.sendCompleted()
        #expect(log.events == [.next(1), .next(2), .completed])

        let log2 = opRecord(Signal<Int>.error(OpError.boom).takeUntilReplacement(.never()))
        #expect(log2.events == [.error(OpError.boom)])
    }

    @Test func takeUntilReplacementSubscribesToTheReplacementFirst() {
        let p = OpProbe()
        let log = opRecord(Signal.fromArray([1]).probed(p).takeUntilReplacement(.return(5)))
        #expect(log.events == [.next(5), .completed])
        #expect(p.subscriptions == 0)
    }

    @Test func takeUntilReplacementReplacementErrorIsForwarded() {
        let replacement = Subject<Int>()
        let ps = OpProbe()
        let log = opRecord(Signal<Int>.never().probed(ps).takeUntilReplacement(replacement))
        replacement.sendError(OpError.other)
        #expect(log.events == [.error(OpError.other)])
        #expect(ps.live == 0)
    }

    @Test func takeUntilReplacementDisposalDisposesBoth() {
        let p1 = OpProbe(), p2 = OpProbe()
        opRecord(Signal<Int>.never().probed(p1).takeUntilReplacement(Signal<Int>.never().probed(p2))).dispose()
        #expect(p1.live == 0 && p2.live == 0 && p1.subscriptions == 1 && p2.subscriptions == 1)
    }

    // MARK: sources on several threads

    @Test func mergeOfTwoThreadsDeliversEveryValueWithoutOverlap() {
        let a = Subject<Int>(), b = Subject<Int>()
        let inside = Locked(0), overlaps = Locked(0)
        let got = Locked<[Int]>([])
        a.merge(b).subscribeNext { v in
            if inside.withLock({ n -> Int in n += 1; return n }) > 1 { overlaps.withLock { $0 += 1 } }
            got.withLock { $0.append(v) }
            inside.withLock { $0 -= 1 }
        }
        runOnThreads(2) { t in
            let subject = t == 0 ? a : b
            for i in 0..<2000 { subject.sendNext(t * 10_000 + i) }
        }
        #expect(overlaps.value == 0)
        let values = got.value
        #expect(values.count == 4000)
        #expect(values.filter { $0 < 10_000 } == Array(0..<2000), "each source's order is kept")
        #expect(values.filter { $0 >= 10_000 } == Array(10_000..<12_000))
    }

    @Test func zipOfTwoThreadsPairsEveryIndex() {
        let a = Subject<Int>(), b = Subject<Int>()
        let got = Locked<[String]>([])
        a.zip(with: b).subscribeNext { x, y in got.withLock { $0.append("\(x):\(y)") } }
        runOnThreads(2) { t in
            for i in 0..<2000 { (t == 0 ? a : b).sendNext(i) }
        }
        #expect(got.value == (0..<2000).map { "\($0):\($0)" })
    }

    @Test func combineLatestOfTwoThreadsEndsWithBothLastValues() {
        let a = Subject<Int>(), b = Subject<Int>()
        let got = Locked<[String]>([])
        let done = Locked(false)
        a.combineLatest(with: b).subscribe(next: { x, y in got.withLock { $0.append("\(x):\(y)") } },
                                           completed: { done.withLock { $0 = true } })
        runOnThreads(2) { t in
            let s = t == 0 ? a : b
            for i in 0..<1000 { s.sendNext(i) }
            s.sendCompleted()
        }
        #expect(done.value)
        #expect(got.value.last == "999:999")
    }
}

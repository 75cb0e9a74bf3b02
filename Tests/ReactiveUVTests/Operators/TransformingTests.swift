import Testing
@testable import ReactiveUV

/// RACStream's transforming operations and the side-effect operators (catalogue §3, §4a).
@Suite struct TransformingTests {
    // MARK: map, mapReplace, filter, compactMap, ignore

    @Test func mapTransformsValuesAndForwardsCompletion() {
        let log = opRecord(Signal.fromArray([1, 2, 3]).map { $0 * 10 })
        #expect(log.events == [.next(10), .next(20), .next(30), .completed])
    }

    @Test func mapForwardsErrorsAndStopsThere() {
        let source = Subject<Int>()
        let log = opRecord(source.map { $0 + 1 })
        source.sendNext(1)
        source.sendError(OpError.boom)
        source.sendNext(2)
        #expect(log.events == [.next(2), .error(OpError.boom)])
    }

    @Test func mapDisposalDisposesUpstream() {
        let probe = OpProbe()
        let source = Subject<Int>()
        let log = opRecord(source.probed(probe).map { $0 })
        #expect(probe.live == 1)
        log.dispose()
        #expect(probe.live == 0)
        #expect(source.roster.entries.isEmpty)
        source.sendNext(1)
        #expect(log.events.isEmpty)
    }

    @Test func mapReentrantSendIsDeliveredNested() {
        let source = Subject<Int>()
        var got: [Int] = []
        source.map { $0 * 10 }.subscribeNext { [unowned source] v in
            got.append(v)
            if v == 10 { source.sendNext(2) }
            if v == 20 { got.append(-1) }
        }
        source.sendNext(1)
        source.sendNext(3)
        #expect(got == [10, 20, -1, 30])
    }

    @Test func mapReplaceReplacesEveryValue() {
        let log = opRecord(Signal.fromArray([1, 2]).mapReplace("x"))
        #expect(log.events == [.next("x"), .next("x"), .completed])
        #expect(opRecord(Signal<Int>.error(OpError.boom).mapReplace(0)).events == [.error(OpError.boom)])
    }

    @Test func filterKeepsPassingValues() {
        let log = opRecord(Signal.fromArray([1, 2, 3, 4]).filter { $0 % 2 == 0 })
        #expect(log.events == [.next(2), .next(4), .completed])
        #expect(opRecord(Signal<Int>.error(OpError.boom).filter { _ in false }).events == [.error(OpError.boom)])
    }

    @Test func filterDisposalDisposesUpstream() {
        let probe = OpProbe()
        let log = opRecord(Signal<Int>.never().probed(probe).filter { _ in true })
        log.dispose()
        #expect(probe.subscriptions == 1 && probe.disposals == 1)
    }

    @Test func compactMapDropsNils() {
        let log = opRecord(Signal.fromArray(["1", "x", "3"]).compactMap { Int($0) })
        #expect(log.events == [.next(1), .next(3), .completed])
        #expect(opRecord(Signal<String>.error(OpError.boom).compactMap { Int($0) }).events == [.error(OpError.boom)])
    }

    @Test func ignoreDropsEqualValuesIncludingNil() {
        #expect(opRecord(Signal.fromArray([1, 2, 1, 3]).ignore(1)).events == [.next(2), .next(3), .completed])
        let optionals: [Int?] = [nil, 1, nil]
        #expect(opRecord(Signal.fromArray(optionals).ignore(nil)).events == [.next(1), .completed])
    }

    // MARK: scan, combinePrevious

    @Test func scanSendsEveryRunningAccumulationButNotTheStart() {
        let log = opRecord(Signal.fromArray([1, 2, 3]).scan(start: 10, reduce: +))
        #expect(log.events == [.next(11), .next(13), .next(16), .completed])
    }

    @Test func scanStateIsPerSubscription() {
        let scanned = Signal.fromArray([1, 2]).scan(start: 0, reduce: +)
        #expect(opRecord(scanned).values == [1, 3])
        #expect(opRecord(scanned).values == [1, 3])
    }

    @Test func scanWithIndexPassesZeroBasedIndex() {
        let log = opRecord(Signal.fromArray(["a", "b", "c"]).scan(start: "") { acc, v, i in acc + v + String(i) })
        #expect(log.events == [.next("a0"), .next("a0b1"), .next("a0b1c2"), .completed])
    }

    @Test func scanForwardsErrorAndDisposesUpstream() {
        let probe = OpProbe()
        let source = Subject<Int>()
        let log = opRecord(source.probed(probe).scan(start: 0, reduce: +))
        source.sendNext(1)
        source.sendError(OpError.boom)
        #expect(log.events == [.next(1), .error(OpError.boom)])
        #expect(probe.live == 0)
        let log2 = opRecord(source.probed(probe).scan(start: 0, reduceWithIndex: { a, v, _ in a + v }))
        #expect(log2.events == [.error(OpError.boom)], "a terminated subject replays its error")
    }

    @Test func scanReentrantSendAccumulatesInDeliveryOrder() {
        let source = Subject<Int>()
        var got: [Int] = []
        source.scan(start: 0, reduce: +).subscribeNext { [unowned source] v in
            got.append(v)
            if v == 1 { source.sendNext(10) }
        }
        source.sendNext(1)
        source.sendNext(100)
        #expect(got == [1, 11, 111])
    }

    @Test func combinePreviousUsesStartThenPreviousValue() {
        let log = opRecord(Signal.fromArray([1, 2, 4]).combinePrevious(start: 0) { p, c in "\(p)>\(c)" })
        #expect(log.events == [.next("0>1"), .next("1>2"), .next("2>4"), .completed])
        #expect(opRecord(Signal<Int>.error(OpError.boom).combinePrevious(start: 0, reduce: +)).events == [.error(OpError.boom)])
    }

    @Test func combinePreviousResultsAreNotFedBack() {
        let log = opRecord(Signal.fromArray([1, 2, 3]).combinePrevious(start: 0, reduce: +))
        #expect(log.values == [1, 3, 5])
    }

    @Test func combinePreviousReentrantSendSeesUpdatedPrevious() {
        let source = Subject<Int>()
        var got: [String] = []
        source.combinePrevious(start: 0) { "\($0)>\($1)" }.subscribeNext { [unowned source] v in
            got.append(v)
            if v == "0>1" { source.sendNext(2) }
        }
        source.sendNext(1)
        source.sendNext(3)
        #expect(got == ["0>1", "1>2", "2>3"])
    }

    // MARK: startWith

    @Test func startWithSendsTheValueBeforeSubscribingToTheReceiver() {
        var order: [String] = []
        let source = Signal<Int>.create { s in
            order.append("subscribed")
            s.sendNext(2)
            s.sendCompleted()
            return nil
        }
        source.startWith(1).subscribeEvents { order.append("\($0)") }
        #expect(order == ["next(1)", "subscribed", "next(2)", "completed"])
    }

    @Test func startWithForwardsErrorAndDisposalDisposesUpstream() {
        #expect(opRecord(Signal<Int>.error(OpError.boom).startWith(0)).events == [.next(0), .error(OpError.boom)])
        let probe = OpProbe()
        let log = opRecord(Signal<Int>.never().probed(probe).startWith(0))
        #expect(log.events == [.next(0)])
        log.dispose()
        #expect(probe.subscriptions == 1 && probe.disposals == 1)
    }

    // MARK: ignoreValues, materialize, dematerialize

    @Test func ignoreValuesForwardsOnlyTerminalEvents() {
        #expect(opRecord(Signal.fromArray([1, 2]).ignoreValues()).events == [.completed])
        let source = Subject<Int>()
        let log = opRecord(source.ignoreValues())
        source.sendNext(1)
        source.sendError(OpError.boom)
        #expect(log.events == [.error(OpError.boom)])
    }

    @Test func ignoreValuesDisposalDisposesUpstream() {
        let probe = OpProbe()
        opRecord(Signal<Int>.never().probed(probe).ignoreValues()).dispose()
        #expect(probe.live == 0 && probe.subscriptions == 1)
    }

    @Test func materializeTurnsEveryEventIntoAValueThenCompletes() {
        let log = opRecord(Signal.fromArray([1, 2]).materialize())
        #expect(log.events == [.next(.next(1)), .next(.next(2)), .next(.completed), .completed])
        let failing = opRecord(Signal<Int>.return(1).concat(.error(OpError.boom)).materialize())
        #expect(failing.events == [.next(.next(1)), .next(.error(OpError.boom)), .completed])
    }

    @Test func dematerializeIsTheInverse() {
        let events: [Event<Int>] = [.next(1), .error(OpError.boom), .next(2)]
        #expect(opRecord(Signal.fromArray(events).dematerialize()).events == [.next(1), .error(OpError.boom)])
        let completing: [Event<Int>] = [.next(1), .completed, .next(3)]
        #expect(opRecord(Signal.fromArray(completing).dematerialize()).events == [.next(1), .completed])
        #expect(opRecord(Signal<Int>.fromArray([1, 2]).materialize().dematerialize()).events == [.next(1), .next(2), .completed])
    }

    @Test func dematerializeDisposesTheSourceAfterATerminalValue() {
        let probe = OpProbe()
        let source = Subject<Event<Int>>()
        let log = opRecord(source.probed(probe).dematerialize())
        source.sendNext(.next(1))
        source.sendNext(.completed)
        #expect(log.events == [.next(1), .completed])
        #expect(probe.live == 0)
        #expect(source.roster.entries.isEmpty)
    }

    @Test func dematerializeForwardsTheSourceErrorAndDisposalDisposesUpstream() {
        #expect(opRecord(Signal<Event<Int>>.error(OpError.boom).dematerialize()).events == [.error(OpError.boom)])
        let probe = OpProbe()
        let log: OpLog<Int> = opRecord(Signal<Event<Int>>.never().probed(probe).dematerialize())
        log.dispose()
        #expect(probe.live == 0)
    }

    // MARK: side effects

    @Test func doNextRunsBeforeForwarding() {
        var order: [String] = []
        Signal.fromArray([1, 2]).doNext { order.append("do \($0)") }.subscribeNext { order.append("got \($0)") }
        #expect(order == ["do 1", "got 1", "do 2", "got 2"])
    }

    @Test func doErrorAndDoCompletedRunBeforeForwarding() {
        var order: [String] = []
        Signal<Int>.error(OpError.boom).doError { order.append("do \($0)") }
            .subscribeError { order.append("got \($0)") }
        Signal<Int>.empty().doCompleted { order.append("do completed") }
            .subscribeCompleted { order.append("got completed") }
        #expect(order == ["do boom", "got boom", "do completed", "got completed"])
    }

    @Test func sideEffectsRunOncePerSubscription() {
        var runs = 0
        let s = Signal.fromArray([1, 2]).doNext { _ in runs += 1 }.doCompleted { runs += 10 }
        s.subscribeNext { _ in }
        s.subscribeNext { _ in }
        #expect(runs == 24)
    }

    @Test func sideEffectOperatorsDisposeUpstream() {
        let probe = OpProbe()
        let chain = Signal<Int>.never().probed(probe).doNext { _ in }.doError { _ in }.doCompleted {}.finally {}
        opRecord(chain).dispose()
        #expect(probe.subscriptions == 1 && probe.disposals == 1)
    }

    @Test func initiallyRunsAtEachSubscriptionBeforeTheReceiversSideEffects() {
        var order: [String] = []
        let source = Signal<Int>.create { s in
            order.append("subscribed")
            s.sendCompleted()
            return nil
        }
        let s = source.initially { order.append("initially") }
        #expect(order.isEmpty, "never runs without a subscription")
        s.subscribeCompleted {}
        s.subscribeCompleted {}
        #expect(order == ["initially", "subscribed", "initially", "subscribed"])
    }

    @Test func finallyRunsOnCompletionAndErrorBeforeForwarding() {
        var order: [String] = []
        Signal<Int>.empty().finally { order.append("finally") }.subscribeCompleted { order.append("completed") }
        Signal<Int>.error(OpError.boom).finally { order.append("finally") }.subscribeError { _ in order.append("error") }
        #expect(order == ["finally", "completed", "finally", "error"])
    }

    @Test func finallyDoesNotRunOnDisposal() {
        var ran = false
        let probe = OpProbe()
        let log = opRecord(Signal<Int>.never().probed(probe).finally { ran = true })
        log.dispose()
        #expect(!ran)
        #expect(probe.disposals == 1)
    }

    @Test func onDisposedRunsOnDisposalAndOnTermination() {
        var disposed = 0
        let log = opRecord(Signal<Int>.never().on(disposed: { disposed += 1 }))
        #expect(disposed == 0)
        log.dispose()
        log.dispose()
        #expect(disposed == 1)
        Signal<Int>.return(1).on(disposed: { disposed += 1 }).subscribeNext { _ in }
        #expect(disposed == 2)
    }

    @Test func onSubscribedRunsBeforeTheReceiversSubscription() {
        var order: [String] = []
        let source = Signal<Int>.create { s in
            order.append("source")
            return nil
        }
        source.on(subscribed: { order.append("subscribed") }).subscribeNext { _ in }
        #expect(order == ["subscribed", "source"])
    }

    @Test func onTerminatedRunsForBothTerminalEvents() {
        var terminated = 0
        Signal<Int>.empty().on(terminated: { terminated += 1 }).subscribeCompleted {}
        Signal<Int>.error(OpError.boom).on(terminated: { terminated += 1 }).subscribeError { _ in }
        #expect(terminated == 2)
    }

    @Test func nothingIsDeliveredAfterTheChainTerminates() {
        let log = opRecord(Signal<Int>.create { s in
            s.sendNext(1)
            s.sendCompleted()
            s.sendNext(2)
            s.sendError(OpError.boom)
            return nil
        }.map { $0 }.filter { _ in true }.doNext { _ in })
        #expect(log.events == [.next(1), .completed])
    }
}

import Testing
@testable import ReactiveUV

/// aggregate, collect, collect(count:), defaultIfEmpty, any, all (catalogue §4f, §19).
@Suite struct AggregatingTests {
    @Test func aggregateSendsTheFinalAccumulationOnCompletion() {
        let source = Subject<Int>()
        let log = opRecord(source.aggregate(start: 0, reduce: +))
        source.sendNext(1)
        source.sendNext(2)
        #expect(log.events.isEmpty)
        source.sendCompleted()
        #expect(log.events == [.next(3), .completed])
        #expect(opRecord(Signal<Int>.empty().aggregate(start: 7, reduce: +)).events == [.next(7), .completed])
    }

    @Test func aggregateWithIndex() {
        let log = opRecord(Signal.fromArray(["a", "b"]).aggregate(start: "") { acc, v, i in acc + v + String(i) })
        #expect(log.events == [.next("a0b1"), .completed])
        #expect(opRecord(Signal<String>.empty().aggregate(start: "s") { a, _, _ in a }).events == [.next("s"), .completed])
        #expect(opRecord(Signal<String>.error(OpError.boom).aggregate(start: "s") { a, _, _ in a }).events == [.error(OpError.boom)])
    }

    @Test func aggregateWithStartFactoryGetsAFreshStartPerSubscription() {
        final class Box { var items: [Int] = [] }
        var made = 0
        let s = Signal.fromArray([1, 2]).aggregate(startFactory: { () -> Box in
            made += 1
            return Box()
        }, reduce: { box, v in
            box.items.append(v)
            return box
        }).map { $0.items }
        #expect(opRecord(s).values == [[1, 2]])
        #expect(opRecord(s).values == [[1, 2]])
        #expect(made == 2)
    }

    @Test func aggregateForwardsErrorsAndSendsNothing() {
        #expect(opRecord(Signal.fromArray([1, 2]).concat(.error(OpError.boom)).aggregate(start: 0, reduce: +)).events
            == [.error(OpError.boom)])
    }

    @Test func aggregateDisposalDisposesUpstream() {
        let p = OpProbe()
        opRecord(Signal<Int>.never().probed(p).aggregate(start: 0, reduce: +)).dispose()
        #expect(p.subscriptions == 1 && p.live == 0)
    }

    @Test func collectSendsOneArrayOnCompletion() {
        #expect(opRecord(Signal.fromArray([1, 2, 3]).collect()).events == [.next([1, 2, 3]), .completed])
        #expect(opRecord(Signal<Int>.empty().collect()).events == [.next([]), .completed])
        #expect(opRecord(Signal<Int>.return(1).concat(.error(OpError.boom)).collect()).events == [.error(OpError.boom)])
        let p = OpProbe()
        opRecord(Signal<Int>.never().probed(p).collect()).dispose()
        #expect(p.live == 0)
    }

    @Test func collectCountSendsFullArraysThenTheRest() {
        let source = Subject<Int>()
        let log = opRecord(source.collect(count: 2))
        for i in 1...5 { source.sendNext(i) }
        #expect(log.events == [.next([1, 2]), .next([3, 4])])
        source.sendCompleted()
        #expect(log.events == [.next([1, 2]), .next([3, 4]), .next([5]), .completed])
        #expect(opRecord(Signal.fromArray([1, 2]).collect(count: 2)).events == [.next([1, 2]), .completed])
        #expect(opRecord(Signal<Int>.empty().collect(count: 2)).events == [.completed])
    }

    @Test func collectCountErrorsAndInvalidCount() {
        #expect(opRecord(Signal.fromArray([1]).concat(.error(OpError.boom)).collect(count: 2)).events == [.error(OpError.boom)])
        #expect(opRecord(Signal.fromArray([1]).collect(count: 0)).events.first?.error is SignalError)
        let p = OpProbe()
        opRecord(Signal<Int>.never().probed(p).collect(count: 3)).dispose()
        #expect(p.subscriptions == 1 && p.live == 0)
    }

    @Test func defaultIfEmptySendsTheDefaultOnlyForAnEmptySource() {
        #expect(opRecord(Signal<Int>.empty().defaultIfEmpty(5)).events == [.next(5), .completed])
        #expect(opRecord(Signal.fromArray([1]).defaultIfEmpty(5)).events == [.next(1), .completed])
        #expect(opRecord(Signal<Int>.error(OpError.boom).defaultIfEmpty(5)).events == [.error(OpError.boom)])
        let p = OpProbe()
        opRecord(Signal<Int>.never().probed(p).defaultIfEmpty(5)).dispose()
        #expect(p.live == 0)
    }

    @Test func anySendsTrueAtTheFirstValueAndDisposesTheSource() {
        let p = OpProbe()
        let source = Subject<Int>()
        let log = opRecord(source.probed(p).any())
        source.sendNext(1)
        #expect(log.events == [.next(true), .completed])
        #expect(p.live == 0)
        #expect(opRecord(Signal<Int>.empty().any()).events == [.next(false), .completed])
    }

    @Test func anyWithPredicate() {
        #expect(opRecord(Signal.fromArray([1, 2, 3]).any { $0 > 1 }).events == [.next(true), .completed])
        #expect(opRecord(Signal.fromArray([1, 2, 3]).any { $0 > 5 }).events == [.next(false), .completed])
    }

    @Test func anyTurnsAnErrorIntoFalse() {
        #expect(opRecord(Signal<Int>.error(OpError.boom).any()).events == [.next(false), .completed])
        #expect(opRecord(Signal.fromArray([1]).concat(.error(OpError.boom)).any { $0 > 1 }).events == [.next(false), .completed])
    }

    @Test func allSendsFalseAtTheFirstFailingValueAndTrueOnCompletion() {
        let p = OpProbe()
        let source = Subject<Int>()
        let log = opRecord(source.probed(p).all { $0 < 3 })
        source.sendNext(1)
        #expect(log.events.isEmpty)
        source.sendNext(5)
        #expect(log.events == [.next(false), .completed])
        #expect(p.live == 0)
        #expect(opRecord(Signal.fromArray([1, 2]).all { $0 < 3 }).events == [.next(true), .completed])
        #expect(opRecord(Signal<Int>.empty().all { _ in false }).events == [.next(true), .completed])
    }

    @Test func allTurnsAnErrorIntoFalse() {
        #expect(opRecord(Signal<Int>.error(OpError.boom).all { _ in true }).events == [.next(false), .completed])
    }

    @Test func anyAndAllDisposalDisposesUpstream() {
        let p = OpProbe()
        opRecord(Signal<Int>.never().probed(p).any()).dispose()
        opRecord(Signal<Int>.never().probed(p).all { _ in true }).dispose()
        #expect(p.subscriptions == 2 && p.live == 0)
    }

    @Test func anyUnderAReentrantSend() {
        let source = Subject<Int>()
        var events: [Event<Bool>] = []
        source.any { $0 == 2 }.subscribeEvents { e in events.append(e) }
        source.subscribeNext { [unowned source] v in if v == 1 { source.sendNext(2) } }
        source.sendNext(1)
        source.sendNext(2)
        #expect(events == [.next(true), .completed])
    }
}

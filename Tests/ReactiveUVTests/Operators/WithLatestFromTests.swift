import Testing
@testable import ReactiveUV
import ReactiveUVTestKit

/// withLatestFrom (beyond RAC 2, catalogue §20 ★): pairs, errors, disposal, re-entrancy.
@Suite struct WithLatestFromTests {
    @Test func withLatestFromPairsEachValueWithTheOthersLatest() {
        let source = Subject<Int>(), other = Subject<String>()
        let log = opRecord(source.withLatestFrom(other))
        source.sendNext(0)
        other.sendNext("a")
        other.sendNext("b")
        source.sendNext(1)
        source.sendNext(2)
        other.sendCompleted()
        source.sendNext(3)
        source.sendCompleted()
        #expect(opPairs(log.events) == [.next("1b"), .next("2b"), .next("3b"), .completed])
    }

    @Test func withLatestFromForwardsErrorsFromEitherSide() {
        let source = Subject<Int>(), other = Subject<String>()
        let log = opRecord(source.withLatestFrom(other))
        other.sendError(OpError.boom)
        source.sendNext(1)
        #expect(opPairs(log.events) == [.error(OpError.boom)])
        let log2 = opRecord(Signal<Int>.error(OpError.other).withLatestFrom(Signal<Int>.never()))
        #expect(opPairs(log2.events) == [.error(OpError.other)])
    }

    @Test func withLatestFromOtherErrorDisposesTheSource() {
        let ps = OpProbe(), po = OpProbe()
        let other = Subject<String>()
        let log = opRecord(Signal<Int>.never().probed(ps).withLatestFrom(other.probed(po)))
        other.sendError(OpError.boom)
        #expect(log.isTerminated)
        #expect(ps.live == 0 && po.live == 0)
    }

    @Test func withLatestFromDisposalDisposesBothSides() {
        let ps = OpProbe(), po = OpProbe()
        let source = Subject<Int>()
        let log = opRecord(source.probed(ps).withLatestFrom(Signal<Int>.never().probed(po)))
        log.dispose()
        #expect(ps.live == 0 && po.live == 0 && ps.subscriptions == 1 && po.subscriptions == 1)
        let log2 = opRecord(Signal<Int>.empty().probed(ps).withLatestFrom(Signal<Int>.never().probed(po)))
        #expect(opPairs(log2.events) == [.completed])
        #expect(po.live == 0, "the source's completion disposes the other side")
    }

    @Test func withLatestFromReentrantSendIntoOther() {
        let source = Subject<Int>(), other = Subject<Int>()
        var got: [String] = []
        other.sendNext(0)
        source.withLatestFrom(other).subscribeNext { [unowned other] v, u in
            got.append("\(v)\(u)")
            if v == 1 { other.sendNext(5) }
        }
        other.sendNext(1)
        source.sendNext(1)
        source.sendNext(2)
        #expect(got == ["11", "25"])
    }
}

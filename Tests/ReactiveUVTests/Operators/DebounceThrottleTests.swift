import Testing
@testable import ReactiveUV
import ReactiveUVTestKit

/// debounce against throttle (beyond RAC 2, catalogue §20 ★) on a TestScheduler.
@Suite struct DebounceThrottleTests {
    @Test func debounceAndThrottleDifferOnlyAtCompletion() {
        let s = TestScheduler()
        let source = s.createColdSignal("-a-b------c|")
        #expect(expect(source.debounce(2, on: s), on: s) == "-----b-----|")
        #expect(expect(source.throttle(2, on: s), on: s) == "-----b-----(c|)")
    }

    @Test func debounceDisposalCancelsThePendingSendAndDisposesUpstream() {
        let s = TestScheduler()
        let p = OpProbe()
        let source = Subject<Int>()
        let log = opRecord(source.probed(p).debounce(1, on: s))
        source.sendNext(1)
        log.dispose()
        #expect(p.live == 0)
        s.run()
        #expect(log.events.isEmpty)
    }

    @Test func debounceForwardsErrorsAtOnceDroppingTheHeldValue() {
        let s = TestScheduler()
        let source = Subject<Int>()
        let log = opRecord(source.debounce(1, on: s))
        source.sendNext(1)
        source.sendError(OpError.boom)
        #expect(log.events == [.error(OpError.boom)])
        s.run()
        #expect(log.events == [.error(OpError.boom)])
    }
}

import Testing
@testable import ReactiveUV
import ReactiveUVTestKit

/// retry(when:) (beyond RAC 2, catalogue §20 ★): resubscription driven by a handler signal.
@Suite struct RetryWhenTests {
    @Test func retryWhenResubscribesOnEachValueOfTheHandlersSignal() {
        let p = OpProbe()
        let source: Signal<Int> = opCold(p) { s in
            s.sendNext(p.subscriptions)
            if p.subscriptions < 3 { s.sendError(OpError.boom) } else { s.sendCompleted() }
        }
        var handled: [String] = []
        let log = opRecord(source.retry(when: { errors in errors.map { handled.append("\($0)") } }))
        #expect(log.events == [.next(1), .next(2), .next(3), .completed])
        #expect(handled == ["boom", "boom"])
    }

    @Test func retryWhenEndsWithTheErrorWhenTheHandlerCompletes() {
        let p = OpProbe()
        let source: Signal<Int> = opCold(p) { s in s.sendError(OpError.boom) }
        let log = opRecord(source.retry(when: { $0.take(2) }))
        #expect(log.events == [.error(OpError.boom)])
        #expect(p.subscriptions == 3 && p.live == 0)
    }

    @Test func retryWhenEndsWithTheHandlersError() {
        let source: Signal<Int> = opCold(OpProbe()) { s in s.sendError(OpError.boom) }
        let log = opRecord(source.retry(when: { errors in errors.tryMap { _ -> Void in throw OpError.other } }))
        #expect(log.events == [.error(OpError.other)])
    }

    @Test func retryWhenWithADelayOnATestScheduler() {
        let s = TestScheduler()
        let p = OpProbe()
        let source: Signal<Int> = opCold(p) { sub in
            sub.sendNext(p.subscriptions)
            if p.subscriptions < 3 { sub.sendError(OpError.boom) } else { sub.sendCompleted() }
        }
        let recorder = s.record(source.retry(when: { $0.delay(2, on: s) }))
        s.run()
        #expect(recorder.marble(render: { "\($0)" }) == "1-2-(3|)")
    }

    @Test
    func retryWhenResubscribesWithoutGrowingTheStack() {
        let p = OpProbe()
        let source: Signal<Int> = opCold(p) { $0.sendError(OpError.boom) }
        #expect(opRecord(source.retry(when: { $0.take(10_000) })).events == [.error(OpError.boom)])
        #expect(p.subscriptions == 10_001)
    }

    @Test func retryWhenDisposalDisposesTheAttemptAndTheHandler() {
        let ps = OpProbe(), ph = OpProbe()
        let log = opRecord(Signal<Int>.never().probed(ps).retry(when: { $0.probed(ph) }))
        log.dispose()
        #expect(ps.subscriptions == 1 && ps.live == 0)
        #expect(ph.subscriptions == 1 && ph.live == 0)
    }
}

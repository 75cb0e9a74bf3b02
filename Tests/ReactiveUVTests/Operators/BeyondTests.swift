import Testing
@testable import ReactiveUV
import ReactiveUVTestKit

/// Operators beyond RAC 2 (catalogue §20 ★): withLatestFrom, debounce vs throttle,
/// retry(when:), using, share, collect(count:), and the logging helpers (§5).
@Suite struct BeyondTests {
    // MARK: withLatestFrom

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

    // MARK: debounce vs throttle

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

    // MARK: retry(when:)

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
        var subscriptions = 0
        let source = Signal<Int>.create { s in
            subscriptions += 1
            s.sendError(OpError.boom)
            return nil
        }
        #expect(opRecord(source.retry(when: { $0.take(10_000) })).events == [.error(OpError.boom)])
        #expect(subscriptions == 10_001)
    }

    @Test func retryWhenManyRetriesOfASynchronousFailure() {
        // Within the depth the recursion survives: the counting is right.
        var subscriptions = 0
        let source = Signal<Int>.create { s in
            subscriptions += 1
            s.sendError(OpError.boom)
            return nil
        }
        #expect(opRecord(source.retry(when: { $0.take(500) })).events == [.error(OpError.boom)])
        #expect(subscriptions == 501)
    }

    @Test func retryWhenDisposalDisposesTheAttemptAndTheHandler() {
        let ps = OpProbe(), ph = OpProbe()
        let log = opRecord(Signal<Int>.never().probed(ps).retry(when: { $0.probed(ph) }))
        log.dispose()
        #expect(ps.subscriptions == 1 && ps.live == 0)
        #expect(ph.subscriptions == 1 && ph.live == 0)
    }

    // MARK: using

    final class Resource: Disposable, @unchecked Sendable {}

    @Test func usingDisposesTheResourceOnCompletion() {
        var resources: [Resource] = []
        let log = opRecord(Signal<Int>.using({ () -> Resource in
            let r = Resource()
            resources.append(r)
            return r
        }, { _ in .fromArray([1, 2]) }))
        #expect(log.events == [.next(1), .next(2), .completed])
        #expect(resources.count == 1 && resources[0].isDisposed)
    }

    @Test func usingDisposesTheResourceOnErrorAndOnDisposal() {
        let r1 = Resource(), r2 = Resource()
        let log = opRecord(Signal<Int>.using({ r1 }, { _ in .error(OpError.boom) }))
        #expect(log.events == [.error(OpError.boom)])
        #expect(r1.isDisposed)
        let p = OpProbe()
        let log2 = opRecord(Signal<Int>.using({ r2 }, { _ in Signal<Int>.never().probed(p) }))
        #expect(!r2.isDisposed)
        log2.dispose()
        #expect(r2.isDisposed && p.live == 0)
    }

    @Test func usingMakesAResourcePerSubscriptionAndAThrowingFactoryIsAnError() {
        var made = 0
        let s = Signal<Int>.using({ () -> Resource in
            made += 1
            return Resource()
        }, { _ in .return(made) })
        #expect(opRecord(s).values == [1])
        #expect(opRecord(s).values == [2])
        let failing = Signal<Int>.using({ () throws -> Resource in throw OpError.boom }, { _ in .return(1) })
        #expect(opRecord(failing).events == [.error(OpError.boom)])
    }

    // MARK: collect(count:) with reentrancy

    @Test func collectCountUnderAReentrantSend() {
        let source = Subject<Int>()
        var got: [[Int]] = []
        source.collect(count: 2).subscribeNext { [unowned source] chunk in
            got.append(chunk)
            if chunk == [1, 2] {
                source.sendNext(3)
                source.sendNext(4)
            }
        }
        source.sendNext(1)
        source.sendNext(2)
        #expect(got == [[1, 2], [3, 4]])
    }

}

/// The logging helpers write through the process-wide `SignalLog.sink`: serialized, so one
/// test's replacement sink never swallows another's lines.
@Suite(.serialized) struct BeyondLoggingTests {
    @Test func logHelpersWriteThroughTheReplaceableSink() {
        let lines = Locked<[String]>([])
        let previous = SignalLog.sink
        SignalLog.sink = { line in lines.withLock { $0.append(line) } }
        defer { SignalLog.sink = previous }

        opRecord(Signal.fromArray([1]).named("logAllSignal").logAll())
        opRecord(Signal<Int>.error(OpError.boom).named("logErrorSignal").logError())
        opRecord(Signal<Int>.fromArray([2]).named("logNextSignal").logNext())
        opRecord(Signal<Int>.empty().named("logCompletedSignal").logCompleted())
        let mine = lines.value.filter { $0.hasPrefix("log") }
        #expect(mine == [
            "logAllSignal next: 1", "logAllSignal completed", "logErrorSignal error: boom", "logNextSignal next: 2",
            "logCompletedSignal completed",
        ])
    }

    @Test func logEventsLogsSubscriptionEventsAndDisposal() {
        let lines = Locked<[String]>([])
        let previous = SignalLog.sink
        SignalLog.sink = { line in lines.withLock { $0.append(line) } }
        defer { SignalLog.sink = previous }

        let subject = Subject<Int>()
        let log = opRecord(subject.logEvents(identifier: "beyond-tap"))
        subject.sendNext(7)
        log.dispose()
        opRecord(Signal<Int>.error(OpError.boom).logEvents(identifier: "beyond-tap2"))
        let mine = lines.value.filter { $0.hasPrefix("[beyond-tap") }
        #expect(mine == [
            "[beyond-tap] subscribed", "[beyond-tap] next: 7", "[beyond-tap] disposed",
            "[beyond-tap2] subscribed", "[beyond-tap2] error: boom", "[beyond-tap2] disposed",
        ])
    }

    @Test func loggingOperatorsPassEventsThroughUnchanged() {
        let previous = SignalLog.sink
        SignalLog.sink = { _ in }
        defer { SignalLog.sink = previous }
        let p = OpProbe()
        #expect(opRecord(Signal.fromArray([1, 2]).logAll().logEvents(identifier: "x")).events == [.next(1), .next(2), .completed])
        opRecord(Signal<Int>.never().probed(p).logAll()).dispose()
        #expect(p.subscriptions == 1 && p.live == 0)
    }
}

import Testing
@testable import ReactiveUV

/// catch, catchTo, retry, repeat, try, tryMap (catalogue §4e, §19).
@Suite struct ErrorHandlingTests {
    // MARK: catch, catchTo

    @Test func catchSubscribesToTheHandlersSignalInsteadOfForwardingTheError() {
        var caught: [String] = []
        let log = opRecord(Signal<Int>.return(1).concat(.error(OpError.boom)).catch { e in
            caught.append("\(e)")
            return .fromArray([2, 3])
        })
        #expect(log.events == [.next(1), .next(2), .next(3), .completed])
        #expect(caught == ["boom"])
    }

    @Test func catchIsNotCalledWithoutAnError() {
        var called = false
        let log = opRecord(Signal.fromArray([1]).catch { _ in
            called = true
            return .empty()
        })
        #expect(log.events == [.next(1), .completed])
        #expect(!called)
    }

    @Test func catchForwardsTheCatchSignalsError() {
        #expect(opRecord(Signal<Int>.error(OpError.boom).catch { _ in .error(OpError.other) }).events == [.error(OpError.other)])
    }

    @Test func catchDisposalDisposesTheSourceAndTheCatchSignal() {
        let ps = OpProbe(), pc = OpProbe()
        let source = Subject<Int>()
        let log = opRecord(source.probed(ps).catch { _ in Signal<Int>.never().probed(pc) })
        #expect(ps.live == 1)
        source.sendError(OpError.boom)
        #expect(ps.live == 0 && pc.live == 1)
        log.dispose()
        #expect(pc.live == 0)

        opRecord(Signal<Int>.never().probed(ps).catch { _ in .empty() }).dispose()
        #expect(ps.live == 0)
    }

    @Test func catchToUsesAFixedSignal() {
        #expect(opRecord(Signal<Int>.error(OpError.boom).catchTo(.return(7))).events == [.next(7), .completed])
        #expect(opRecord(Signal<Int>.return(1).catchTo(.return(7))).events == [.next(1), .completed])
    }

    @Test func catchReentrantSendIntoTheSourceBeforeTheError() {
        let source = Subject<Int>()
        var got: [Int] = []
        source.catchTo(.return(100)).subscribeNext { v in
            got.append(v)
            if v == 1 { source.sendError(OpError.boom) }
        }
        source.sendNext(1)
        #expect(got == [1, 100])
    }

    // MARK: try, RAC's Bool-returning form

    @Test func tryBoolFormPassesValuesUntilTheBlockReturnsFalse() {
        let p = OpProbe()
        let source = Signal<Int>.create { s in
            for i in 1...5 { s.sendNext(i) }
            s.sendCompleted()
            return nil
        }.probed(p)
        let checked = source.try { value, error in
            if value == 3 {
                error = OpError.boom
                return false
            }
            return true
        }
        #expect(opRecord(checked).events == [.next(1), .next(2), .error(OpError.boom)])
        #expect(p.live == 0, "the source is disposed at the first false")
        #expect(opRecord(Signal.fromArray([1, 2]).try { _, _ in true }).events == [.next(1), .next(2), .completed])
    }

    @Test func tryBoolFormFalseWithoutAnErrorIsAClearError() {
        let events = opRecord(Signal.fromArray([1]).try { _, _ in false }).events
        #expect(events.count == 1)
        #expect(events.first?.error as? SignalError == .invalidArgument("try: the block returned false without setting an error"))
    }

    @Test func tryThrowingFormIsStillChosenForOneArgumentClosures() {
        let events = opRecord(Signal.fromArray([1, 2]).try { v in if v == 2 { throw OpError.other } }).events
        #expect(events == [.next(1), .error(OpError.other)])
    }

    // MARK: retry

    @Test func retryNMeansNPlusOneSubscriptionsThenTheError() {
        let p = OpProbe()
        let source: Signal<Int> = opCold(p) { s in
            s.sendNext(p.subscriptions)
            s.sendError(OpError.boom)
        }
        let log = opRecord(source.retry(2))
        #expect(log.events == [.next(1), .next(2), .next(3), .error(OpError.boom)])
        #expect(p.subscriptions == 3 && p.live == 0)
    }

    @Test func retryForwardsCompletionAndStopsRetrying() {
        let p = OpProbe()
        let source: Signal<Int> = opCold(p) { s in
            s.sendNext(p.subscriptions)
            if p.subscriptions < 2 { s.sendError(OpError.boom) } else { s.sendCompleted() }
        }
        #expect(opRecord(source.retry(5)).events == [.next(1), .next(2), .completed])
        #expect(p.subscriptions == 2)
    }

    @Test func retryForeverIsBoundedByDisposal() {
        let p = OpProbe()
        let source: Signal<Int> = opCold(p) { s in
            s.sendNext(p.subscriptions)
            s.sendError(OpError.boom)
        }
        // Synchronous errors forever: the take(5) downstream ends it, and the loop stops.
        #expect(opRecord(source.retry().take(5)).events == [.next(1), .next(2), .next(3), .next(4), .next(5), .completed])
        #expect(p.subscriptions == 5 && p.live == 0)
        #expect(opRecord(source.retry(0).take(2)).values.count == 2)
    }

    @Test func retryForeverOnAsynchronousErrorsStopsAtDisposal() {
        let scheduler = TestScheduler()
        let p = OpProbe()
        let source: Signal<Int> = opCold(p) { s in
            _ = scheduler.afterDelay(1) { s.sendError(OpError.boom) }
        }
        let log = opRecord(source.retry())
        scheduler.advance(by: 3)
        #expect(p.subscriptions == 4)
        log.dispose()
        #expect(p.live == 0)
        scheduler.run()
        #expect(p.subscriptions == 4)
        #expect(log.events.isEmpty)
    }

    @Test func retryResubscribesInALoopNotByRecursion() {
        // A source that fails synchronously 100 000 times: the stack must not grow per retry.
        let p = OpProbe()
        let source: Signal<Int> = opCold(p) { $0.sendError(OpError.boom) }
        #expect(opRecord(source.retry(100_000)).events == [.error(OpError.boom)])
        #expect(p.subscriptions == 100_001)
        #expect(opRecord(Signal.return(1).repeat().take(100_000)).values.count == 100_000)
    }

    @Test func retryNegativeCountIsAnError() {
        #expect(opRecord(Signal<Int>.never().retry(-1)).events.first?.error is SignalError)
    }

    @Test func retryDisposalDisposesTheCurrentAttempt() {
        let p = OpProbe()
        opRecord(Signal<Int>.never().probed(p).retry(3)).dispose()
        #expect(p.subscriptions == 1 && p.live == 0)
    }

    // MARK: repeat

    @Test func repeatResubscribesOnCompletionForever() {
        let p = OpProbe()
        let source: Signal<Int> = opCold(p) { s in
            s.sendNext(p.subscriptions)
            s.sendCompleted()
        }
        #expect(opRecord(source.repeat().take(3)).events == [.next(1), .next(2), .next(3), .completed])
        #expect(p.live == 0)
    }

    @Test func repeatStopsAtAnError() {
        let p = OpProbe()
        let source: Signal<Int> = opCold(p) { s in
            s.sendNext(p.subscriptions)
            if p.subscriptions == 2 { s.sendError(OpError.boom) } else { s.sendCompleted() }
        }
        #expect(opRecord(source.repeat()).events == [.next(1), .next(2), .error(OpError.boom)])
        #expect(p.subscriptions == 2)
    }

    @Test func repeatOnAsynchronousCompletionsStopsAtDisposal() {
        let scheduler = TestScheduler()
        let p = OpProbe()
        let source: Signal<Int> = opCold(p) { s in
            _ = scheduler.afterDelay(1) {
                s.sendNext(1)
                s.sendCompleted()
            }
        }
        let log = opRecord(source.repeat())
        scheduler.advance(by: 2)
        #expect(log.values == [1, 1])
        log.dispose()
        scheduler.run()
        #expect(p.live == 0 && p.subscriptions == 3)
        #expect(log.values == [1, 1])
    }

    // MARK: try, tryMap

    @Test func tryPassesValuesWhileTheBlockDoesNotThrow() {
        let p = OpProbe()
        let source = Subject<Int>()
        let log = opRecord(source.probed(p).try { v in if v > 2 { throw OpError.boom } })
        source.sendNext(1)
        source.sendNext(2)
        source.sendNext(3)
        source.sendNext(1)
        #expect(log.events == [.next(1), .next(2), .error(OpError.boom)])
        #expect(p.live == 0, "the source is disposed")
        #expect(opRecord(Signal<Int>.error(OpError.other).try { _ in }).events == [.error(OpError.other)])
    }

    @Test func tryMapMapsAndAThrowIsTheError() {
        let log = opRecord(Signal.fromArray(["1", "2", "x", "4"]).tryMap { s -> Int in
            guard let v = Int(s) else { throw OpError.boom }
            return v
        })
        #expect(log.events == [.next(1), .next(2), .error(OpError.boom)])
        #expect(opRecord(Signal.fromArray([1]).tryMap { $0 * 2 }).events == [.next(2), .completed])
    }

    @Test func tryMapDisposalDisposesUpstream() {
        let p = OpProbe()
        opRecord(Signal<Int>.never().probed(p).tryMap { $0 }).dispose()
        #expect(p.subscriptions == 1 && p.live == 0)
    }
}

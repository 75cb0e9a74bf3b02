import Testing
@testable import ReactiveUV

/// RACStream's take/skip family, distinctUntilChanged and takeLast (catalogue §3, §4f).
@Suite struct FilteringTests {
    // MARK: take

    @Test func takeSendsTheFirstNValuesThenCompletes() {
        #expect(opRecord(Signal.fromArray([1, 2, 3, 4]).take(2)).events == [.next(1), .next(2), .completed])
        #expect(opRecord(Signal.fromArray([1]).take(5)).events == [.next(1), .completed])
    }

    @Test func takeDisposesTheSourceRightAfterTheNthValue() {
        let probe = OpProbe()
        let source = Subject<Int>()
        let log = opRecord(source.probed(probe).take(2))
        source.sendNext(1)
        #expect(probe.live == 1)
        source.sendNext(2)
        #expect(probe.live == 0)
        #expect(source.roster.entries.isEmpty)
        source.sendNext(3)
        #expect(log.events == [.next(1), .next(2), .completed])
    }

    @Test func takeCompletesEvenIfTheSourceNeverDoes() {
        var sent = 0
        let endless = Signal<Int>.create { s in
            while !s.isDisposed {
                sent += 1
                s.sendNext(sent)
            }
            return nil
        }
        #expect(opRecord(endless.take(3)).events == [.next(1), .next(2), .next(3), .completed])
        #expect(sent == 3)
    }

    @Test func takeZeroIsEmptyAndNeverSubscribes() {
        let probe = OpProbe()
        let log = opRecord(opCold(probe) { (s: Subscriber<Int>) in s.sendNext(1) }.take(0))
        #expect(log.events == [.completed])
        #expect(probe.subscriptions == 0)
    }

    @Test func takeNegativeCountIsAnErrorNotATrap() {
        let log = opRecord(Signal.fromArray([1]).take(-1))
        #expect(log.events.count == 1)
        #expect(log.events.first?.error as? SignalError == .invalidArgument("take(-1): the count must not be negative"))
    }

    @Test func takeForwardsErrors() {
        #expect(opRecord(Signal<Int>.return(1).concat(.error(OpError.boom)).take(3)).events == [.next(1), .error(OpError.boom)])
    }

    @Test func takeDisposalDisposesUpstream() {
        let probe = OpProbe()
        opRecord(Signal<Int>.never().probed(probe).take(3)).dispose()
        #expect(probe.subscriptions == 1 && probe.disposals == 1)
    }

    @Test func takeIsCorrectUnderReentrantSends() {
        let source = Subject<Int>()
        var events: [Event<Int>] = []
        source.take(2).subscribeEvents { e in
            events.append(e)
            if case .next(let v) = e { source.sendNext(v + 1) }
        }
        source.sendNext(1)
        #expect(events == [.next(1), .next(2), .completed])
    }

    // MARK: skip

    @Test func skipDropsTheFirstNValues() {
        #expect(opRecord(Signal.fromArray([1, 2, 3]).skip(2)).events == [.next(3), .completed])
        #expect(opRecord(Signal.fromArray([1, 2]).skip(5)).events == [.completed], "skipping more than exist still completes")
        #expect(opRecord(Signal.fromArray([1, 2]).skip(0)).events == [.next(1), .next(2), .completed])
    }

    @Test func skipForwardsErrorsAndDisposesUpstream() {
        #expect(opRecord(Signal<Int>.return(1).concat(.error(OpError.boom)).skip(1)).events == [.error(OpError.boom)])
        let probe = OpProbe()
        opRecord(Signal<Int>.never().probed(probe).skip(1)).dispose()
        #expect(probe.live == 0)
        let negative = opRecord(Signal.fromArray([1]).skip(-2))
        #expect(negative.events.first?.error is SignalError)
    }

    @Test func skipCountsReentrantSends() {
        let source = Subject<Int>()
        var got: [Int] = []
        var sentBack = false
        source.skip(2).subscribeNext { got.append($0) }
        source.subscribeNext { [unowned source] v in
            if !sentBack {
                sentBack = true
                source.sendNext(v + 10)
            }
        }
        source.sendNext(1)
        source.sendNext(2)
        #expect(got == [2])
    }

    // MARK: takeUntilBlock, takeWhileBlock

    @Test func takeUntilBlockDoesNotSendTheMatchingValue() {
        let probe = OpProbe()
        let source = Subject<Int>()
        let log = opRecord(source.probed(probe).takeUntilBlock { $0 >= 3 })
        source.sendNext(1)
        source.sendNext(2)
        source.sendNext(3)
        source.sendNext(1)
        #expect(log.events == [.next(1), .next(2), .completed])
        #expect(probe.live == 0, "the source is disposed after the matching value")
    }

    @Test func takeWhileBlockIsTheNegation() {
        #expect(opRecord(Signal.fromArray([1, 2, 5, 1]).takeWhileBlock { $0 < 3 }).events == [.next(1), .next(2), .completed])
        #expect(opRecord(Signal.fromArray([1, 2]).takeWhileBlock { $0 < 3 }).events == [.next(1), .next(2), .completed])
    }

    @Test func takeUntilBlockForwardsErrorsAndDisposesUpstream() {
        #expect(opRecord(Signal<Int>.return(1).concat(.error(OpError.boom)).takeUntilBlock { _ in false }).events
            == [.next(1), .error(OpError.boom)])
        let probe = OpProbe()
        opRecord(Signal<Int>.never().probed(probe).takeWhileBlock { _ in true }).dispose()
        #expect(probe.live == 0 && probe.subscriptions == 1)
    }

    @Test func takeUntilBlockUnderReentrantSends() {
        let source = Subject<Int>()
        var events: [Event<Int>] = []
        source.takeUntilBlock { $0 == 3 }.subscribeEvents { e in
            events.append(e)
            if case .next(let v) = e { source.sendNext(v + 1) }
        }
        source.sendNext(1)
        #expect(events == [.next(1), .next(2), .completed])
    }

    // MARK: skipUntilBlock, skipWhileBlock

    @Test func skipUntilBlockSendsTheMatchingValueAndAllLaterOnes() {
        #expect(opRecord(Signal.fromArray([1, 2, 3, 1]).skipUntilBlock { $0 == 2 }).events
            == [.next(2), .next(3), .next(1), .completed])
        #expect(opRecord(Signal.fromArray([1, 2, 3, 1]).skipWhileBlock { $0 < 3 }).events == [.next(3), .next(1), .completed])
    }

    @Test func skipUntilBlockForwardsErrorsAndDisposesUpstream() {
        #expect(opRecord(Signal<Int>.return(1).concat(.error(OpError.boom)).skipUntilBlock { _ in false }).events
            == [.error(OpError.boom)])
        let probe = OpProbe()
        opRecord(Signal<Int>.never().probed(probe).skipWhileBlock { _ in true }).dispose()
        #expect(probe.live == 0 && probe.subscriptions == 1)
    }

    // MARK: distinctUntilChanged

    @Test func distinctUntilChangedDropsRepeatsOfTheLastSentValue() {
        #expect(opRecord(Signal.fromArray([1, 1, 2, 2, 1, 3, 3]).distinctUntilChanged()).events
            == [.next(1), .next(2), .next(1), .next(3), .completed])
    }

    @Test func distinctUntilChangedAlwaysSendsTheFirstValueEvenNil() {
        let values: [Int?] = [nil, nil, 1, nil]
        #expect(opRecord(Signal.fromArray(values).distinctUntilChanged()).events == [.next(nil), .next(1), .next(nil), .completed])
    }

    @Test func distinctUntilChangedByComparesWithTheLastSentValue() {
        // Equivalent when within 1 of the last *sent* value: 1 sent, 2 dropped, 3 sent (|3-1| > 1).
        let log = opRecord(Signal.fromArray([1, 2, 3, 4, 10]).distinctUntilChanged { abs($0 - $1) <= 1 })
        #expect(log.events == [.next(1), .next(3), .next(10), .completed])
    }

    @Test func distinctUntilChangedForwardsErrorsAndDisposesUpstream() {
        #expect(opRecord(Signal<Int>.return(1).concat(.error(OpError.boom)).distinctUntilChanged()).events
            == [.next(1), .error(OpError.boom)])
        let probe = OpProbe()
        opRecord(Signal<Int>.never().probed(probe).distinctUntilChanged(by: ==)).dispose()
        #expect(probe.live == 0 && probe.subscriptions == 1)
    }

    @Test func distinctUntilChangedUnderReentrantSends() {
        let source = Subject<Int>()
        var got: [Int] = []
        source.distinctUntilChanged().subscribeNext { [unowned source] v in
            got.append(v)
            if v == 1 { source.sendNext(1) }
        }
        source.sendNext(1)
        source.sendNext(2)
        #expect(got == [1, 2])
    }

    // MARK: takeLast

    @Test func takeLastSendsTheLastNValuesOnCompletion() {
        let source = Subject<Int>()
        let log = opRecord(source.takeLast(2))
        source.sendNext(1)
        source.sendNext(2)
        source.sendNext(3)
        #expect(log.events.isEmpty)
        source.sendCompleted()
        #expect(log.events == [.next(2), .next(3), .completed])
        #expect(opRecord(Signal.fromArray([1]).takeLast(3)).events == [.next(1), .completed])
        #expect(opRecord(Signal.fromArray([1, 2]).takeLast(0)).events == [.completed])
    }

    @Test func takeLastOnErrorSendsOnlyTheError() {
        #expect(opRecord(Signal.fromArray([1, 2]).concat(.error(OpError.boom)).takeLast(2)).events == [.error(OpError.boom)])
        #expect(opRecord(Signal.fromArray([1]).takeLast(-1)).events.first?.error is SignalError)
    }

    @Test func takeLastDisposalDisposesUpstream() {
        let probe = OpProbe()
        opRecord(Signal<Int>.never().probed(probe).takeLast(1)).dispose()
        #expect(probe.live == 0 && probe.subscriptions == 1)
    }
}

import Testing
@testable import ReactiveUV

/// The static and collection forms of combineLatest, zip, merge and concat (issue 13 §3):
/// typed, unboxed, and with the same RAC semantics as the instance forms.
@Suite struct CombiningFormsTests {
    @Test func staticCombineLatestOfThreeMixedTypesFollowsEveryUpdate() {
        let a = Subject<Int>(), b = Subject<String>(), c = Subject<Bool>()
        var got: [String] = []
        var completed = false
        Signal<(Int, String, Bool)>.combineLatest(a, b, c)
            .subscribe(next: { got.append("\($0)\($1)\($2)") }, completed: { completed = true })
        a.sendNext(1)
        b.sendNext("x")
        #expect(got.isEmpty)
        c.sendNext(true)
        a.sendNext(2)
        c.sendCompleted()
        b.sendNext("y")
        #expect(got == ["1xtrue", "2xtrue", "2ytrue"])
        a.sendCompleted()
        #expect(!completed)
        b.sendCompleted()
        #expect(completed)
    }

    @Test func staticCombineLatestOfSixForwardsTheFirstErrorAndDisposesEverySource() {
        let probes = (0..<6).map { _ in OpProbe() }
        let s = (0..<6).map { _ in Subject<Int>() }
        let log = opRecord(Signal<(Int, Int, Int, Int, Int, Int)>.combineLatest(
            s[0].probed(probes[0]), s[1].probed(probes[1]), s[2].probed(probes[2]),
            s[3].probed(probes[3]), s[4].probed(probes[4]), s[5].probed(probes[5])
        ).map { $0.0 + $0.1 + $0.2 + $0.3 + $0.4 + $0.5 })
        for (i, subject) in s.enumerated() { subject.sendNext(i) }
        s[5].sendNext(100)
        s[3].sendError(OpError.boom)
        s[0].sendNext(7)
        #expect(log.events == [.next(15), .next(110), .error(OpError.boom)])
        #expect(probes.allSatisfy { $0.subscriptions == 1 && $0.live == 0 })
    }

    @Test func staticZipOfFourCompletesWhenACompletedSourceIsDrained() {
        let a = Subject<Int>(), b = Subject<Int>(), c = Subject<Int>(), d = Subject<Int>()
        let log = opRecord(Signal<(Int, Int, Int, Int)>.zip(a, b, c, d).map { "\($0.0)\($0.1)\($0.2)\($0.3)" })
        a.sendNext(1)
        a.sendNext(2)
        a.sendCompleted()  // two queued: not finished yet
        b.sendNext(1)
        c.sendNext(1)
        d.sendNext(1)
        #expect(log.events == [.next("1111")])
        b.sendNext(2)
        c.sendNext(2)
        d.sendNext(2)  // a's queue is drained now and a has completed
        #expect(log.events == [.next("1111"), .next("2222"), .completed])
    }

    @Test func arrayCombineLatestHandsOutArraysThatLaterUpdatesDoNotChange() {
        // The state updates its array in place when the subscriber did not keep it; a kept
        // one must stay as it was (copy on write).
        let a = Subject<Int>(), b = Subject<Int>()
        var kept: [[Int]] = []
        Signal.combineLatest([a, b]).subscribeNext { kept.append($0) }
        a.sendNext(1)
        b.sendNext(2)
        a.sendNext(3)
        b.sendNext(4)
        #expect(kept == [[1, 2], [3, 2], [3, 4]])
    }

    @Test func arrayCombineLatestCompletesWhenAllCompleteEvenOneThatNeverSent() {
        let a = Subject<Int>(), b = Subject<Int>(), c = Subject<Int>()
        let log = opRecord(Signal.combineLatest([a, b, c]))
        a.sendNext(1)
        a.sendCompleted()
        b.sendCompleted()
        #expect(log.events.isEmpty)
        c.sendCompleted()
        #expect(log.events == [.completed])
    }

    @Test func arrayZipOfSixPairsInOrderAndKeepsHandedOutArrays() {
        let subjects = (0..<6).map { _ in Subject<Int>() }
        var kept: [[Int]] = []
        var completed = false
        Signal.zip(subjects).subscribe(next: { kept.append($0) }, completed: { completed = true })
        for round in 0..<3 {
            for (i, s) in subjects.enumerated().reversed() { s.sendNext(round * 10 + i) }
        }
        subjects[2].sendCompleted()
        #expect(kept == [[0, 1, 2, 3, 4, 5], [10, 11, 12, 13, 14, 15], [20, 21, 22, 23, 24, 25]])
        #expect(completed)
    }

    @Test func arrayZipErrorGoesOutAtOnceEvenWithQueuedValues() {
        let a = Subject<Int>(), b = Subject<Int>()
        let log = opRecord(Signal.zip([a, b]))
        a.sendNext(1)
        a.sendNext(2)
        b.sendError(OpError.boom)
        #expect(log.events == [.error(OpError.boom)])
    }

    @Test func mergeDisposesASourceAsSoonAsItCompletes() {
        let p1 = OpProbe(), p2 = OpProbe()
        let a = Subject<Int>(), b = Subject<Int>()
        let log = opRecord(Signal.merge([a.probed(p1), b.probed(p2)]))
        a.sendNext(1)
        a.sendCompleted()
        #expect(p1.live == 0 && p2.live == 1)
        b.sendNext(2)
        b.sendCompleted()
        #expect(log.events == [.next(1), .next(2), .completed])
        #expect(p2.live == 0)
    }

    @Test func concatOfAHundredThousandSynchronousSignalsKeepsTheStackFlat() {
        // Each signal completes inside its own subscription: a recursive concat would need
        // a stack frame per signal.
        let signals = (0..<100_000).map { Signal.return($0) }
        var sum = 0
        var completed = false
        Signal.concat(signals).subscribe(next: { sum += $0 }, completed: { completed = true })
        #expect(sum == (0..<100_000).reduce(0, +))
        #expect(completed)
    }

    @Test func concatMovesOnWhenASourceCompletesOnAnotherThread() {
        let gate = Subject<Int>()
        let log = opRecord(Signal.concat([gate, .return(2), .fromArray([3, 4])]))
        gate.sendNext(1)
        let join = startThread { gate.sendCompleted() }
        join()
        #expect(log.events == [.next(1), .next(2), .next(3), .next(4), .completed])
    }

    @Test func concatDisposalStopsBeforeTheNextSource() {
        let p = OpProbe()
        let first = Subject<Int>()
        let log = opRecord(Signal.concat([first, Signal<Int>.return(9).probed(p)]))
        log.dispose()
        first.sendCompleted()
        #expect(p.subscriptions == 0)
    }
}

// Seed cases C01–C05 (shared/seeds/rac-signal-combination.txt). The seed's S1/S2 send a
// second value after 2 s on the main scheduler: those run on virtual time and on the real
// main loop further down. The synchronous tests first pin the parts of each contract that
// need no clock (errors, completion rules), driven by subjects.

import ReactiveUV
import Testing
import XCTest

@Suite struct SignalCombinationSeedTests {
    /// C01: an error from S1 ends everything; S2 is never subscribed.
    @Test func testC01_concat_errorEndsEverything() {
        let log = SeedLog()
        let s1 = Signal<String>.create { s in
            log("call signal1 block")
            s.sendNext("1.1")
            s.sendError(SeedError())
            return nil
        }
        let s2 = Signal<String>.create { s in
            log("call signal2 block")
            s.sendNext("2.1")
            s.sendCompleted()
            return nil
        }
        Seeds.record(s1.concat(s2), into: log)
        #expect(log.entries == ["call signal1 block", "next(1.1)", "error(SeedError(test, 1))"])
    }

    /// C01: S2 is subscribed only after S1 completes.
    @Test func testC01_concat_subscribesSecondAfterFirstCompletes() {
        let log = SeedLog()
        let s1 = Subject<String>()
        let s2 = Signal<String>.create { s in
            log("call signal2 block")
            s.sendNext("2.1")
            s.sendCompleted()
            return nil
        }
        Seeds.record(s1.concat(s2), into: log)
        s1.sendNext("1.1")
        s1.sendNext("1.2")
        log("before S1 completes")
        s1.sendCompleted()
        #expect(log.entries == [
            "next(1.1)", "next(1.2)", "before S1 completes", "call signal2 block", "next(2.1)", "completed",
        ])
    }

    /// C02: an error from S1 ends it; the block is never called.
    @Test func testC02_then_errorSkipsBlock() {
        let log = SeedLog()
        let s1 = Signal<String>.create { s in
            s.sendNext("1.1")
            s.sendError(SeedError())
            return nil
        }
        Seeds.record(s1.then { () -> Signal<String> in
            log("call signal3 then")
            return Signal.return("2.1")
        }, into: log)
        #expect(log.entries == ["error(SeedError(test, 1))"])
    }

    /// C03: any error ends the merge at once and disposes the other signals.
    @Test func testC03_merge_errorEndsAtOnce() {
        let log = SeedLog()
        let s1 = Subject<String>(), s2 = Subject<String>()
        Seeds.record(Signal.merge([s1.on(disposed: { log("s1 disposed") }), s2]), into: log)
        s1.sendNext("1.1")
        s2.sendNext("2.1")
        s2.sendError(SeedError())
        s1.sendNext("1.2")
        #expect(log.entries == ["next(1.1)", "next(2.1)", "error(SeedError(test, 1))", "s1 disposed"])
    }

    /// C03: a signal that fails synchronously prevents the later ones from being subscribed.
    @Test func testC03_merge_synchronousErrorStopsLaterSubscriptions() {
        let log = SeedLog()
        let later = Signal<String>.create { s in
            log("call signal2 block")
            return nil
        }
        Seeds.record(Signal.merge([Signal<String>.error(SeedError()), later]), into: log)
        #expect(log.entries == ["error(SeedError(test, 1))"])
    }

    /// C04 (§19.1): an error before completion is forwarded even with values queued.
    @Test func testC04_zip_errorWithQueuedValues() {
        let log = SeedLog()
        let s1 = Subject<String>(), s2 = Subject<String>()
        Seeds.record(Signal.zip([s1, s2]), into: log)
        s1.sendNext("1")
        s1.sendNext("2")
        s2.sendError(SeedError())
        #expect(log.entries == ["error(SeedError(test, 1))"])
    }

    /// C05 (§19.2): a source that never sends keeps the result silent, and it still waits
    /// for that source to complete.
    @Test func testC05_combineLatest_silentSource() {
        let log = SeedLog()
        let s2 = Subject<String>()
        Seeds.record(Signal.combineLatest([Signal<String>.return("1"), s2]), into: log)
        log("s1 done")
        s2.sendCompleted()
        #expect(log.entries == ["s1 done", "completed"])
    }
}

/// The article's S1/S2: log "call signalN block" at subscription, send "N.1", then after
/// `delay` on `scheduler` send "N.2" and complete.
func combinationSignal(_ n: Int, delay: Double, on scheduler: Scheduler, log: SeedLog) -> Signal<String> {
    Signal.create { s in
        log("call signal\(n) block")
        s.sendNext("\(n).1")
        return scheduler.afterDelay(delay) {
            s.sendNext("\(n).2")
            s.sendCompleted()
        }
    }
}

// MARK: - Timed cases on virtual time (TestScheduler, the seeds' 2 s delays)

@Suite struct SignalCombinationTimedSeedTests {
    @Test func testC01_concat() {
        let ts = TestScheduler(), log = SeedLog()
        let s1 = combinationSignal(1, delay: 2, on: ts, log: log)
        let s2 = combinationSignal(2, delay: 2, on: ts, log: log)
        Seeds.record(s1.concat(s2), into: log, clock: ts)
        ts.advance(by: 1)
        #expect(log.entries == ["call signal1 block", "[0.0s] next(1.1)"])
        ts.advance(by: 5)
        #expect(log.entries == [
            "call signal1 block", "[0.0s] next(1.1)", "[2.0s] next(1.2)",
            "call signal2 block", "[2.0s] next(2.1)", "[4.0s] next(2.2)", "[4.0s] completed",
        ])
    }

    @Test func testC02_then() {
        let ts = TestScheduler(), log = SeedLog()
        let s1 = combinationSignal(1, delay: 2, on: ts, log: log)
        let s2 = combinationSignal(2, delay: 2, on: ts, log: log)
        Seeds.record(s1.then { () -> Signal<String> in
            log("[\(ts.now)] call signal3 then")
            return s2
        }, into: log, clock: ts)
        ts.advance(by: 5)
        #expect(log.entries == [
            "call signal1 block", "[2.0s] call signal3 then", "call signal2 block",
            "[2.0s] next(2.1)", "[4.0s] next(2.2)", "[4.0s] completed",
        ])
    }

    @Test func testC03_merge() {
        let ts = TestScheduler(), log = SeedLog()
        let s1 = combinationSignal(1, delay: 2, on: ts, log: log)
        let s2 = combinationSignal(2, delay: 2, on: ts, log: log)
        Seeds.record(Signal.merge([s1, s2]), into: log, clock: ts)
        ts.advance(by: 3)
        #expect(log.entries == [
            "call signal1 block", "[0.0s] next(1.1)", "call signal2 block", "[0.0s] next(2.1)",
            "[2.0s] next(1.2)", "[2.0s] next(2.2)", "[2.0s] completed",
        ])
    }

    /// C03: completes only after both complete (here S2 ends later than S1).
    @Test func testC03_merge_completesAfterBoth() {
        let ts = TestScheduler(), log = SeedLog()
        let s1 = combinationSignal(1, delay: 1, on: ts, log: log)
        let s2 = combinationSignal(2, delay: 2, on: ts, log: log)
        Seeds.record(Signal.merge([s1, s2]), into: log, clock: ts)
        ts.advance(by: 1.5)
        #expect(!log.entries.contains { $0.hasSuffix("completed") })
        ts.advance(by: 1)
        #expect(log.entries.suffix(2) == ["[2.0s] next(2.2)", "[2.0s] completed"])
    }

    /// C04: S1 sends "1" and completes; S2 sends "2.1" at 1 s, "2.2" at 2 s and completes.
    /// Exactly one tuple, and completed as soon as S1 is complete with nothing queued.
    @Test func testC04_zip() {
        let ts = TestScheduler(), log = SeedLog()
        let s1 = Signal<String>.create { s in
            log("call signal1 block")
            s.sendNext("1")
            s.sendCompleted()
            return nil
        }
        let s2 = Signal<String>.create { s in
            log("call signal2 block")
            let c = CompoundDisposable()
            c.add(ts.afterDelay(1) { s.sendNext("2.1") })
            c.add(ts.afterDelay(2) {
                s.sendNext("2.2")
                s.sendCompleted()
            })
            return c
        }
        Seeds.record(Signal.zip([s1, s2]), into: log, clock: ts)
        ts.advance(by: 3)
        #expect(log.entries == [
            "call signal1 block", "call signal2 block", "[1.0s] next([\"1\", \"2.1\"])", "[1.0s] completed",
        ])
        #expect(ts.pendingCount == 0)  // S2's 2 s timer was disposed with the zip
    }

    /// C04 with the typed tuple spelling, driven by a subject.
    @Test func testC04_zip_typedTuple() {
        let log = SeedLog()
        let s1 = Signal<String>.create { s in
            s.sendNext("1")
            s.sendCompleted()
            return nil
        }
        let s2 = Subject<String>()
        Seeds.record(Signal<(String, String)>.zip(s1, s2), into: log)
        s2.sendNext("2.1")
        s2.sendNext("2.2")
        #expect(log.entries == ["next((\"1\", \"2.1\"))", "completed"])
    }

    /// C05: three tuples of the latest values, completed when all have completed (at 2 s).
    @Test func testC05_combineLatest() {
        let ts = TestScheduler(), log = SeedLog()
        let s1 = Signal<String>.create { s in
            log("call signal1 block")
            s.sendNext("1")
            s.sendCompleted()
            return nil
        }
        let s2 = combinationSignal(2, delay: 2, on: ts, log: log)
        let s3 = combinationSignal(3, delay: 2, on: ts, log: log)
        Seeds.record(Signal.combineLatest([s1, s2, s3]), into: log, clock: ts)
        ts.advance(by: 3)
        #expect(log.entries == [
            "call signal1 block", "call signal2 block", "call signal3 block",
            "[0.0s] next([\"1\", \"2.1\", \"3.1\"])", "[2.0s] next([\"1\", \"2.2\", \"3.1\"])",
            "[2.0s] next([\"1\", \"2.2\", \"3.2\"])", "[2.0s] completed",
        ])
    }

    /// C05 with subjects standing in for the timers: completes only when the last completes.
    @Test func testC05_combineLatest_subjects() {
        let log = SeedLog()
        let s1 = Signal<String>.create { s in
            s.sendNext("1")
            s.sendCompleted()
            return nil
        }
        let s2 = Subject<String>(), s3 = Subject<String>()
        Seeds.record(Signal.combineLatest([s1, s2, s3]), into: log)
        s2.sendNext("2.1")
        s3.sendNext("3.1")
        s2.sendNext("2.2")
        s2.sendCompleted()
        s3.sendNext("3.2")
        log("before s3 completes")
        s3.sendCompleted()
        #expect(log.entries == [
            "next([\"1\", \"2.1\", \"3.1\"])", "next([\"1\", \"2.2\", \"3.1\"])", "next([\"1\", \"2.2\", \"3.2\"])",
            "before s3 completes", "completed",
        ])
    }

    /// C05 with a source that disposes its own lifetime when it completes (`takeUntil`):
    /// its completion ends only its own part of the combineLatest.
    @Test func testC05_combineLatest_takeUntilSource() {
        let log = SeedLog()
        let other = Subject<Int>()
        Seeds.record(Signal.combineLatest([Signal.return(1).takeUntil(Subject<Void>()), other]), into: log)
        other.sendNext(2)
        other.sendCompleted()
        #expect(log.entries == ["next([1, 2])", "completed"])
    }
}

// MARK: - Cases on the real main loop (2 s scaled to 0.05 s)

final class SignalCombinationMainLoopSeedTests: XCTestCase {
    func testC01_concat_mainLoop() {
        let log = SeedLog()
        let s1 = combinationSignal(1, delay: 0.05, on: Scheduler.main, log: log)
        let s2 = combinationSignal(2, delay: 0.05, on: Scheduler.main, log: log)
        Seeds.record(s1.concat(s2), into: log)
        XCTAssertEqual(log.entries, ["call signal1 block", "next(1.1)"])
        XCTAssertTrue(Seeds.runMain(until: "completed", in: log))
        XCTAssertEqual(log.entries, [
            "call signal1 block", "next(1.1)", "next(1.2)", "call signal2 block", "next(2.1)", "next(2.2)", "completed",
        ])
    }

    func testC03_merge_mainLoop() {
        let log = SeedLog()
        let s1 = combinationSignal(1, delay: 0.05, on: Scheduler.main, log: log)
        let s2 = combinationSignal(2, delay: 0.05, on: Scheduler.main, log: log)
        Seeds.record(Signal.merge([s1, s2]), into: log)
        XCTAssertTrue(Seeds.runMain(until: "completed", in: log))
        // S1's timer was set first with the same delay, so it fires first.
        XCTAssertEqual(log.entries, [
            "call signal1 block", "next(1.1)", "call signal2 block", "next(2.1)", "next(1.2)", "next(2.2)", "completed",
        ])
    }

    /// C05 on the real main loop.
    func testC05_combineLatest_mainLoop() {
        let log = SeedLog()
        let s1 = Signal<String>.create { s in
            log("call signal1 block")
            s.sendNext("1")
            s.sendCompleted()
            return nil
        }
        let s2 = combinationSignal(2, delay: 0.05, on: Scheduler.main, log: log)
        let s3 = combinationSignal(3, delay: 0.05, on: Scheduler.main, log: log)
        Seeds.record(Signal.combineLatest([s1, s2, s3]), into: log)
        XCTAssertTrue(Seeds.runMain(until: "completed", in: log))
        // S2's timer was set before S3's with the same delay, so it fires first.
        XCTAssertEqual(log.entries, [
            "call signal1 block", "call signal2 block", "call signal3 block",
            "next([\"1\", \"2.1\", \"3.1\"])", "next([\"1\", \"2.2\", \"3.1\"])", "next([\"1\", \"2.2\", \"3.2\"])",
            "completed",
        ])
    }
}

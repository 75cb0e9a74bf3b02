// Seed cases S01–S31 (shared/seeds/rac-signal-operations.txt, RACSignal+Operations).
// Synchronous cases run here with Swift Testing; the cases that need a scheduler are at the
// end of the file (virtual time on TestScheduler, or the real main loop in XCTest).

import CSystemShims
import ReactiveUV
import Testing
import XCTest

@Suite struct SignalOperationsSeedTests {
    // MARK: S02 switch(cases:default:), synchronous part

    /// S02 with the `async` case standing in as a signal that sends "start" and whose "end"
    /// is triggered by hand later: "none" switches to the default before that, so the async
    /// case is disposed and its "end" never arrives.
    @Test func testS02_switchCasesDefault_sync() {
        let log = SeedLog()
        let endTrigger = Subject<Void>()
        let asyncCase = Signal<String>.create { s in
            log("async subscribed")
            s.sendNext("start")
            let d = endTrigger.subscribeNext {
                s.sendNext("end")
                s.sendCompleted()
            }
            return Disposable {
                d.dispose()
                log("async disposed")
            }
        }
        let keys = Signal<String>.create { s in
            s.sendNext("sync")
            s.sendNext("async")
            s.sendNext("none")
            s.sendCompleted()
            return nil
        }
        let defaultSignal = Signal<String>.create { s in
            s.sendNext("default")
            s.sendCompleted()
            return nil
        }
        Seeds.record(
            Signal.switch(keys, cases: ["sync": Seeds.syncStrings(), "async": asyncCase], default: defaultSignal),
            into: log)
        endTrigger.sendNext(())
        #expect(log.entries == [
            "next(0)", "next(1)", "async subscribed", "next(start)", "async disposed", "next(default)", "completed",
        ])
    }

    /// S02: no matching case and no default fails with noMatchingCase naming the key.
    @Test func testS02_switchNoMatchingCase() {
        let log = SeedLog()
        let keys = Signal<String>.create { s in
            s.sendNext("sync")
            s.sendNext("none")
            s.sendCompleted()
            return nil
        }
        var failure: (any Error)?
        _ = Signal.switch(keys, cases: ["sync": Seeds.syncStrings()], default: nil).subscribe(
            next: { log("next(\($0))") },
            error: { failure = $0; log("error") },
            completed: { log("completed") })
        #expect(log.entries == ["next(0)", "next(1)", "error"])
        #expect(failure as? SignalError == .noMatchingCase(key: "none"))
        #expect(String(describing: failure!).contains("none"))
        #expect(String(describing: failure!) == "No matching signal found for value none")
    }

    // MARK: S04–S07, S10 blocking operators

    @Test func testS04_first() throws {
        let log = SeedLog()
        let source = Seeds.sync().on(next: { log("sent \($0)") }, disposed: { log("source disposed") })
        #expect(try source.first() == 0)
        // take(1): the source is disposed right after the first value.
        #expect(log.entries == ["sent 0", "source disposed"])
        #expect(try Signal<Int>.empty().first() == nil)
    }

    @Test func testS05_firstOrDefault() throws {
        #expect(try Seeds.syncStrings().firstOrDefault("default") == "0")
        #expect(try Signal<String>.empty().firstOrDefault("default") == "default")
    }

    @Test func testS06_firstOrDefaultSuccessError() {
        var success = false
        var error: (any Error)? = SeedError("unset")
        let x = Seeds.syncStrings().firstOrDefault("default", success: &success, error: &error)
        #expect(x == "0")
        #expect(success)
        #expect(error == nil)

        var success2 = true
        var error2: (any Error)?
        let failing = Signal<String>.error(SeedError("test", code: 1))
        let y = failing.firstOrDefault("default", success: &success2, error: &error2)
        #expect(y == "default")
        #expect(!success2)
        #expect(error2 as? SeedError == SeedError("test", code: 1))

        // Empty: the default, and success (it completed).
        var success3 = false
        var error3: (any Error)?
        #expect(Signal<String>.empty().firstOrDefault("default", success: &success3, error: &error3) == "default")
        #expect(success3)
        #expect(error3 == nil)
    }

    @Test func testS07_waitUntilCompleted() {
        var error: (any Error)? = SeedError("unset")
        #expect(Seeds.sync().waitUntilCompleted(error: &error))
        #expect(error == nil)

        var error2: (any Error)?
        let failing = Seeds.sync().concat(.error(SeedError("test", code: 7)))
        #expect(!failing.waitUntilCompleted(error: &error2))
        #expect(error2 as? SeedError == SeedError("test", code: 7))

        // The throwing spelling.
        #expect(throws: Never.self) { try Seeds.sync().waitUntilCompleted() }
        #expect(throws: SeedError("test", code: 7)) { try failing.waitUntilCompleted() }
    }

    @Test func testS10_sequence() {
        #expect(Array(Seeds.sync().blockingSequence) == [0, 1])
        #expect(Array(Signal<Int>.empty().blockingSequence) == [])
        // An error ends the sequence after the values sent before it.
        #expect(Array(Seeds.sync().concat(.error(SeedError())).blockingSequence) == [0, 1])
    }

    // MARK: S11–S14 multicasting

    @Test func testS11_publish() {
        let log = SeedLog()
        let signal1 = Signal<Int>.create { s in
            log("signal1")
            s.sendCompleted()
            return nil
        }
        let signal2 = Signal<Int>.create { s in
            log("signal2")
            s.sendCompleted()
            return nil
        }
        signal1.subscribeCompleted { log("signal1 subscriber completed") }
        signal1.subscribeCompleted { log("signal1 subscriber completed") }
        let connection = signal2.publish()
        connection.signal.subscribeCompleted { log("publish subscriber A completed") }
        connection.signal.subscribeCompleted { log("publish subscriber B completed") }
        #expect(log.count(of: "signal2") == 0)  // nothing until connect
        let d1 = connection.connect()
        let d2 = connection.connect()  // connecting again neither resubscribes nor makes a new disposable
        #expect(d1 === d2)
        #expect(log.entries == [
            "signal1", "signal1 subscriber completed", "signal1", "signal1 subscriber completed",
            "signal2", "publish subscriber A completed", "publish subscriber B completed",
        ])
    }

    /// S11 (catalogue §8): disposing the connection disconnects for good; connecting again
    /// neither resubscribes nor reconnects.
    @Test func testS11_publish_disconnectIsFinal() {
        let log = SeedLog()
        let source = Subject<Int>()
        let connection = source.on(subscribed: { log("subscribed") }, disposed: { log("disposed") }).publish()
        Seeds.record(connection.signal, into: log)
        let d = connection.connect()
        source.sendNext(1)
        d.dispose()
        source.sendNext(2)
        let again = connection.connect()
        source.sendNext(3)
        #expect(again === d)
        #expect(again.isDisposed)
        #expect(log.entries == ["subscribed", "next(1)", "disposed"])
    }

    @Test func testS12_replay() {
        let log = SeedLog()
        let source = Seeds.sync().on(subscribed: { log("subscribed") })
        let replayed = source.replay()
        #expect(log.entries == ["subscribed"])  // subscribed at once, by replay() itself
        Seeds.record(replayed, into: log)
        Seeds.record(replayed, into: log, prefix: "late ")
        #expect(log.entries == [
            "subscribed", "next(0)", "next(1)", "completed", "late next(0)", "late next(1)", "late completed",
        ])
    }

    @Test func testS13_replayLast() {
        let log = SeedLog()
        Seeds.record(Seeds.sync().replayLast(), into: log)
        #expect(log.entries == ["next(1)", "completed"])
    }

    @Test func testS14_replayLazily() {
        let log = SeedLog()
        func named(_ name: String) -> Signal<Int> {
            Signal.create { s in
                for i in 0..<2 { s.sendNext(i) }
                log(name)
                s.sendCompleted()
                return nil
            }
        }
        let signal1 = named("signal1"), signal2 = named("signal2"), signal3 = named("signal3")
        _ = signal1.replayLazily()
        _ = signal2.replayLast()
        let lazy3 = signal3.replayLazily()
        #expect(log.entries == ["signal2"])  // replayLazily has not subscribed yet
        Seeds.record(lazy3, into: log)
        Seeds.record(lazy3, into: log, prefix: "again ")  // replays; signal3 is not run again
        #expect(log.entries == [
            "signal2", "signal3", "next(0)", "next(1)", "completed", "again next(0)", "again next(1)", "again completed",
        ])
    }

    // MARK: S19–S24 grouping, materialize, any/all

    @Test func testS19_groupByTransform() {
        let log = SeedLog()
        let groups = Seeds.sync().groupBy({ $0 == 0 ? "first" : "second" }, transform: { $0 + 100 })
        Seeds.record(groups.map { $0.key }, into: log, prefix: "key ")
        Seeds.record(groups.map { $0 as Signal<Int> }.flatten(), into: log)
        #expect(log.entries == [
            "key next(first)", "key next(second)", "key completed", "next(100)", "next(101)", "completed",
        ])
    }

    /// S19: each group carries its key and gets the transformed values of that key only.
    @Test func testS19_groupByTransform_groupsCarryKeys() {
        let log = SeedLog()
        Seeds.sync().groupBy({ $0 == 0 ? "first" : "second" }, transform: { $0 + 100 }).subscribe(
            next: { group in Seeds.record(group, into: log, prefix: "\(group.key) ") },
            completed: { log("outer completed") })
        // On completion the outer completes first, then each group in creation order.
        #expect(log.entries == [
            "first next(100)", "second next(101)", "outer completed", "first completed", "second completed",
        ])
    }

    @Test func testS20_groupBy() {
        let log = SeedLog()
        let groups = Seeds.sync().groupBy { $0 == 0 ? "first" : "second" }
        Seeds.record(groups.map { $0 as Signal<Int> }.flatten(), into: log)
        #expect(log.entries == ["next(0)", "next(1)", "completed"])
    }

    @Test func testS21_materialize() {
        var events: [Event<Event<Int>>] = []
        Seeds.sync().materialize().subscribeEvents { events.append($0) }
        #expect(events == [.next(.next(0)), .next(.next(1)), .next(.completed), .completed])

        var failed: [Event<Event<Int>>] = []
        Signal<Int>.error(SeedError()).materialize().subscribeEvents { failed.append($0) }
        #expect(failed == [.next(.error(SeedError())), .completed])
    }

    @Test func testS22_anyPredicate() {
        let log = SeedLog()
        Seeds.record(Seeds.sync().any { $0 == 1 }, into: log)
        #expect(log.entries == ["next(true)", "completed"])

        let none = SeedLog()
        Seeds.record(Seeds.sync().any { $0 == 5 }, into: none)
        #expect(none.entries == ["next(false)", "completed"])
    }

    @Test func testS23_any() {
        let log = SeedLog()
        Seeds.record(Seeds.sync().any(), into: log)
        Seeds.record(Signal<Int>.empty().any(), into: log, prefix: "empty ")
        #expect(log.entries == ["next(true)", "completed", "empty next(false)", "empty completed"])
    }

    /// S23/S22: the source is disposed as soon as the answer is known.
    @Test func testS23_any_disposesSource() {
        let log = SeedLog()
        let source = Subject<Int>()
        Seeds.record(source.on(disposed: { log("source disposed") }).any(), into: log)
        source.sendNext(7)
        source.sendNext(8)
        #expect(log.entries == ["next(true)", "completed", "source disposed"])
    }

    @Test func testS24_all() {
        let log = SeedLog()
        let anySync = Seeds.sync().map { $0 as Any }
        Seeds.record(anySync.all { $0 is Int }, into: log)
        Seeds.record(anySync.all { $0 is String }, into: log, prefix: "failing value ")
        Seeds.record(Seeds.sync().concat(.error(SeedError())).all { _ in true }, into: log, prefix: "error ")
        Seeds.record(Signal<Int>.empty().all { _ in false }, into: log, prefix: "empty ")
        #expect(log.entries == [
            "next(true)", "completed",
            "failing value next(false)", "failing value completed",
            "error next(false)", "error completed",
            "empty next(true)", "empty completed",
        ])
    }

    // MARK: S25–S26 retry

    @Test func testS25_retryCount() {
        let log = SeedLog()
        var subscriptions = 0
        let signal = Signal<Int>.create { s in
            subscriptions += 1
            log("signal \(subscriptions)")
            s.sendError(SeedError("retry", code: subscriptions))
            return nil
        }
        Seeds.record(signal.retry(2), into: log)
        #expect(log.entries == ["signal 1", "signal 2", "signal 3", "error(SeedError(retry, 3))"])
    }

    /// S25: values of every attempt are forwarded, and a completion ends the retrying.
    @Test func testS25_retryCount_valuesAndCompletion() {
        let log = SeedLog()
        var subscriptions = 0
        let signal = Signal<Int>.create { s in
            subscriptions += 1
            s.sendNext(subscriptions)
            if subscriptions < 2 { s.sendError(SeedError()) } else { s.sendCompleted() }
            return nil
        }
        Seeds.record(signal.retry(5), into: log)
        #expect(log.entries == ["next(1)", "next(2)", "completed"])
    }

    /// S26: `retry()` resubscribes a synchronously failing signal until the subscription is
    /// disposed; here a `takeUntil` trigger fired by the 5th subscription disposes it.
    @Test func testS26_retryForever_synchronousErrors() {
        let log = SeedLog()
        let stop = Subject<Void>()
        var subscriptions = 0
        let signal = Signal<Int>.create { s in
            subscriptions += 1
            log("signal \(subscriptions)")
            if subscriptions == 5 { stop.sendNext(()) }
            s.sendError(SeedError())
            return nil
        }
        Seeds.record(signal.retry().takeUntil(stop), into: log)
        #expect(log.entries == ["signal 1", "signal 2", "signal 3", "signal 4", "signal 5", "completed"])
        #expect(subscriptions == 5)
    }

    /// S26: with errors that arrive later, each one resubscribes; after the caller disposes
    /// the subscription, a late error does nothing and there is no further subscription.
    @Test func testS26_retryForever_disposeAfterNSubscriptions() {
        let log = SeedLog()
        var current: [Subscriber<Int>] = []
        let signal = Signal<Int>.create { s in
            current.append(s)
            log("signal \(current.count)")
            return Disposable { log("attempt \(current.count) disposed") }
        }
        let d = Seeds.record(signal.retry(), into: log)
        for n in 0..<3 { current[n].sendError(SeedError()) }
        #expect(current.count == 4)
        d.dispose()
        current[3].sendError(SeedError())
        #expect(current.count == 4)
        #expect(current[3].isDisposed)
        #expect(log.entries == [
            "signal 1", "attempt 1 disposed", "signal 2", "attempt 2 disposed", "signal 3", "attempt 3 disposed",
            "signal 4", "attempt 4 disposed",
        ])
        // The signal's block keeps every subscriber it was given in `current`, and each
        // subscriber reaches `retry`, which holds the signal: let go of them (LeakSanitizer).
        current.removeAll()
    }

    /// S26: the resubscription loop does not deepen the stack: 100,000 synchronous
    /// failures in a row, then a trigger stops it.
    @Test func testS26_retryForever_deepSynchronousRetries() {
        let stop = Subject<Void>()
        var subscriptions = 0
        let signal = Signal<Int>.create { s in
            subscriptions += 1
            if subscriptions == 100_000 { stop.sendNext(()) }
            s.sendError(SeedError())
            return nil
        }
        let log = SeedLog()
        Seeds.record(signal.retry().takeUntil(stop), into: log)
        #expect(subscriptions == 100_000)
        #expect(log.entries == ["completed"])
    }

    // MARK: S28–S31

    @Test func testS28_dematerialize() {
        let log = SeedLog()
        var source: Subscriber<Event<Int>>?
        let signal = Signal<Event<Int>>.create { s in
            source = s
            s.sendNext(.next(1))
            s.sendNext(.completed)
            s.sendNext(.error(SeedError()))
            return nil
        }
        Seeds.record(signal.dematerialize(), into: log)
        #expect(log.entries == ["next(1)", "completed"])
        #expect(source?.isDisposed == true)  // the source is disposed after the completed event

        let failing = SeedLog()
        Seeds.record(
            Signal<Event<Int>>.fromArray([.next(1), .error(SeedError()), .next(2)]).dematerialize(), into: failing)
        #expect(failing.entries == ["next(1)", "error(SeedError(test, 1))"])
    }

    @Test func testS29_not() {
        let log = SeedLog()
        Seeds.record(Seeds.sync().map { $0 != 0 }.not(), into: log)
        #expect(log.entries == ["next(true)", "next(false)", "completed"])
    }

    @Test func testS30_andOr() {
        let log = SeedLog()
        let tuple = Signal<(Bool, Bool)>.create { s in
            s.sendNext((false, true))
            return nil
        }
        Seeds.record(tuple.and(), into: log, prefix: "and ")
        Seeds.record(tuple.or(), into: log, prefix: "or ")
        let array = Signal<[Bool]>.return([false, true])
        Seeds.record(array.and(), into: log, prefix: "[and] ")
        Seeds.record(array.or(), into: log, prefix: "[or] ")
        #expect(log.entries == [
            "and next(false)", "or next(true)", "[and] next(false)", "[and] completed", "[or] next(true)",
            "[or] completed",
        ])
    }

    @Test func testS31_reduceApply() {
        let log = SeedLog()
        let block: (Int, Int) -> Int = { $0 + $1 + 100 }
        let signal = Signal<((Int, Int) -> Int, Int, Int)>.create { s in
            s.sendNext((block, 0, 1))
            return nil
        }
        Seeds.record(signal.reduceApply(), into: log)
        #expect(log.entries == ["next(101)"])
    }
}

// MARK: - Timed cases on virtual time (TestScheduler, the seeds' delays)

@Suite struct SignalOperationsTimedSeedTests {
    @Test func testS01_switchToLatest() {
        let ts = TestScheduler()
        let log = SeedLog()
        var made = 0
        let outer = Signal<Signal<String>>.create { s in
            for _ in 0..<2 {
                made += 1
                let n = made
                s.sendNext(Seeds.async(2, on: ts).on(disposed: { log("[\(ts.now)] inner \(n) disposed") }))
            }
            s.sendCompleted()
            return nil
        }
        Seeds.record(outer.switchToLatest(), into: log, clock: ts)
        #expect(log.entries == ["[0.0s] next(start)", "[0.0s] inner 1 disposed", "[0.0s] next(start)"])
        #expect(ts.pendingCount == 1)  // the first inner's timer was cancelled with it
        ts.advance(by: 1.5)
        #expect(log.entries.count == 3)  // the outer completed, but the latest inner has not
        ts.advance(by: 1.5)
        #expect(log.entries == [
            "[0.0s] next(start)", "[0.0s] inner 1 disposed", "[0.0s] next(start)",
            "[2.0s] next(end)", "[2.0s] completed", "[2.0s] inner 2 disposed",
        ])
        #expect(ts.pendingCount == 0)
    }

    @Test func testS02_switchCasesDefault() {
        let ts = TestScheduler()
        let log = SeedLog()
        let keys = Signal<String>.create { s in
            s.sendNext("sync")
            s.sendNext("async")
            s.sendNext("none")
            s.sendCompleted()
            return nil
        }
        let defaultSignal = Signal<String>.create { s in
            s.sendNext("default")
            s.sendCompleted()
            return nil
        }
        let cases = ["sync": Seeds.syncStrings(), "async": Seeds.async(2, on: ts)]
        Seeds.record(Signal.switch(keys, cases: cases, default: defaultSignal), into: log, clock: ts)
        ts.advance(by: 3)
        #expect(log.entries == [
            "[0.0s] next(0)", "[0.0s] next(1)", "[0.0s] next(start)", "[0.0s] next(default)", "[0.0s] completed",
        ])
        #expect(ts.pendingCount == 0)  // the async case's "end" timer was cancelled
    }

    @Test func testS03_ifThenElse() {
        let ts = TestScheduler()
        let log = SeedLog()
        let bools = Signal<Bool>.create { s in
            s.sendNext(true)
            return ts.afterDelay(0.5) {
                s.sendNext(false)
                s.sendCompleted()
            }
        }
        Seeds.record(Signal.if(bools, then: Seeds.syncStrings(), else: Seeds.async(2, on: ts)), into: log, clock: ts)
        #expect(log.entries == ["[0.0s] next(0)", "[0.0s] next(1)"])
        ts.advance(by: 0.5)
        #expect(log.entries == ["[0.0s] next(0)", "[0.0s] next(1)", "[0.5s] next(start)"])
        ts.advance(by: 2)
        #expect(log.entries == [
            "[0.0s] next(0)", "[0.0s] next(1)", "[0.5s] next(start)", "[2.5s] next(end)", "[2.5s] completed",
        ])
    }

    /// S08 with the seed's eager signals on a scheduler standing for `main` (virtual time):
    /// `1`, `3`, then `defer -- eagerly`; the defer block of the never-subscribed `defer`
    /// never runs, so E2 is never even created and `2` never logged.
    @Test func testS08_defer() {
        let ts = TestScheduler()
        let log = SeedLog()
        func eager(_ n: Int) -> Signal<String> {
            log("E\(n) created")
            return Signal<String>.startEagerly(on: ts) { s in
                s.sendNext("eagerly")
                log("\(n)")
                s.sendCompleted()
            }
        }
        _ = eager(1)
        _ = Signal<String>.defer { eager(2) }
        Signal<String>.defer { eager(3) }.subscribeNext { log("defer -- \($0)") }
        #expect(log.entries == ["E1 created", "E3 created"])  // nothing runs before the scheduler does
        ts.run()
        #expect(log.entries == ["E1 created", "E3 created", "1", "3", "defer -- eagerly"])
    }

    @Test func testS15_timeout() {
        let ts = TestScheduler()
        let log = SeedLog()
        var failure: (any Error)?
        let source = Seeds.async(2, on: ts).on(disposed: { log("[\(ts.now)] source disposed") })
        source.timeout(1, on: ts).subscribe(
            next: { log("[\(ts.now)] next(\($0))") },
            error: { failure = $0; log("[\(ts.now)] error") },
            completed: { log("[\(ts.now)] completed") })
        ts.advance(by: 0.999)
        #expect(log.entries == ["[0.0s] next(start)"])
        ts.advance(by: 3)
        #expect(log.entries == ["[0.0s] next(start)", "[1.0s] source disposed", "[1.0s] error"])
        #expect(failure as? SignalError == .timedOut)
        #expect(ts.pendingCount == 0)  // the source's "end" timer went with it
    }

    /// S15's contract beyond the seed: values do not restart the timer (a total-duration
    /// limit), and a source that terminates in time cancels it.
    @Test func testS15_timeout_totalDurationAndCancellation() {
        let ts = TestScheduler()
        let log = SeedLog()
        let ticking = Signal<String>.create { s in
            let c = CompoundDisposable()
            for t in [0.4, 0.8, 1.2] { c.add(ts.afterDelay(t) { s.sendNext("tick \(t)") }) }
            return c
        }
        Seeds.record(ticking.timeout(1, on: ts), into: log, clock: ts, prefix: "ticking ")
        Seeds.record(Seeds.async(0.5, on: ts).timeout(1, on: ts), into: log, clock: ts, prefix: "quick ")
        ts.advance(by: 5)
        #expect(log.entries == [
            "[0.0s] quick next(start)", "[0.4s] ticking next(tick 0.4)", "[0.5s] quick next(end)",
            "[0.5s] quick completed", "[0.8s] ticking next(tick 0.8)", "[1.0s] ticking error(The signal timed out)",
        ])
        #expect(ts.pendingCount == 0)
    }

    /// S16's `sync.deliverOn(scheduler)` on virtual time: both values and the completion
    /// arrive when the scheduler runs, with `Scheduler.current` the scheduler.
    @Test func testS16_deliverOn_testScheduler() {
        let ts = TestScheduler(), log = SeedLog()
        Seeds.sync().deliverOn(ts).subscribe(
            next: { log("next(\($0)) current: \(Scheduler.current === ts)") },
            completed: { log("completed current: \(Scheduler.current === ts)") })
        #expect(log.entries.isEmpty)  // nothing before the scheduler runs
        ts.advance()
        #expect(log.entries == ["next(0) current: true", "next(1) current: true", "completed current: true"])
    }

    /// Regression guard beside S16 (same shape): `delay` keeps the pending sends of a
    /// `create` source that has already completed.
    @Test func testS16_delay_createSourceKeepsPendingSends() {
        let ts = TestScheduler(), log = SeedLog()
        Seeds.record(Seeds.sync().delay(1, on: ts), into: log, clock: ts)
        ts.advance(by: 0.5)
        #expect(log.entries.isEmpty)
        ts.advance(by: 1)
        #expect(log.entries == ["[1.0s] next(0)", "[1.0s] next(1)", "[1.0s] completed"])
    }

    @Test func testS27_sample() {
        let ts = TestScheduler()
        let log = SeedLog()
        let signal = Signal<Int>.create { s in
            s.sendNext(1)
            return ts.afterDelay(1.8) { s.sendNext(2) }
        }
        let sampler = Signal<String>.create { s in
            let c = CompoundDisposable()
            c.add(ts.afterDelay(1) { s.sendNext("first") })
            c.add(ts.afterDelay(1.5) { s.sendNext("second") })
            c.add(ts.afterDelay(2) {
                s.sendNext("third")
                s.sendCompleted()
            })
            return c
        }
        Seeds.record(signal.on(disposed: { log("[\(ts.now)] source disposed") }).sample(sampler), into: log, clock: ts)
        ts.advance(by: 3)
        #expect(log.entries == [
            "[1.0s] next(1)", "[1.5s] next(1)", "[2.0s] next(2)", "[2.0s] completed", "[2.0s] source disposed",
        ])
    }
}

// MARK: - Cases on real background schedulers (off the main thread)

@Suite struct SignalOperationsBackgroundSeedTests {
    /// S09 on a real background scheduler, 2 s scaled to 0.05 s: `toArray` blocks the
    /// (non-loop) test thread on a condition until completion.
    @Test func testS09_toArray() throws {
        let bg = Scheduler.background()
        #expect(try Seeds.async(0.05, on: bg).toArray() == ["start", "end"])
    }

    /// S09: an error makes `toArray` throw even after values.
    @Test func testS09_toArray_error() {
        let bg = Scheduler.background()
        let failing = Seeds.async(0.05, on: bg).concat(.error(SeedError("toArray", code: 3)))
        #expect(throws: SeedError("toArray", code: 3)) { try failing.toArray() }
    }

    /// S15 with real background schedulers (2 s : 1 s scaled to 0.1 s : 0.05 s); one serial
    /// scheduler for both, so the two timers fire in deadline order whatever the load.
    @Test func testS15_timeout_background() {
        let bg = Scheduler.background()
        let log = SeedLog()
        var failure: (any Error)?
        let source = Seeds.async(0.1, on: bg).on(disposed: { log("source disposed") })
        source.timeout(0.05, on: bg).subscribe(
            next: { log("next(\($0))") },
            error: { e in
                failure = e
                log("error on bg: \(Scheduler.current === bg)")
            },
            completed: { log("completed") })
        #expect(Seeds.wait { log.entries.contains("error on bg: true") })
        _ = Seeds.wait(timeout: 0.2) { log.entries.contains("next(end)") }  // give a late "end" its chance
        #expect(log.entries == ["next(start)", "source disposed", "error on bg: true"])
        #expect(failure as? SignalError == .timedOut)
    }

    /// S16 as seeded: `sync.deliverOn(bg)`; both values (and the completion) arrive with
    /// the current scheduler being that background scheduler.
    @Test func testS16_deliverOn() {
        let bg = Scheduler.background()
        let log = SeedLog()
        Seeds.sync().deliverOn(bg).subscribe(
            next: { log("next(\($0)) on bg: \(Scheduler.current === bg)") },
            completed: { log("completed on bg: \(Scheduler.current === bg)") })
        #expect(Seeds.drain(bg))
        #expect(log.entries == ["next(0) on bg: true", "next(1) on bg: true", "completed on bg: true"])
    }

    @Test func testS17_subscribeOn() {
        let bg = Scheduler.background()
        let log = SeedLog()
        let sync = Signal<Int>.create { s in
            log("didSubscribe on bg: \(Scheduler.current === bg)")
            for i in 0..<2 { s.sendNext(i) }
            s.sendCompleted()
            return nil
        }
        sync.subscribeOn(bg).subscribe(
            next: { log("next(\($0)) on bg: \(Scheduler.current === bg)") },
            completed: { log("completed on bg: \(Scheduler.current === bg)") })
        #expect(Seeds.wait { log.entries.count == 4 })
        #expect(log.entries == [
            "didSubscribe on bg: true", "next(0) on bg: true", "next(1) on bg: true", "completed on bg: true",
        ])
    }

    /// S17: disposing before the scheduled subscription runs prevents it.
    @Test func testS17_subscribeOn_disposeBeforeSubscription() {
        let bg = Scheduler.background()
        let log = SeedLog()
        let gate = SeedLog()
        bg.schedule { _ = Seeds.wait(timeout: 10) { !gate.entries.isEmpty } }  // hold bg busy
        let d = Seeds.sync().on(subscribed: { log("subscribed") }).subscribeOn(bg).subscribeNext { log("next(\($0))") }
        d.dispose()
        gate("open")
        #expect(Seeds.drain(bg))
        #expect(log.entries.isEmpty)
    }

    /// S10: reading an element not sent yet blocks until it arrives.
    @Test func testS10_sequence_blocksForLaterValues() {
        let bg = Scheduler.background()
        #expect(Array(Seeds.async(0.05, on: bg).blockingSequence) == ["start", "end"])
    }
}


// MARK: - Cases on the real main loop (XCTest runs on the main thread)

final class SignalOperationsMainLoopSeedTests: XCTestCase {
    /// S01 on the real main loop, 2 s scaled to 0.05 s.
    func testS01_switchToLatest_mainLoop() {
        let log = SeedLog()
        let outer = Signal<Signal<String>>.create { s in
            for _ in 0..<2 { s.sendNext(Seeds.async(0.05, on: Scheduler.main)) }
            s.sendCompleted()
            return nil
        }
        Seeds.record(outer.switchToLatest(), into: log)
        XCTAssertEqual(log.entries, ["next(start)", "next(start)"])
        XCTAssertTrue(Seeds.runMain(until: "completed", in: log))
        // The first inner's timer was due first: had it not been disposed, its "end" would
        // have come before the second's.
        XCTAssertEqual(log.entries, ["next(start)", "next(start)", "next(end)", "completed"])
    }

    /// S09 from the main thread with the work on the main loop: a blocking operator called
    /// on a loop's own thread runs that loop instead of deadlocking.
    func testS09_toArray_onMainLoop() throws {
        XCTAssertEqual(try Seeds.async(0.05, on: Scheduler.main).toArray(), ["start", "end"])
    }

    /// S18 as seeded: `sync.deliverOn(bg).map{…}.deliverOnMainThread()`: the map runs on
    /// bg, the subscriber on the main thread for both values.
    func testS18_deliverOnMainThread() {
        let bg = Scheduler.background()
        let log = SeedLog()
        Seeds.sync().deliverOn(bg)
            .map { v -> Int in
                log("map \(v) on bg: \(Scheduler.current === bg)")
                return v
            }
            .deliverOnMainThread()
            .subscribe(
                next: { log("next(\($0))\(Seeds.thread) current is main: \(Scheduler.current === Scheduler.main)") },
                completed: { log("completed\(Seeds.thread)") })
        XCTAssertTrue(Seeds.runMain(until: "completed @main", in: log))
        // bg and main run concurrently: check each thread's own order.
        XCTAssertEqual(log.entries.filter { $0.hasPrefix("map") }, ["map 0 on bg: true", "map 1 on bg: true"])
        XCTAssertEqual(log.entries.filter { !$0.hasPrefix("map") }, [
            "next(0) @main current is main: true", "next(1) @main current is main: true", "completed @main",
        ])
    }

    /// S18, `deliverOnMainThread` alone: a `create` source run on bg (`subscribeOn`) sends
    /// 0, 1 and completes; all three reach the subscriber on the main thread, in order.
    func testS18_deliverOnMainThread_fromBackground() {
        let bg = Scheduler.background()
        let log = SeedLog()
        Seeds.sync().subscribeOn(bg).deliverOnMainThread().subscribe(
            next: { log("next(\($0))\(Seeds.thread)") },
            completed: { log("completed\(Seeds.thread)") })
        XCTAssertTrue(Seeds.runMain(until: "completed @main", in: log))
        XCTAssertEqual(log.entries, ["next(0) @main", "next(1) @main", "completed @main"])
    }

    /// S18, RAC's rule for `deliverOnMainThread`: inline only when on the main thread *and*
    /// nothing is queued; a value sent on main while an earlier one from bg is still queued
    /// waits behind it, so the order is kept.
    func testS18_deliverOnMainThread_keepsOrderBehindQueuedEvents() {
        let bg = Scheduler.background()
        let log = SeedLog()
        let subject = Subject<Int>()
        Seeds.record(subject.deliverOnMainThread(), into: log)
        bg.schedule { subject.sendNext(1) }
        XCTAssertTrue(Seeds.drain(bg))  // 1 is now queued on main (the main loop is not running)
        subject.sendNext(2)  // on main, but 1 is queued: must not overtake it
        XCTAssertEqual(log.entries, [])
        subject.sendNext(3)
        XCTAssertTrue(EventLoop.main.run(until: { log.entries.count == 3 }, timeout: 10))
        subject.sendNext(4)  // nothing queued any more: inline
        XCTAssertEqual(log.entries, ["next(1)", "next(2)", "next(3)", "next(4)"])
    }

    /// S18's inline rule: on the main thread with nothing queued, delivery is synchronous.
    func testS18_deliverOnMainThread_inlineOnMain() {
        let log = SeedLog()
        Seeds.record(Seeds.sync().deliverOnMainThread(), into: log)
        XCTAssertEqual(log.entries, ["next(0)", "next(1)", "completed"])
    }
}

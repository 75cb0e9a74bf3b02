// Seed cases L01–L02 (shared/seeds/rac-switch-to-latest.txt). L02 (takeUntil, the operator
// switchToLatest is built on in RAC) is synchronous; L01 runs on virtual time and on the
// real main loop further down.

import ReactiveUV
import Testing
import XCTest

@Suite struct SwitchToLatestSeedTests {
    /// A source whose subscription and disposal are logged.
    private func observed(_ subject: Subject<String>, _ log: SeedLog) -> Signal<String> {
        subject.on(subscribed: { log("x subscribed") }, disposed: { log("x disposed") })
    }

    @Test func testL02_takeUntil_triggerValue() {
        let log = SeedLog()
        let x = Subject<String>(), trigger = Subject<Int>()
        Seeds.record(observed(x, log).takeUntil(trigger), into: log)
        x.sendNext("a")
        trigger.sendNext(1)
        x.sendNext("b")
        #expect(log.entries == ["x subscribed", "next(a)", "completed", "x disposed"])
    }

    @Test func testL02_takeUntil_triggerCompletion() {
        let log = SeedLog()
        let x = Subject<String>(), trigger = Subject<Int>()
        Seeds.record(observed(x, log).takeUntil(trigger), into: log)
        x.sendNext("a")
        trigger.sendCompleted()
        x.sendNext("b")
        #expect(log.entries == ["x subscribed", "next(a)", "completed", "x disposed"])
    }

    /// Catalogue §19.4: trigger errors are ignored.
    @Test func testL02_takeUntil_triggerErrorIgnored() {
        let log = SeedLog()
        let x = Subject<String>(), trigger = Subject<Int>()
        Seeds.record(observed(x, log).takeUntil(trigger), into: log)
        trigger.sendError(SeedError())
        x.sendNext("a")
        x.sendCompleted()
        #expect(log.entries == ["x subscribed", "next(a)", "completed", "x disposed"])
    }

    /// Catalogue §19.4: the trigger is subscribed first; one that fires synchronously means
    /// the receiver is never subscribed, even a synchronous one.
    @Test func testL02_takeUntil_synchronousTrigger() {
        let log = SeedLog()
        let x = Seeds.sync().on(subscribed: { log("x subscribed") })
        Seeds.record(x.takeUntil(Signal<Int>.return(1)), into: log)
        Seeds.record(x.takeUntil(Signal<Int>.empty()), into: log, prefix: "empty trigger ")
        #expect(log.entries == ["completed", "empty trigger completed"])
    }

    /// L02: the receiver's own completion and error pass through.
    @Test func testL02_takeUntil_receiverTerminates() {
        let log = SeedLog()
        let trigger = Subject<Int>()
        Seeds.record(Seeds.sync().takeUntil(trigger), into: log)
        Seeds.record(Signal<Int>.error(SeedError()).takeUntil(trigger), into: log, prefix: "failing ")
        #expect(log.entries == ["next(0)", "next(1)", "completed", "failing error(SeedError(test, 1))"])
    }
}

/// The article's outer signal: sends S1 ("nancy", then "botwen" after `delay`) and S2
/// ("jiang", then "longjian" after `delay`), then completes. As in the article, the inner
/// signals return no disposable: their timers still fire after the switch, and what S1
/// sends then must be dropped because its subscription was disposed.
func namesOuter(delay: Double, on scheduler: Scheduler, log: SeedLog) -> Signal<Signal<String>> {
    func inner(_ first: String, _ second: String) -> Signal<String> {
        Signal.create { s in
            s.sendNext(first)
            scheduler.afterDelay(delay) {
                log("\(second) sent")
                s.sendNext(second)
            }
            return nil
        }
    }
    return Signal.create { s in
        s.sendNext(inner("nancy", "botwen"))
        s.sendNext(inner("jiang", "longjian"))
        s.sendCompleted()
        return nil
    }
}

@Suite struct SwitchToLatestTimedSeedTests {
    @Test func testL01_switchToLatestDropsOldInner() {
        let ts = TestScheduler(), log = SeedLog()
        Seeds.record(namesOuter(delay: 0.5, on: ts, log: log).switchToLatest(), into: log, clock: ts)
        ts.advance(by: 10)
        #expect(log.entries == [
            "[0.0s] next(nancy)", "[0.0s] next(jiang)", "botwen sent", "longjian sent", "[0.5s] next(longjian)",
        ])  // and no completion: S2 never completes
    }
}

final class SwitchToLatestMainLoopSeedTests: XCTestCase {
    /// L01 on the real main loop, 0.5 s scaled to 0.0125 s.
    func testL01_switchToLatestDropsOldInner_mainLoop() {
        let log = SeedLog()
        Seeds.record(namesOuter(delay: 0.0125, on: Scheduler.main, log: log).switchToLatest(), into: log)
        XCTAssertTrue(Seeds.runMain(until: "next(longjian)", in: log))
        Seeds.drainMain()
        XCTAssertEqual(log.entries, ["next(nancy)", "next(jiang)", "botwen sent", "longjian sent", "next(longjian)"])
    }
}

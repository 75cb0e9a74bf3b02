// KNOWN LIBRARY BUGS found by the seed conformance tests.
//
// Each test here states the contract (shared/SEED-CASES.md, RAC2-CATALOGUE.md) and is
// wrapped in `withKnownIssue`, so the suite stays green while the bug exists and a test
// *fails* ("known issue was not recorded") once the library is fixed: then move it back
// into its seed file without the wrapper.
//
// Bug 1 — operators that give a source the downstream's whole lifetime.
//   `Signal.create`'s `Subscriber` disposes the lifetime it was attached with when it sends
//   a terminal event (Subscriber.swift, `sendCompleted`/`sendError`: `lifetime.dispose()`).
//   That is right for a linear chain, where the terminal event has already gone downstream,
//   but wrong where an operator attaches several sources to one shared lifetime or delivers
//   the event later:
//   - `Signal.zipAny` / `combineLatestAny` (Signal+Combining.swift: `signal.attach(...,
//     lifetime)` in the loop): the first `create` source to complete disposes the whole
//     subscription, silently (no terminal event), so C04 and C05 deliver nothing.
//   - `deliverOn` (Signal+Scheduling.swift: `source.attach(..., lifetime)`, then the scheduled
//     block checks `!lifetime.isDisposed`): a `create` source that completes disposes the
//     lifetime before the scheduled deliveries run, so they are all dropped (S16, S18).
//   - `deliverOnMainThread` and `delay` have the same shape (events queued or delayed, then
//     dropped because the lifetime was disposed by the source's completion).
//   Suggested fix: attach each source with `lifetime.child()` (as `flatten`, `concat`,
//   `timeout` and `retry` already do) and end the child instead of the whole lifetime.

import ReactiveUV
import Testing

@Suite struct KnownBugsSeedTests {
    /// C04 with subjects standing in for the timers (bug 1): expected one tuple, then
    /// completed; actual: nothing at all (the subscription is disposed when S1 completes).
    @Test func testC04_zip_subjects() {
        let log = SeedLog()
        let s1 = Signal<String>.create { s in
            s.sendNext("1")
            s.sendCompleted()
            return nil
        }
        let s2 = Subject<String>()
        Seeds.record(Signal.zip([s1, s2]), into: log)
        #expect(log.entries.isEmpty)
        s2.sendNext("2.1")
        s2.sendNext("2.2")
        withKnownIssue("bug 1: zip attaches every source to the shared lifetime") {
            #expect(log.entries == ["next([\"1\", \"2.1\"])", "completed"])
        }
    }

    /// C05 with subjects (bug 1): expected three tuples then completed; actual: nothing.
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
        withKnownIssue("bug 1: combineLatest attaches every source to the shared lifetime") {
            #expect(log.entries == [
                "next([\"1\", \"2.1\", \"3.1\"])", "next([\"1\", \"2.2\", \"3.1\"])", "next([\"1\", \"2.2\", \"3.2\"])",
                "before s3 completes", "completed",
            ])
        }
    }

    /// S16's `sync.deliverOn(scheduler)` on a hand-driven scheduler (bug 1): expected both
    /// values and the completion once the scheduler runs; actual: nothing.
    @Test func testS16_deliverOn_createSourceOnManualScheduler() {
        let log = SeedLog()
        let scheduler = ManualScheduler()
        Seeds.record(Seeds.sync().deliverOn(scheduler), into: log)
        #expect(log.entries.isEmpty)  // nothing before the scheduler runs
        scheduler.drain()
        withKnownIssue("bug 1: deliverOn drops events queued before a create source's completion") {
            #expect(log.entries == ["next(0)", "next(1)", "completed"])
        }
    }

    /// The same chain with `Signal.fromArray` (which does not dispose its lifetime) works,
    /// which isolates bug 1 to the create subscriber's disposal. Not a known issue: passes.
    @Test func testS16_deliverOn_fromArrayOnManualScheduler() {
        let log = SeedLog()
        let scheduler = ManualScheduler()
        Seeds.record(Signal.fromArray([0, 1]).deliverOn(scheduler), into: log)
        scheduler.drain()
        #expect(log.entries == ["next(0)", "next(1)", "completed"])
    }

    /// `delay` with a create source (bug 1): expected `0`, `1`, completed after the delay;
    /// actual: nothing (the pending delayed sends are disposed with the lifetime).
    @Test func testDelay_createSourceOnManualScheduler() {
        let log = SeedLog()
        let scheduler = ManualScheduler()
        Seeds.record(Seeds.sync().delay(1, on: scheduler), into: log)
        scheduler.drain()
        withKnownIssue("bug 1: delay's pending sends die with the lifetime the create source disposes") {
            #expect(log.entries == ["next(0)", "next(1)", "completed"])
        }
    }
}

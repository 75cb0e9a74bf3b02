// RAC 2 behaviours checked against ReactiveObjC's own source and specs (issue 13 §1), one
// test per behaviour, named after it. XCTest: several of them need the main loop.

import ReactiveUV
import XCTest

final class RACSemanticsTests: XCTestCase {
    // MARK: - Asynchronous waits run the main loop

    /// RAC's `-asynchronousFirstOrDefault:…` delivers its answer with
    /// `deliverOn:mainThreadScheduler`, so the main run loop always runs before it returns:
    /// a block queued on the main scheduler before the call has run, even when the signal
    /// answers synchronously (here: an error that `delay` passes on at once).
    func testAsynchronousWaitsAlwaysRunTheMainLoopBeforeReturning() {
        let log = SeedLog()
        Scheduler.main.schedule { log("queued before the wait ran") }
        XCTAssertThrowsError(try Signal<Int>.error(SeedError()).delay(0).asynchronousFirstOrDefault(7)) { error in
            XCTAssertEqual(error as? SeedError, SeedError())
        }
        XCTAssertEqual(log.entries, ["queued before the wait ran"], "the error answered at once; the loop still ran")

        Scheduler.main.schedule { log("queued before the value") }
        XCTAssertEqual(try Signal.return(3).asynchronousFirstOrDefault(7), 3)
        Scheduler.main.schedule { log("queued before completion") }
        XCTAssertNoThrow(try Signal<Int>.empty().asynchronouslyWaitUntilCompleted(timeout: 5))
        Scheduler.main.schedule { log("queued before the by-reference form") }
        var success = true
        var error: (any Error)?
        XCTAssertEqual(Signal<Int>.error(SeedError("ref", code: 2)).asynchronousFirstOrDefault(5, success: &success, error: &error), 5)
        XCTAssertFalse(success)
        XCTAssertEqual(error as? SeedError, SeedError("ref", code: 2))
        XCTAssertEqual(log.entries, [
            "queued before the wait ran", "queued before the value", "queued before completion",
            "queued before the by-reference form",
        ])
    }

    /// The answer comes after the blocks queued before it, in their order (first in, first
    /// out through the main scheduler).
    func testAsynchronousWaitsDeliverTheAnswerInMainSchedulerOrder() throws {
        let log = SeedLog()
        Scheduler.main.schedule { log("first") }
        Scheduler.main.schedule { log("second") }
        let value = try Signal.return(1).asynchronousFirstOrDefault(0)
        log("answer \(value)")
        XCTAssertEqual(log.entries, ["first", "second", "answer 1"])
    }

    /// An asynchronous wait on a signal that never answers times out with `timedOut`, and
    /// its subscription is disposed.
    func testAsynchronousWaitTimesOutAndDisposes() {
        let log = SeedLog()
        let never = Signal<Int>.create { _ in Disposable { log("disposed") } }
        XCTAssertThrowsError(try never.asynchronousFirstOrDefault(0, timeout: 0.05)) { error in
            XCTAssertEqual(error as? SignalError, .timedOut)
        }
        XCTAssertEqual(log.entries, ["disposed"])
    }

    /// Off the main thread an asynchronous wait cannot run the main loop: a clear error at
    /// once, not a misleading time-out.
    func testAsynchronousWaitOffTheMainThreadIsAClearError() {
        let result = SeedLog()
        let done = SeedLog()
        Scheduler.background().schedule {
            do {
                _ = try Signal.return(1).asynchronousFirstOrDefault(0, timeout: 5)
                result("returned")
            } catch let e as SignalError {
                if case .invalidScheduler = e { result("invalidScheduler") } else { result("\(e)") }
            } catch {
                result("\(error)")
            }
            done("done")
        }
        XCTAssertTrue(Seeds.wait { !done.entries.isEmpty })
        XCTAssertEqual(result.entries, ["invalidScheduler"])
    }

    // MARK: - A released Command completes all four of its signals

    /// RAC's `RACCommand` completes `executionSignals`, `executing`, `enabled` **and** `errors`
    /// once it is deallocated (its `errorsConnection` is never disposed, so the completion of
    /// `addedExecutionSignalsSubject` reaches `errors` on the main thread).
    func testReleasedCommandCompletesAllFourOfItsSignals() {
        let log = SeedLog()
        var command: Command<Int, Int>? = Command<Int, Int> { Signal.return($0) }
        weak let weakCommand = command
        command!.executionSignals.subscribe(completed: { log("executionSignals completed\(Seeds.thread)") })
        command!.executing.subscribe(completed: { log("executing completed\(Seeds.thread)") })
        command!.enabled.subscribe(completed: { log("enabled completed\(Seeds.thread)") })
        command!.errors.subscribe(completed: { log("errors completed\(Seeds.thread)") })
        command = nil
        XCTAssertNil(weakCommand, "the command should be deallocated once released")
        XCTAssertTrue(EventLoop.main.run(until: { log.entries.count == 4 }, timeout: 10), "\(log.entries)")
        Seeds.drainMain()
        XCTAssertEqual(Set(log.entries), [
            "executionSignals completed @main", "executing completed @main", "enabled completed @main",
            "errors completed @main",
        ])
        XCTAssertEqual(log.entries.count, 4, "each completes once")
    }

    /// A command released while an execution runs: `errors` still carries that execution's
    /// error, then completes (after the execution ended, as RAC's flattenMap does).
    func testReleasedCommandStillReportsARunningExecutionsErrorThenCompletes() {
        let log = SeedLog()
        let finish = Subject<Int>()
        var command: Command<Int, Int>? = Command<Int, Int> { _ in finish }
        command!.errors.subscribe(next: { log("errors next(\($0))") }, completed: { log("errors completed") })
        command!.execute(1)
        XCTAssertTrue(Seeds.drainMain(), "the execution subscribes on the main loop")
        command = nil
        finish.sendError(SeedError("late", code: 3))
        XCTAssertTrue(Seeds.runMain(until: "errors completed", in: log))
        XCTAssertEqual(log.entries, ["errors next(SeedError(late, 3))", "errors completed"])
    }

    // MARK: - concat()/flatten(n) finish in step

    /// When the last inner completes synchronously inside its own subscription block, the
    /// result completes and the outer subscription is disposed **before that block
    /// returns** (RAC's `-flatten:` sends completed from the inner's completion).
    func testConcatFinishesInStep() {
        let log = SeedLog()
        let gate = Subject<Int>()  // holds the first inner open, so the last one waits in the queue
        let subscription = SubscriptionBox()
        let last = Signal<Int>.create { s in
            s.sendNext(3)
            s.sendCompleted()
            log("last inner's block returns; subscription disposed: \(subscription.isDisposed)")
            return nil
        }
        let outer = Signal<Signal<Int>>.create { s in
            s.sendNext(gate)
            s.sendNext(last)
            s.sendCompleted()
            return Disposable { log("outer disposed") }
        }
        subscription.disposable = outer.concat()
            .on(disposed: { log("result disposed") })
            .subscribe(next: { log("next \($0)") }, completed: { log("completed") })
        XCTAssertEqual(log.entries, ["outer disposed"], "the outer completed at once")
        gate.sendNext(1)
        gate.sendCompleted()
        XCTAssertEqual(log.entries, [
            "outer disposed", "next 1", "next 3", "completed", "result disposed",
            "last inner's block returns; subscription disposed: true",
        ])
    }

    /// The same for `flatten(2)`: the last inner, started from the queue when a slot frees,
    /// ends the other running inner and then itself inside its own block.
    func testFlattenWithALimitFinishesInStep() {
        let log = SeedLog()
        let gateA = Subject<Int>()
        let gateB = Subject<Int>()
        let subscription = SubscriptionBox()
        let last = Signal<Int>.create { s in
            s.sendNext(3)
            gateB.sendCompleted()
            s.sendCompleted()
            log("last inner's block returns; subscription disposed: \(subscription.isDisposed)")
            return nil
        }
        let outer = Signal<Signal<Int>>.create { s in
            s.sendNext(gateA)
            s.sendNext(gateB)
            s.sendNext(last)
            s.sendCompleted()
            return Disposable { log("outer disposed") }
        }
        subscription.disposable = outer.flatten(2)
            .on(disposed: { log("result disposed") })
            .subscribe(next: { log("next \($0)") }, completed: { log("completed") })
        gateA.sendNext(1)
        gateB.sendNext(2)
        gateA.sendCompleted()
        XCTAssertEqual(log.entries, [
            "outer disposed", "next 1", "next 2", "next 3", "completed", "result disposed",
            "last inner's block returns; subscription disposed: true",
        ])
    }

    /// A long synchronous chain of queued inners finishes without growing the stack: the
    /// queue is drained in a loop, and the in-step completion happens in the frame of the
    /// last one (200,000 frames deep would crash the 8 MiB main stack).
    func testConcatOfADeepSynchronousChainDoesNotGrowTheStack() {
        let gate = Subject<Int>()
        let count = 200_000
        let outer = Signal<Signal<Int>>.create { s in
            s.sendNext(gate)
            for i in 0..<count { s.sendNext(Signal.return(i)) }
            s.sendCompleted()
            return nil
        }
        var received = 0
        var lastValue = -1
        var completions = 0
        let d = outer.concat().subscribe(next: { v in
            received += 1
            lastValue = v
        }, completed: { completions += 1 })
        XCTAssertEqual(received, 0)
        gate.sendCompleted()
        XCTAssertEqual(received, count)
        XCTAssertEqual(lastValue, count - 1)
        XCTAssertEqual(completions, 1)
        d.dispose()
    }

    // MARK: - A terminated subject used as a subscriber

    /// RAC subscribes a disposed subscriber all the same: the signal's subscription block
    /// runs, its sends go nowhere, and the disposable it returns is disposed at once (the
    /// subscriber disposed the subscription in `didSubscribeWithDisposable:`).
    func testTerminatedSubjectUsedAsSubscriberStillRunsTheSubscriptionBlockAndDisposesAtOnce() {
        let log = SeedLog()
        let subject = Subject<Int>()
        subject.subscribe(next: { log("subject next \($0)") }, completed: { log("subject completed") })
        subject.sendCompleted()
        let signal = Signal<Int>.create { s in
            log("block ran")
            s.sendNext(1)
            s.sendCompleted()
            log("block returns")
            return Disposable { log("block's disposable disposed") }
        }
        let d = signal.subscribe(subject)
        XCTAssertTrue(d.isDisposed)
        XCTAssertEqual(log.entries, ["subject completed", "block ran", "block returns", "block's disposable disposed"])
    }

    // MARK: - switchToLatest accepts nil inners

    /// RAC's `-switchToLatest` accepts nil inners: nil is an empty signal, so it ends the
    /// previous inner and, once the outer completes, lets the result complete.
    func testSwitchToLatestAcceptsNilInners() {
        let log = SeedLog()
        let outer = Subject<Signal<Int>?>()
        let inner = Subject<Int>()
        let d = outer.switchToLatest().subscribe(next: { log("next \($0)") }, completed: { log("completed") })
        outer.sendNext(inner)
        inner.sendNext(1)
        outer.sendNext(nil)
        inner.sendNext(2)  // the previous inner was switched away from
        XCTAssertEqual(log.entries, ["next 1"])
        outer.sendCompleted()
        XCTAssertEqual(log.entries, ["next 1", "completed"], "a nil inner is complete at once")
        d.dispose()
    }

    /// `flatten` skips nil inners too (RAC's `-flatten:` returns early on nil).
    func testFlattenSkipsNilInners() throws {
        let outer = Signal<Signal<Int>?>.fromArray([Signal.return(1), nil, Signal.return(2)])
        XCTAssertEqual(try outer.flatten().toArray(), [1, 2])
        XCTAssertEqual(try outer.flatten(1).toArray(), [1, 2])
    }
}

/// The disposable of a subscription, readable from inside that subscription's own blocks.
private final class SubscriptionBox {
    var disposable: Disposable?
    var isDisposed: Bool { disposable?.isDisposed ?? false }
}

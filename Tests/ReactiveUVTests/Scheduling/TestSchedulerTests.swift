import CSystemShims
import XCTest

@testable import ReactiveUV

/// The virtual-time scheduler: deterministic order, exact windows, cancellation, repetition.
final class TestSchedulerTests: XCTestCase {
    private let second: UInt64 = 1_000_000_000

    func testOrderIsByTimeThenFIFO() {
        let scheduler = TestScheduler()
        var order: [String] = []
        let t0 = scheduler.now
        scheduler.after(t0.advanced(by: 3)) { order.append("3s") }
        scheduler.after(t0.advanced(by: 1)) { order.append("1s a") }
        scheduler.schedule { order.append("now a") }
        scheduler.after(t0.advanced(by: 1)) { order.append("1s b") }
        scheduler.after(t0.advanced(by: 2)) { order.append("2s") }
        scheduler.schedule { order.append("now b") }
        scheduler.afterDelay(1) { order.append("1s c") }
        XCTAssertEqual(order, [], "nothing runs until the clock is advanced")
        XCTAssertEqual(scheduler.pendingCount, 7)
        scheduler.advance(by: 10)
        XCTAssertEqual(order, ["now a", "now b", "1s a", "1s b", "1s c", "2s", "3s"])
        XCTAssertEqual(scheduler.now.nanoseconds, 10 * second)
        XCTAssertEqual(scheduler.pendingCount, 0)
    }

    func testAdvanceRunsExactlyTheDueActions() {
        let scheduler = TestScheduler()
        var fired: [Int] = []
        scheduler.afterDelay(1) { fired.append(1) }
        scheduler.afterDelay(2) { fired.append(2) }
        scheduler.afterDelay(3) { fired.append(3) }

        scheduler.advance()
        XCTAssertEqual(fired, [])
        scheduler.advance(by: 1.5)
        XCTAssertEqual(fired, [1])
        XCTAssertEqual(scheduler.now.nanoseconds, 1_500_000_000)
        scheduler.advance(byNanoseconds: 499_999_999)
        XCTAssertEqual(fired, [1], "one nanosecond short of the 2 s action")
        scheduler.advance(byNanoseconds: 1)
        XCTAssertEqual(fired, [1, 2], "an action due exactly at the window's end runs")
        scheduler.advance(to: SchedulerTime(nanoseconds: 3 * second))
        XCTAssertEqual(fired, [1, 2, 3])
        XCTAssertEqual(scheduler.now.nanoseconds, 3 * second)
        scheduler.advance(to: SchedulerTime(nanoseconds: second))
        XCTAssertEqual(scheduler.now.nanoseconds, 3 * second, "time never goes back")
        scheduler.advance(by: -5)
        XCTAssertEqual(scheduler.now.nanoseconds, 3 * second)
    }

    func testActionsRunAtTheirOwnTimeWithCurrentSet() {
        let scheduler = TestScheduler()
        var seen: [(UInt64, Bool)] = []
        for delay in [0.25, 0.5, 0.75] {
            scheduler.afterDelay(delay) { seen.append((scheduler.now.nanoseconds, Scheduler.current === scheduler)) }
        }
        scheduler.advance(by: 1)
        XCTAssertEqual(seen.map(\.0), [250_000_000, 500_000_000, 750_000_000])
        XCTAssertEqual(seen.map(\.1), [true, true, true])
        XCTAssertTrue(Scheduler.current === Scheduler.main, "restored after the action")
    }

    func testDisposalCancels() {
        let scheduler = TestScheduler()
        var fired: [String] = []
        let a = scheduler.schedule { fired.append("a") }
        let b = scheduler.afterDelay(1) { fired.append("b") }
        scheduler.afterDelay(1) { fired.append("c") }
        let r = scheduler.after(scheduler.now, repeatingEvery: 0.1) { fired.append("r") }
        XCTAssertEqual(scheduler.pendingCount, 4)
        a?.dispose()
        b?.dispose()
        r?.dispose()
        XCTAssertEqual(scheduler.pendingCount, 1)
        b?.dispose()
        XCTAssertEqual(scheduler.pendingCount, 1, "disposing twice changes nothing")
        scheduler.advance(by: 2)
        XCTAssertEqual(fired, ["c"])
        XCTAssertEqual(scheduler.pendingCount, 0)
    }

    func testDisposingAfterTheSchedulerIsGoneDoesNothing() {
        var scheduler: TestScheduler? = TestScheduler()
        weak let weakScheduler = scheduler
        let d = scheduler?.afterDelay(1) {}
        scheduler = nil
        XCTAssertNil(weakScheduler, "queued actions do not keep their scheduler alive")
        d?.dispose()
        XCTAssertEqual(d?.isDisposed, true)
    }

    func testRepeating() {
        let scheduler = TestScheduler()
        var ticks: [UInt64] = []
        let d = scheduler.after(scheduler.now.advanced(by: 1), repeatingEvery: 1) {
            ticks.append(scheduler.now.nanoseconds)
        }
        scheduler.advance(by: 3.5)
        XCTAssertEqual(ticks, [1 * second, 2 * second, 3 * second])
        XCTAssertEqual(scheduler.pendingCount, 1, "a repeating action counts once")
        d?.dispose()
        XCTAssertEqual(scheduler.pendingCount, 0)
        scheduler.advance(by: 10)
        XCTAssertEqual(ticks.count, 3)
    }

    func testRepeatingDisposedFromItsOwnAction() {
        let scheduler = TestScheduler()
        var ticks = 0
        var d: Disposable?
        d = scheduler.after(scheduler.now, repeatingEvery: 0.5) {
            ticks += 1
            if ticks == 4 { d?.dispose() }
        }
        scheduler.advance(by: 100)
        XCTAssertEqual(ticks, 4)
        XCTAssertEqual(scheduler.pendingCount, 0)
    }

    func testRepeatingInterleavesWithOtherActionsAtTheSameTime() {
        let scheduler = TestScheduler()
        var order: [String] = []
        let d = scheduler.after(scheduler.now.advanced(by: 1), repeatingEvery: 1) { order.append("tick@\(scheduler.now.nanoseconds / 1_000_000_000)") }
        scheduler.afterDelay(2) { order.append("once@2") }
        scheduler.advance(by: 2)
        // The tick for 2 s was queued when the 1 s tick ran, after "once@2" was.
        XCTAssertEqual(order, ["tick@1", "once@2", "tick@2"])
        d?.dispose()
    }

    func testNestedSchedulingInsideActions() {
        let scheduler = TestScheduler()
        var order: [String] = []
        scheduler.afterDelay(1) {
            order.append("outer@1")
            scheduler.schedule { order.append("now@\(scheduler.now.nanoseconds / 100_000_000)") }
            scheduler.afterDelay(0.5) { order.append("inner@15") }
            scheduler.afterDelay(5) { order.append("late@6") }
            // Advancing from inside an action does nothing: actions never nest.
            scheduler.advance(by: 100)
            order.append("outer end")
        }
        scheduler.advance(by: 2)
        XCTAssertEqual(order, ["outer@1", "outer end", "now@10", "inner@15"])
        XCTAssertEqual(scheduler.now.nanoseconds, 2 * second)
        XCTAssertEqual(scheduler.pendingCount, 1)
        scheduler.advance(by: 4)
        XCTAssertEqual(order.last, "late@6")
    }

    func testStepAndStepAllAndRun() {
        let scheduler = TestScheduler()
        var fired: [Int] = []
        scheduler.afterDelay(2) { fired.append(2) }
        scheduler.afterDelay(1) { fired.append(1) }
        scheduler.afterDelay(3) {
            fired.append(3)
            scheduler.afterDelay(1) { fired.append(4) }
        }
        scheduler.step()
        XCTAssertEqual(fired, [1])
        XCTAssertEqual(scheduler.now.nanoseconds, second, "step moves the clock to the action")
        scheduler.step(0)
        XCTAssertEqual(fired, [1])
        scheduler.step(2)
        XCTAssertEqual(fired, [1, 2, 3])
        scheduler.stepAll()
        XCTAssertEqual(fired, [1, 2, 3, 4])
        XCTAssertEqual(scheduler.now.nanoseconds, 4 * second)
        scheduler.step()
        XCTAssertEqual(fired, [1, 2, 3, 4], "step on an empty queue does nothing")

        scheduler.afterDelay(10) { fired.append(5) }
        scheduler.run()
        XCTAssertEqual(fired, [1, 2, 3, 4, 5])
        XCTAssertEqual(scheduler.now.nanoseconds, 14 * second)
    }

    func testRunIsBoundedWithRepeatingActions() {
        let scheduler = TestScheduler()
        var ticks = 0
        let d = scheduler.after(scheduler.now, repeatingEvery: 1) { ticks += 1 }
        scheduler.step(1_000)
        XCTAssertEqual(ticks, 1_000)
        XCTAssertEqual(scheduler.now.nanoseconds, 999 * second)
        d?.dispose()
        scheduler.run()
        XCTAssertEqual(ticks, 1_000)
    }

    func testScheduleRecursiveDepth100000() {
        let scheduler = TestScheduler()
        var count = 0
        scheduler.scheduleRecursive { reschedule in
            count += 1
            if count < 100_000 { reschedule() }
        }
        scheduler.advance()
        XCTAssertEqual(count, 100_000)
        XCTAssertEqual(scheduler.pendingCount, 0)
    }

    func testScheduleRecursiveDisposalStopsIt() {
        let scheduler = TestScheduler()
        var count = 0
        let d = scheduler.scheduleRecursive { reschedule in
            count += 1
            reschedule()
        }
        scheduler.step(10)
        XCTAssertEqual(count, 10)
        d.dispose()
        scheduler.advance()
        XCTAssertEqual(count, 10)
        XCTAssertEqual(scheduler.pendingCount, 0)
    }

    func testSchedulingFromManyThreadsRunsOnTheAdvancingThread() {
        let scheduler = TestScheduler()
        let ranOffThread = Locked(0)
        let ran = Locked(0)
        let threads = (0..<4).map { _ in
            TestThread {
                for _ in 0..<1_000 {
                    scheduler.afterDelay(0.001) {
                        if !csys_thread_is_main() { ranOffThread.withLock { $0 += 1 } }
                        ran.withLock { $0 += 1 }
                    }
                }
            }
        }
        threads.forEach { $0.join() }
        XCTAssertEqual(ran.value, 0)
        XCTAssertEqual(scheduler.pendingCount, 4_000)
        scheduler.advance(by: 1)
        XCTAssertEqual(ran.value, 4_000)
        XCTAssertEqual(ranOffThread.value, 0)
    }

    func testPastTimesRunAtTheNextAdvanceBeforeLaterOnes() {
        let scheduler = TestScheduler()
        var order: [String] = []
        scheduler.advance(by: 5)
        scheduler.schedule { order.append("now") }
        scheduler.after(SchedulerTime(nanoseconds: second)) { order.append("past") }
        scheduler.advance()
        XCTAssertEqual(order, ["past", "now"])
        XCTAssertEqual(scheduler.now.nanoseconds, 5 * second)
    }
}

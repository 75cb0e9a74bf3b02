import CSystemShims
import Glibc
import XCTest

@testable import ReactiveUV

/// `Scheduler.main` and `Scheduler.background()` on the real loops.
final class LoopSchedulerTests: XCTestCase {
    func testMainScheduleEnqueuesAndRunsInFIFOOrder() {
        let order = Confined<[Int]>([])
        let currents = Confined<[Bool]>([])
        for i in 1...5 {
            Scheduler.main.schedule {
                order.value.append(i)
                currents.value.append(Scheduler.current === Scheduler.main && csys_thread_is_main())
            }
        }
        XCTAssertEqual(order.value, [], "schedule on the main scheduler never runs inline")
        XCTAssertTrue(EventLoop.main.hasQueuedWork)
        XCTAssertTrue(runMainLoop { order.value.count == 5 })
        XCTAssertEqual(order.value, [1, 2, 3, 4, 5])
        XCTAssertEqual(currents.value, Array(repeating: true, count: 5))
    }

    func testMainIsCurrentOnTheMainThreadAndNilElsewhere() {
        XCTAssertTrue(Scheduler.current === Scheduler.main)
        XCTAssertTrue(Scheduler.main.loop === EventLoop.main)
        XCTAssertTrue(Scheduler.main === Scheduler.main)
        let elsewhere = Locked(true)
        TestThread { elsewhere.withLock { $0 = Scheduler.current == nil } }.join()
        XCTAssertTrue(elsewhere.value)
        XCTAssertNil(Scheduler.immediate.loop)
    }

    func testDisposedMainBlockNeverRuns() {
        let ran = Confined<[String]>([])
        let d = Scheduler.main.schedule { ran.value.append("disposed") }
        Scheduler.main.schedule { ran.value.append("kept") }
        d?.dispose()
        XCTAssertTrue(runMainLoop { ran.value.contains("kept") })
        runMainLoop(for: 0.01)
        XCTAssertEqual(ran.value, ["kept"])
    }

    func testCurrentInsideABackgroundScheduler() {
        let bg = Scheduler.background(name: "test.bg")
        XCTAssertEqual(bg.name, "test.bg")
        let seen = Locked<(current: Bool, main: Bool, loopThread: Bool)?>(nil)
        bg.schedule {
            seen.withLock { $0 = (Scheduler.current === bg, csys_thread_is_main(), bg.loop?.isCurrentThread ?? false) }
        }
        XCTAssertTrue(runMainLoop { seen.value != nil })
        XCTAssertEqual(seen.value?.current, true)
        XCTAssertEqual(seen.value?.main, false)
        XCTAssertEqual(seen.value?.loopThread, true)
    }

    /// RAC's `+schedulerWithPriority:name:`: each priority has its own pool threads, run at
    /// that priority's nice value (a hint: `.high` needs privilege to go below the default).
    func testBackgroundPrioritiesRunOnTheirOwnThreadsAtTheirNiceValues() {
        struct Seen: Sendable {
            let nice: Int32
            let thread: Int64
            let isCurrent: Bool
            let ownLoop: Bool
        }
        let seen = Locked<[Scheduler.Priority: Seen]>([:])
        for priority in Scheduler.Priority.allCases {
            let scheduler = Scheduler.background(priority: priority, name: "test.\(priority)")
            XCTAssertEqual(scheduler.name, "test.\(priority)")
            scheduler.schedule {
                let entry = Seen(
                    nice: csys_thread_nice(), thread: csys_thread_id(), isCurrent: Scheduler.current === scheduler,
                    ownLoop: EventLoop.currentThreadLoop === scheduler.loop)
                seen.withLock { $0[priority] = entry }
            }
        }
        XCTAssertTrue(runMainLoop { seen.value.count == 4 })
        let all = seen.value
        guard let high = all[.high], let normal = all[.default], let low = all[.low], let background = all[.background] else {
            return XCTFail("not every priority ran: \(all.keys)")
        }
        XCTAssertEqual(Set([high.thread, normal.thread, low.thread, background.thread]).count, 4, "one pool per priority")
        for entry in [high, normal, low, background] {
            XCTAssertTrue(entry.isCurrent)
            XCTAssertTrue(entry.ownLoop, "a priority pool's thread knows its loop (blocking operators need it)")
        }
        XCTAssertLessThanOrEqual(high.nice, normal.nice)
        XCTAssertLessThan(normal.nice, low.nice)
        XCTAssertLessThan(low.nice, background.nice)
        if normal.nice <= 5 {
            XCTAssertEqual(low.nice, 5)
            XCTAssertEqual(background.nice, 10)
        }
    }

    func testBackgroundSchedulersAreDistinctAndEachSerial() {
        let a = Scheduler.background()
        let b = Scheduler.background()
        XCTAssertFalse(a === b)
        let blocks = 2_000
        struct Track {
            var order: [Int] = []
            var overlaps = 0
            var wrongCurrent = 0
        }
        for scheduler in [a, b] {
            let inside = UnsafeAtomicInt(0)
            let track = Locked(Track())
            let done = Latch()
            for i in 0..<blocks {
                scheduler.schedule {
                    if inside.fetchAdd(1) != 0 { track.withLock { $0.overlaps += 1 } }
                    if Scheduler.current !== scheduler { track.withLock { $0.wrongCurrent += 1 } }
                    track.withLock { $0.order.append(i) }
                    csys_thread_yield()
                    inside.fetchSub(1)
                    if i == blocks - 1 { done.countDown() }
                }
            }
            XCTAssertTrue(done.wait(timeout: 30))
            XCTAssertEqual(track.value.order, Array(0..<blocks))
            XCTAssertEqual(track.value.overlaps, 0)
            XCTAssertEqual(track.value.wrongCurrent, 0)
            inside.destroy()
        }
    }

    func testBackgroundSchedulersStaySerialWhenFedFromManyThreads() {
        let bg = Scheduler.background()
        let inside = UnsafeAtomicInt(0)
        defer { inside.destroy() }
        let overlaps = Locked(0)
        let count = Locked(0)
        let feeders = (0..<4).map { _ in
            TestThread {
                for _ in 0..<2_500 {
                    bg.schedule {
                        if inside.fetchAdd(1) != 0 { overlaps.withLock { $0 += 1 } }
                        count.withLock { $0 += 1 }
                        inside.fetchSub(1)
                    }
                }
            }
        }
        feeders.forEach { $0.join() }
        XCTAssertTrue(runMainLoop { count.value == 10_000 })
        XCTAssertEqual(overlaps.value, 0)
    }

    func testAfterDelayOnMainFiresNotBeforeItsDeadline() {
        let scheduled = Scheduler.main.now
        let deadline = scheduled.advanced(by: 0.02)
        let firedAt = Confined<[SchedulerTime]>([])
        Scheduler.main.after(deadline) { firedAt.value.append(SchedulerTime.monotonicNow) }
        Scheduler.main.afterDelay(0.01) { firedAt.value.append(SchedulerTime.monotonicNow) }
        XCTAssertTrue(runMainLoop { firedAt.value.count == 2 })
        XCTAssertGreaterThanOrEqual(firedAt.value[0], scheduled.advanced(by: 0.01), "the shorter delay fires first")
        XCTAssertGreaterThanOrEqual(firedAt.value[1], deadline)
    }

    func testAfterDelayOnBackgroundFiresNotBeforeItsDeadline() {
        let bg = Scheduler.background()
        let deadline = bg.now.advanced(by: 0.02)
        let result = Locked<(at: SchedulerTime, current: Bool)?>(nil)
        bg.after(deadline) { result.withLock { $0 = (SchedulerTime.monotonicNow, Scheduler.current === bg) } }
        XCTAssertTrue(runMainLoop { result.value != nil })
        XCTAssertGreaterThanOrEqual(result.value!.at, deadline)
        XCTAssertTrue(result.value!.current)
    }

    func testDisposedAfterDelayNeverFires() {
        let bg = Scheduler.background()
        let ran = Locked<[String]>([])
        let d = bg.afterDelay(0.01) { ran.withLock { $0.append("disposed") } }
        d?.dispose()
        let m = Scheduler.main.afterDelay(0.01) { ran.withLock { $0.append("disposed main") } }
        m?.dispose()
        bg.afterDelay(0.03) { ran.withLock { $0.append("kept") } }
        XCTAssertTrue(runMainLoop { ran.value.contains("kept") })
        runMainLoop(for: 0.02)
        XCTAssertEqual(ran.value, ["kept"])
    }

    func testRepeatingOnMainStopsWhenDisposedFromItsOwnTick() {
        let ticks = Confined<[SchedulerTime]>([])
        let start = Scheduler.main.now.advanced(by: 0.005)
        let box = Confined<Disposable?>(nil)
        box.value = Scheduler.main.after(start, repeatingEvery: 0.005) {
            ticks.value.append(Scheduler.main.now)
            if ticks.value.count == 5 { box.value?.dispose() }
        }
        XCTAssertTrue(runMainLoop { ticks.value.count >= 5 })
        runMainLoop(for: 0.05)
        XCTAssertEqual(ticks.value.count, 5, "no tick after dispose")
        XCTAssertGreaterThanOrEqual(ticks.value[0], start)
        for (i, tick) in ticks.value.enumerated() {
            XCTAssertGreaterThanOrEqual(tick, start.advanced(by: 0.005 * Double(i)), "tick \(i) came early")
        }
    }

    func testRepeatingOnMainStopsWhenDisposedBetweenTicks() {
        let ticks = Confined(0)
        let tickAfterDispose = Confined(false)
        let disposed = Confined(false)
        let d = Scheduler.main.after(Scheduler.main.now, repeatingEvery: 0.005) {
            if disposed.value { tickAfterDispose.value = true }
            ticks.value += 1
        }
        XCTAssertTrue(runMainLoop { ticks.value >= 3 })
        d?.dispose()
        disposed.value = true
        runMainLoop(for: 0.05)
        XCTAssertFalse(tickAfterDispose.value)
    }

    func testRepeatingOnBackgroundStopsAfterDispose() {
        let bg = Scheduler.background()
        let ticks = Locked(0)
        let startedAfterDispose = Locked(0)
        let disposeReturned = UnsafeAtomicFlag()
        defer { disposeReturned.destroy() }
        let d = bg.after(bg.now, repeatingEvery: 0.005) {
            if disposeReturned.isSet { startedAfterDispose.withLock { $0 += 1 } }
            ticks.withLock { $0 += 1 }
        }
        XCTAssertTrue(runMainLoop { ticks.value >= 3 })
        // Disposed from a foreign thread (this one): a tick already under way on the
        // background thread may finish, but none starts after dispose() returned.
        d?.dispose()
        _ = disposeReturned.set()
        runMainLoop(for: 0.05)
        XCTAssertLessThanOrEqual(startedAfterDispose.value, 1, "at most the tick already in flight")

        // Disposed on the scheduler itself (no tick can be in flight): strictly none after.
        let ticks2 = Locked(0)
        let after = Locked(0)
        let flag = Locked(false)
        let d2 = bg.after(bg.now, repeatingEvery: 0.005) {
            if flag.value { after.withLock { $0 += 1 } }
            ticks2.withLock { $0 += 1 }
        }
        XCTAssertTrue(runMainLoop { ticks2.value >= 3 })
        let disposedOnBackground = Latch()
        bg.schedule {
            d2?.dispose()
            flag.withLock { $0 = true }
            disposedOnBackground.countDown()
        }
        XCTAssertTrue(disposedOnBackground.wait(timeout: 30))
        runMainLoop(for: 0.05)
        XCTAssertEqual(after.value, 0)
    }

    func testScheduleRecursiveDeepOnBackgroundDoesNotOverflowTheStack() {
        let bg = Scheduler.background()
        let depth = 100_000
        let count = Locked(0)
        let done = Latch()
        bg.scheduleRecursive { reschedule in
            let n = count.withLock { c -> Int in
                c += 1
                return c
            }
            if n < depth { reschedule() } else { done.countDown() }
        }
        XCTAssertTrue(done.wait(timeout: 30))
        XCTAssertEqual(count.value, depth)
    }

    func testScheduleRecursiveOnMain() {
        let count = Confined(0)
        let d = Scheduler.main.scheduleRecursive { reschedule in
            count.value += 1
            if count.value < 1_000 { reschedule() }
        }
        XCTAssertTrue(runMainLoop { count.value == 1_000 })
        d.dispose()
    }

    func testOwnLoopSchedulerRunsOnThatLoop() throws {
        let loop = try EventLoop()
        let scheduler = loop.scheduler
        XCTAssertTrue(scheduler === loop.scheduler)
        XCTAssertTrue(scheduler.loop === loop)
        let seen = Confined<[String]>([])
        scheduler.schedule { seen.value.append(Scheduler.current === scheduler ? "schedule" : "wrong") }
        scheduler.afterDelay(0.005) { seen.value.append(Scheduler.current === scheduler ? "after" : "wrong") }
        XCTAssertTrue(loop.run(until: { seen.value.count == 2 }, timeout: 30))
        XCTAssertEqual(seen.value, ["schedule", "after"])
        XCTAssertNoThrow(try loop.close())
    }

    /// The loop knows nothing of schedulers: blocks of two schedulers on one loop, queued
    /// interleaved with plain `execute` work and a disposed block, each see their own
    /// scheduler as `Scheduler.current`; the plain work sees what the loop's thread had
    /// outside (here the immediate scheduler, set around the run), which is restored after.
    func testCurrentInsideInterleavedBlocksOfTwoSchedulersOnOneLoop() throws {
        let loop = try EventLoop()
        let first = loop.scheduler
        let second: Scheduler = LoopScheduler(loop: loop, name: "test.second")
        let seen = Confined<[String]>([])
        let name: @Sendable (Scheduler?) -> String = { scheduler in
            if scheduler === first { return "first" }
            if scheduler === second { return "second" }
            if scheduler === Scheduler.immediate { return "outside" }
            return "other"
        }
        first.schedule { seen.value.append("1:" + name(Scheduler.current)) }
        second.schedule { seen.value.append("2:" + name(Scheduler.current)) }
        first.schedule { seen.value.append("3:" + name(Scheduler.current)) }
        first.schedule { seen.value.append("4:" + name(Scheduler.current)) }
        loop.execute { seen.value.append("5:" + name(Scheduler.current)) }
        let disposed = first.schedule { seen.value.append("disposed:" + name(Scheduler.current)) }
        second.schedule { seen.value.append("6:" + name(Scheduler.current)) }
        loop.execute { seen.value.append("7:" + name(Scheduler.current)) }
        second.schedule {
            // A block's own schedule goes to the next batch, still tagged with its scheduler.
            first.schedule { seen.value.append("9:" + name(Scheduler.current)) }
            seen.value.append("8:" + name(Scheduler.current))
        }
        disposed?.dispose()
        var finished = false
        var after = ""
        Scheduler.immediate.performAsCurrent {
            finished = loop.run(until: { seen.value.count == 9 }, timeout: 30)
            after = name(Scheduler.current)
        }
        XCTAssertTrue(finished)
        XCTAssertEqual(seen.value, [
            "1:first", "2:second", "3:first", "4:first", "5:outside", "6:second", "7:outside",
            "8:second", "9:first",
        ])
        XCTAssertEqual(after, "outside", "the loop restores the thread's context after its drain")
        XCTAssertTrue(Scheduler.current === Scheduler.main, "and performAsCurrent restores its own")
        XCTAssertNoThrow(try loop.close())
    }

    /// A queued block keeps its (non-immortal) scheduler alive until it has run, so
    /// `Scheduler.current` never names a freed scheduler; then the loop lets it go.
    func testQueuedBlockKeepsItsSchedulerAliveUntilItRan() throws {
        let loop = try EventLoop()
        let seen = Confined<[Bool]>([])
        let weak: WeakBox<Scheduler> = {
            let scheduler: Scheduler = LoopScheduler(loop: loop, name: "test.dropped")
            let box = WeakBox(scheduler)
            for _ in 0..<3 {
                scheduler.schedule { seen.value.append(Scheduler.current === box.object && box.object != nil) }
            }
            let cancelled = scheduler.schedule { seen.value.append(false) }
            cancelled?.dispose()
            return box
        }()
        XCTAssertNotNil(weak.object, "the queue holds the scheduler")
        XCTAssertTrue(loop.run(until: { seen.value.count == 3 }, timeout: 30))
        XCTAssertTrue(loop.run(until: { weak.object == nil }, timeout: 30), "released once its blocks ran or were skipped")
        XCTAssertEqual(seen.value, [true, true, true])
        XCTAssertNoThrow(try loop.close())
    }
}

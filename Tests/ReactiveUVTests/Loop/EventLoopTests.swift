import CLibUV
import CSystemShims
import Glibc
import XCTest

@testable import ReactiveUV

/// EventLoop: cross-thread work, timers, run/stop, re-entrance and closing. Each test that
/// makes its own loop closes it at the end and checks that `uv_loop_close` succeeded.
final class EventLoopTests: XCTestCase {
    func testExecuteFromFourThreadsRunsEverythingInOrderOnTheLoopThread() throws {
        let loop = try EventLoop()
        let perThread = 25_000
        // Touched only on the loop's thread (this one).
        let seen = Confined([[Int]](repeating: [], count: 4))
        let offThread = Confined(0)
        let threads = (0..<4).map { t in
            TestThread {
                for i in 0..<perThread {
                    loop.execute {
                        if !loop.isCurrentThread { offThread.value += 1 }
                        seen.value[t].append(i)
                    }
                }
            }
        }
        let done = loop.run(until: { seen.value.reduce(0) { $0 + $1.count } == 4 * perThread }, timeout: 30)
        threads.forEach { $0.join() }
        XCTAssertTrue(done)
        XCTAssertEqual(offThread.value, 0)
        for t in 0..<4 {
            XCTAssertEqual(seen.value[t].count, perThread)
            XCTAssertEqual(seen.value[t], Array(0..<perThread), "thread \(t)'s work ran out of order")
        }
        XCTAssertFalse(loop.hasQueuedWork)
        XCTAssertNoThrow(try loop.close())
    }

    func testExecuteAlwaysEnqueuesEvenOnTheLoopThread() throws {
        let loop = try EventLoop()
        let order = Confined<[String]>([])
        loop.execute { order.value.append("a") }
        order.value.append("after execute")
        XCTAssertTrue(loop.hasQueuedWork)
        loop.execute {
            order.value.append("b")
            loop.execute { order.value.append("d") }
            order.value.append("c")
        }
        XCTAssertTrue(loop.run(until: { order.value.count == 5 }, timeout: 30))
        XCTAssertEqual(order.value, ["after execute", "a", "b", "c", "d"])
        XCTAssertNoThrow(try loop.close())
    }

    func testTenThousandTimersFireInDeadlineOrder() throws {
        let loop = try EventLoop()
        var rng = SplitMix64(seed: 0x5EED)
        let count = 10_000
        let base = csys_monotonic_ns() + 20_000_000
        // Whole milliseconds plus a few sub-millisecond offsets: many exact ties, and many
        // deadlines inside the same millisecond (which libuv alone would not order).
        let offsets: [UInt64] = [0, 250_000, 500_000, 999_999]
        let deadlines = (0..<count).map { _ in
            base + (rng.next() % 50) * 1_000_000 + offsets[Int(rng.next() % 4)]
        }
        let fired = Confined<[Int]>([])
        let early = Confined(0)
        for (index, deadline) in deadlines.enumerated() {
            _ = loop.scheduleTimer(at: deadline, repeatEvery: nil) {
                if csys_monotonic_ns() < deadline { early.value += 1 }
                fired.value.append(index)
            }
        }
        XCTAssertTrue(loop.run(until: { fired.value.count == count }, timeout: 30))
        let expected = deadlines.indices.sorted { (deadlines[$0], $0) < (deadlines[$1], $1) }
        XCTAssertEqual(fired.value.count, count)
        XCTAssertTrue(fired.value == expected, "timers fired out of (deadline, scheduling) order")
        XCTAssertEqual(early.value, 0, "no timer fires before its deadline")
        XCTAssertNoThrow(try loop.close())
    }

    /// The prepare handle that runs due timers is started by a timer firing and stopped
    /// once none is due: a turn of the loop with no due timer makes no call for it.
    func testPrepareHandleRunsOnlyWhileTimersAreDue() throws {
        let loop = try EventLoop()
        let prepare = UnsafeRawPointer(loop.prepareHandle!).assumingMemoryBound(to: uv_handle_t.self)
        XCTAssertEqual(uv_is_active(prepare), 0, "started with no timer due")
        // Two rounds: the handle must start again after it was stopped.
        for round in 0..<2 {
            let fired = Confined<[Int]>([])
            let activeInBlocks = Confined<[Bool]>([])
            let now = csys_monotonic_ns()
            // Scheduled out of deadline order, 0.3 ms apart: the pass runs them by deadline.
            let deadlines: [UInt64] = [now + 10_300_000, now + 10_000_000, now + 12_000_000]
            for (index, deadline) in deadlines.enumerated() {
                _ = loop.scheduleTimer(at: deadline, repeatEvery: nil) {
                    activeInBlocks.value.append(uv_is_active(prepare) != 0)
                    fired.value.append(index)
                }
            }
            XCTAssertTrue(loop.run(until: { fired.value.count == 3 }, timeout: 30), "round \(round)")
            XCTAssertEqual(fired.value, [1, 0, 2], "round \(round)")
            XCTAssertEqual(activeInBlocks.value, [true, true, true], "round \(round): the handle is started while timers are due")
            // The pass that ran the last timer stopped the handle.
            XCTAssertEqual(uv_is_active(prepare), 0, "round \(round): still started with nothing due")
        }
        XCTAssertNoThrow(try loop.close())
    }

    func testTimerScheduledFromAnotherThreadFiresOnTheLoopThreadNotBeforeItsDeadline() throws {
        let loop = try EventLoop()
        let result = Locked<(fired: Bool, onLoop: Bool, early: Bool)>((false, false, false))
        let deadline = csys_monotonic_ns() + 15_000_000
        TestThread {
            _ = loop.scheduleTimer(at: deadline, repeatEvery: nil) {
                let now = csys_monotonic_ns()
                result.withLock { $0 = (true, loop.isCurrentThread, now < deadline) }
            }
        }.join()
        XCTAssertTrue(loop.run(until: { result.value.fired }, timeout: 30))
        XCTAssertTrue(result.value.onLoop)
        XCTAssertFalse(result.value.early)
        XCTAssertNoThrow(try loop.close())
    }

    func testDisposedWorkNeverRuns() throws {
        let loop = try EventLoop()
        let scheduler = loop.scheduler
        let ran = Confined<[String]>([])

        // A scheduled block disposed before the loop ran.
        let block = scheduler.schedule { ran.value.append("disposed block") }
        block?.dispose()
        XCTAssertEqual(block?.isDisposed, true)
        // A timer disposed on the loop thread before it fires.
        let timer = loop.scheduleTimer(at: csys_monotonic_ns() + 5_000_000, repeatEvery: nil) {
            ran.value.append("disposed timer")
        }
        timer.dispose()
        // A timer disposed from another thread, while the loop is not running.
        let remote = loop.scheduleTimer(at: csys_monotonic_ns() + 5_000_000, repeatEvery: nil) {
            ran.value.append("timer disposed elsewhere")
        }
        TestThread { remote.dispose() }.join()
        // A timer scheduled and disposed on another thread before it reached the loop.
        TestThread {
            loop.scheduleTimer(at: 0, repeatEvery: nil) { ran.value.append("never started") }.dispose()
        }.join()

        // Something that must run, after all of them.
        _ = loop.scheduleTimer(at: csys_monotonic_ns() + 30_000_000, repeatEvery: nil) { ran.value.append("last") }
        XCTAssertTrue(loop.run(until: { ran.value.contains("last") }, timeout: 30))
        XCTAssertEqual(ran.value, ["last"])
        XCTAssertNoThrow(try loop.close())
    }

    func testTimerDisposedFromAnotherThreadWhileTheLoopRuns() throws {
        let loop = try EventLoop()
        let ran = Locked<[String]>([])
        let timer = loop.scheduleTimer(at: csys_monotonic_ns() + 200_000_000, repeatEvery: nil) {
            ran.withLock { $0.append("disposed") }
        }
        let disposed = Latch()
        let other = TestThread {
            timer.dispose()
            disposed.countDown()
            loop.execute { ran.withLock { $0.append("after dispose") } }
        }
        _ = loop.scheduleTimer(at: csys_monotonic_ns() + 400_000_000, repeatEvery: nil) {
            ran.withLock { $0.append("last") }
        }
        XCTAssertTrue(loop.run(until: { ran.value.contains("last") }, timeout: 30))
        other.join()
        XCTAssertTrue(disposed.isOpen)
        XCTAssertEqual(ran.value, ["after dispose", "last"])
        XCTAssertNoThrow(try loop.close())
    }

    func testRunReturnsWhenNothingIsAlive() throws {
        let loop = try EventLoop()
        let watchdog = Watchdog(loop: loop)
        let ran = Confined<[String]>([])
        loop.execute { ran.value.append("work") }
        _ = loop.scheduleTimer(at: csys_monotonic_ns() + 10_000_000, repeatEvery: nil) {
            ran.value.append("timer")
            loop.execute { ran.value.append("work from timer") }
        }
        loop.run()
        XCTAssertFalse(watchdog.finish(), "run() did not return by itself")
        // Queued work and a due timer may run in either order (a slow start makes the timer
        // due in the first iteration); work the timer queued comes after it.
        XCTAssertEqual(Set(ran.value), ["work", "timer", "work from timer"])
        XCTAssertEqual(ran.value.count, 3)
        XCTAssertLessThan(ran.value.firstIndex(of: "timer")!, ran.value.firstIndex(of: "work from timer")!)
        XCTAssertNoThrow(try loop.close())
    }

    func testRunRunsWorkHandedInFromAnotherThreadBeforeReturning() throws {
        let loop = try EventLoop()
        let watchdog = Watchdog(loop: loop)
        let ran = Locked(0)
        // Work arrives while the loop has nothing alive of its own: run() keeps going for it.
        let producer = TestThread {
            for _ in 0..<1000 { loop.execute { ran.withLock { $0 += 1 } } }
        }
        producer.join()
        loop.run()
        XCTAssertFalse(watchdog.finish())
        XCTAssertEqual(ran.value, 1000)
        XCTAssertNoThrow(try loop.close())
    }

    func testStopFromAnotherThreadEndsRun() throws {
        let loop = try EventLoop()
        let watchdog = Watchdog(loop: loop)
        let ticking = Latch()
        let ticks = Confined(0)
        // A repeating timer keeps the loop alive forever.
        let timer = loop.scheduleTimer(at: csys_monotonic_ns(), repeatEvery: 2_000_000) {
            ticks.value += 1
            if ticks.value == 3 { ticking.countDown() }
        }
        let stopper = TestThread {
            if ticking.wait(timeout: 30) { loop.stop() }
        }
        loop.run()
        stopper.join()
        XCTAssertFalse(watchdog.finish(), "stop() from another thread did not end run()")
        XCTAssertGreaterThanOrEqual(ticks.value, 3)
        timer.dispose()
        XCTAssertNoThrow(try loop.close())
    }

    func testStopOnTheLoopThreadEndsRun() throws {
        let loop = try EventLoop()
        let watchdog = Watchdog(loop: loop)
        let timer = loop.scheduleTimer(at: csys_monotonic_ns(), repeatEvery: 1_000_000) {}
        loop.execute { loop.stop() }
        loop.run()
        // A stop made while no run() is active makes the next run() return at once.
        loop.stop()
        let ran = Confined(false)
        loop.execute {
            ran.value = true
            loop.stop()
        }
        loop.run()
        XCTAssertFalse(ran.value)
        // The stop was consumed by the run it ended: this one runs until the queued stop.
        loop.run()
        XCTAssertFalse(watchdog.finish())
        XCTAssertTrue(ran.value)
        timer.dispose()
        XCTAssertNoThrow(try loop.close())
    }

    func testRunUntilTimesOutWithoutReturningEarly() throws {
        let loop = try EventLoop()
        let start = csys_monotonic_ns()
        XCTAssertFalse(loop.run(until: { false }, timeout: 0.03))
        XCTAssertGreaterThanOrEqual(csys_monotonic_ns() - start, 30_000_000)
        XCTAssertTrue(loop.run(until: { true }, timeout: 0))
        XCTAssertNoThrow(try loop.close())
    }

    func testRunUntilNoticesWorkFromAnotherThread() throws {
        let loop = try EventLoop()
        let flag = Locked(false)
        let other = TestThread { loop.execute { flag.withLock { $0 = true } } }
        XCTAssertTrue(loop.run(until: { flag.value }, timeout: 30))
        other.join()
        XCTAssertNoThrow(try loop.close())
    }

    func testRunningFromInsideACallbackIsRefused() throws {
        let loop = try EventLoop()
        let results = Confined<[String]>([])
        loop.execute {
            results.value.append(loop.run(until: { false }, timeout: 1) ? "nested true" : "nested false")
            results.value.append(loop.runOnce() ? "once true" : "once false")
            results.value.append(loop.runNoWait() ? "nowait true" : "nowait false")
            loop.run()  // returns at once
            do {
                try loop.close()
                results.value.append("closed")
            } catch UVError.busy {
                results.value.append("close busy")
            } catch {
                results.value.append("close \(error)")
            }
        }
        XCTAssertTrue(loop.run(until: { results.value.count == 4 }, timeout: 30))
        XCTAssertEqual(results.value, ["nested false", "once false", "nowait false", "close busy"])
        XCTAssertFalse(loop.isClosed)
        XCTAssertNoThrow(try loop.close())
    }

    func testRunningFromAnotherThreadIsRefused() throws {
        let loop = try EventLoop()
        let results = Locked<[Bool]>([])
        TestThread {
            let a = loop.run(until: { false }, timeout: 1)
            let b = loop.runOnce()
            var closeFailed = false
            do { try loop.close() } catch { closeFailed = (error as? UVError)?.code == UV_EPERM.rawValue }
            results.withLock { $0 = [a, b, closeFailed] }
        }.join()
        XCTAssertEqual(results.value, [false, false, true])
        XCTAssertNoThrow(try loop.close())
    }

    func testRunOnceAndRunNoWait() throws {
        let loop = try EventLoop()
        let ran = Confined(0)
        XCTAssertFalse(loop.runNoWait(), "nothing alive, nothing queued")
        loop.execute { ran.value += 1 }
        XCTAssertTrue(loop.hasQueuedWork)
        loop.runOnce()
        XCTAssertEqual(ran.value, 1)
        loop.execute { ran.value += 1 }
        loop.runNoWait()
        XCTAssertEqual(ran.value, 2)
        XCTAssertNoThrow(try loop.close())
    }

    func testCloseClosesLiveTimersAndDropsLaterWork() throws {
        let loop = try EventLoop()
        let ran = Locked<[String]>([])
        _ = loop.scheduleTimer(at: csys_monotonic_ns() + 60_000_000_000, repeatEvery: nil) {
            ran.withLock { $0.append("far timer") }
        }
        _ = loop.scheduleTimer(at: csys_monotonic_ns(), repeatEvery: 1_000_000) {
            ran.withLock { $0.append("tick") }
        }
        // A scheduler created for the loop, and work queued but not yet run.
        _ = loop.scheduler.afterDelay(60) { ran.withLock { $0.append("far scheduled") } }
        loop.execute { ran.withLock { $0.append("queued before close") } }
        XCTAssertNoThrow(try loop.close())
        XCTAssertTrue(loop.isClosed)
        XCTAssertEqual(ran.value, ["queued before close"])
        loop.execute { ran.withLock { $0.append("after close") } }
        loop.run()
        XCTAssertFalse(loop.run(until: { false }, timeout: 0.01))
        XCTAssertEqual(ran.value, ["queued before close"])
        XCTAssertNoThrow(try loop.close(), "closing again does nothing")
    }

    func testCloseAlsoClosesHandlesItDoesNotKnow() throws {
        let loop = try EventLoop()
        // A raw libuv handle nobody registered: close() still closes it, so the loop closes.
        let raw = UnsafeMutablePointer<uv_timer_t>.allocate(capacity: 1)
        defer { raw.deallocate() }
        uv_timer_init(loop.uvLoop, raw)
        uv_timer_start(raw, { _ in }, 60_000, 0)
        XCTAssertNoThrow(try loop.close())
        XCTAssertNotEqual(uv_is_closing(EventLoop.handle(raw)), 0)
    }

    func testAdoptedLoopRunsWorkAndTimersUnderTheHostsRun() throws {
        // The "host": a uv_loop_t we own and run with uv_run, with its own handle alive.
        let host = UnsafeMutablePointer<uv_loop_t>.allocate(capacity: 1)
        defer { host.deallocate() }
        XCTAssertEqual(uv_loop_init(host), 0)
        let loop = try EventLoop(adopting: host)
        XCTAssertFalse(loop.isOwned)
        XCTAssertTrue(loop.isCurrentThread)

        let ran = Locked<[String]>([])
        // The host keeps its loop alive (a 1 ms repeating timer of its own) until our three
        // pieces of work have run, or 30 s passed, then stops its timer so uv_run returns.
        final class HostState {
            let ran: Locked<[String]>
            let giveUpAt = csys_monotonic_ns() + 30_000_000_000
            init(_ ran: Locked<[String]>) { self.ran = ran }
        }
        let state = Unmanaged.passRetained(HostState(ran))
        let hostTimer = UnsafeMutablePointer<uv_timer_t>.allocate(capacity: 1)
        defer { hostTimer.deallocate() }
        uv_timer_init(host, hostTimer)
        hostTimer.pointee.data = state.toOpaque()
        uv_timer_start(hostTimer, { timer in
            let state = Unmanaged<HostState>.fromOpaque(timer!.pointee.data!).takeUnretainedValue()
            if state.ran.value.count == 3 || csys_monotonic_ns() > state.giveUpAt { uv_timer_stop(timer) }
        }, 1, 1)

        let other = TestThread { loop.execute { ran.withLock { $0.append("from thread") } } }
        other.join()
        _ = loop.scheduleTimer(at: csys_monotonic_ns() + 5_000_000, repeatEvery: nil) {
            ran.withLock { $0.append("timer") }
        }
        loop.scheduler.schedule { ran.withLock { $0.append("scheduled") } }
        uv_run(host, UV_RUN_DEFAULT)
        XCTAssertEqual(ran.value.count, 3)
        XCTAssertEqual(Set(ran.value), ["from thread", "timer", "scheduled"])

        // Before the host closes its loop it closes ours; our close callbacks run on its run.
        XCTAssertNoThrow(try loop.close())
        uv_close(EventLoop.handle(hostTimer), nil)
        uv_run(host, UV_RUN_DEFAULT)
        state.release()
        XCTAssertEqual(uv_loop_close(host), 0, "every handle on the host loop closed")
    }

    func testMainLoopIsBoundToTheMainThread() {
        let main = EventLoop.main
        XCTAssertEqual(main.threadID, Int64(getpid()))
        XCTAssertTrue(main.isCurrentThread)
        XCTAssertTrue(main.isOwned)
        XCTAssertTrue(EventLoop.main === main)
        let elsewhere = Locked<(Bool, Int64, Bool)>((true, 0, false))
        TestThread {
            elsewhere.withLock { $0 = (EventLoop.main.isCurrentThread, EventLoop.main.threadID, EventLoop.main === main) }
        }.join()
        XCTAssertFalse(elsewhere.value.0)
        XCTAssertEqual(elsewhere.value.1, Int64(getpid()))
        XCTAssertTrue(elsewhere.value.2)
        XCTAssertTrue(main.scheduler === Scheduler.main)
    }

    func testBackgroundPoolLoopsRunOnTheirOwnThreads() {
        let loops = LoopPool.shared.loops
        XCTAssertEqual(loops.count, max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))))
        XCTAssertEqual(Set(loops.map(\.threadID)).count, loops.count, "one thread per loop")
        for loop in loops {
            XCTAssertNotEqual(loop.threadID, Int64(getpid()))
            XCTAssertFalse(loop.isCurrentThread)
        }
        let answered = Locked(0)
        for loop in loops {
            loop.execute {
                if loop.isCurrentThread && !csys_thread_is_main() { answered.withLock { $0 += 1 } }
            }
        }
        XCTAssertTrue(runMainLoop { answered.value == loops.count })
    }
}

import CSystemShims
import Glibc
import XCTest

@testable import ReactiveUV

/// Loop timers as signals: `interval` on the main loop and on a background loop (ticks in
/// order, none before its deadline, none after disposal) and the one-shot `timer`.
/// Assertions are about order, deadlines and counts, never about how fast ticks came.
final class TimerSignalTests: XCTestCase {
    let interval = 0.003
    var intervalNanoseconds: UInt64 { 3_000_000 }

    /// Tick k (counting from 1) is due at start + k × interval; a tick that fell behind is
    /// skipped, never sent early, so the k-th tick received is at or after that.
    func assertTicks(_ ticks: [SchedulerTime], after start: SchedulerTime, file: StaticString = #filePath, line: UInt = #line) {
        for (index, tick) in ticks.enumerated() {
            let due = start.nanoseconds + UInt64(index + 1) * intervalNanoseconds
            if tick.nanoseconds < due {
                XCTFail("tick \(index + 1) at \(tick) before its deadline \(due)ns", file: file, line: line)
                return
            }
        }
        XCTAssertEqual(ticks, ticks.sorted(), "ticks in order", file: file, line: line)
        XCTAssertEqual(Set(ticks).count, ticks.count, "no tick twice", file: file, line: line)
    }

    func testIntervalOnTheMainLoop() {
        let ticks = Confined<[SchedulerTime]>([])
        let onMain = Confined(true)
        let subscription = SerialDisposable()
        let start = Scheduler.main.now
        subscription.inner = Signal.interval(interval, on: .main).subscribeNext { time in
            if !csys_thread_is_main() { onMain.value = false }
            ticks.value.append(time)
            if ticks.value.count == 100 { subscription.dispose() }
        }
        XCTAssertTrue(runMainLoop(timeout: 60) { ticks.value.count >= 100 })
        // Twenty more intervals: nothing may arrive after the disposal.
        runMainLoop(for: 20 * interval)
        XCTAssertEqual(ticks.value.count, 100)
        XCTAssertTrue(onMain.value)
        assertTicks(ticks.value, after: start)
    }

    func testIntervalOnABackgroundLoopDisposedFromAnotherThread() {
        let scheduler = Scheduler.background()
        let loop = scheduler.loop!
        let ticks = Locked<[SchedulerTime]>([])
        let offLoop = Locked(0)
        let hundred = Latch()
        let start = scheduler.now
        let subscription = Signal.interval(interval, on: scheduler).subscribeNext { time in
            if !loop.isCurrentThread { offLoop.withLock { $0 += 1 } }
            let count = ticks.withLock { $0.append(time); return $0.count }
            if count == 100 { hundred.countDown() }
        }
        XCTAssertTrue(hundred.wait(timeout: 60))
        subscription.dispose()  // from this thread, while the loop keeps ticking
        let atDispose = ticks.value.count
        usleep(60_000)  // twenty intervals
        XCTAssertEqual(ticks.value.count, atDispose, "no tick after dispose() returned")
        XCTAssertGreaterThanOrEqual(atDispose, 100)
        XCTAssertEqual(offLoop.value, 0)
        assertTicks(ticks.value, after: start)
    }

    func testTimerSendsTheTimeOnceAndCompletesOnMainAndBackground() {
        let delay = 0.01
        let start = Scheduler.main.now
        let main = EventRecorder<SchedulerTime>(loop: .main)
        _ = main.subscribe(Signal.timer(delay, on: .main))
        XCTAssertTrue(runMainLoop(timeout: 60) { main.terminated })
        XCTAssertEqual(main.count, 2)
        XCTAssertEqual(main.events.last, .completed)
        XCTAssertGreaterThanOrEqual(main.values[0].nanoseconds, start.nanoseconds + 10_000_000, "not before the delay")
        XCTAssertTrue(main.allOnLoopThread)

        let scheduler = Scheduler.background()
        let backgroundStart = scheduler.now
        let background = EventRecorder<SchedulerTime>(loop: scheduler.loop)
        _ = background.subscribe(Signal.timer(delay, on: scheduler))
        XCTAssertTrue(background.wait { $0.last?.isTerminating == true })
        XCTAssertEqual(background.count, 2)
        XCTAssertEqual(background.events.last, .completed)
        XCTAssertGreaterThanOrEqual(background.values[0].nanoseconds, backgroundStart.nanoseconds + 10_000_000)
        XCTAssertTrue(background.allOnLoopThread)
    }

    func testTimerInVirtualTime() {
        let scheduler = TestScheduler()
        let recorder = EventRecorder<SchedulerTime>()
        _ = recorder.subscribe(Signal.timer(2, on: scheduler))
        scheduler.advance(by: 1.999)
        XCTAssertEqual(recorder.count, 0)
        scheduler.advance(by: 0.001)
        XCTAssertEqual(recorder.events, [.next(SchedulerTime(nanoseconds: 2_000_000_000)), .completed])
    }

    func testTimerDisposedBeforeItFiresSendsNothing() {
        let scheduler = TestScheduler()
        let recorder = EventRecorder<SchedulerTime>()
        let subscription = recorder.subscribe(Signal.timer(1, on: scheduler))
        subscription.dispose()
        scheduler.advance(by: 5)
        XCTAssertEqual(recorder.count, 0)

        let main = EventRecorder<SchedulerTime>()
        main.subscribe(Signal.timer(0.005, on: .main)).dispose()
        runMainLoop(for: 0.03)
        XCTAssertEqual(main.count, 0)
    }

    func testTimerRejectsTheImmediateSchedulerAndANegativeDelay() {
        let immediate = EventRecorder<SchedulerTime>()
        _ = immediate.subscribe(Signal.timer(1, on: .immediate))
        let negative = EventRecorder<SchedulerTime>()
        _ = negative.subscribe(Signal.timer(-1, on: TestScheduler()))
        let nan = EventRecorder<SchedulerTime>()
        _ = nan.subscribe(Signal.timer(.nan, on: TestScheduler()))
        XCTAssertTrue(immediate.error.map { "\($0)" }?.contains("scheduler") == true)
        XCTAssertTrue(negative.error is SignalError)
        XCTAssertTrue(nan.error is SignalError)
    }
}

import XCTest

@testable import ReactiveUV

/// Pins the assumption of `ScheduledBlock`'s two `_withUnsafeGuaranteedRef` calls
/// (`isDisposed`, `dispose()`, in `Scheduling/LoopScheduler.swift`): they reach the
/// scheduler without a retain because **the disposable's own tag owns a reference to it**
/// (`LoopTaskContext.retaining`, given back in its `deinit`) for every scheduler but
/// ``Scheduler/main``, which lives for the whole process. So the scheduler outlives every
/// call on the disposable, even once the caller, the queued task and every other holder
/// have let it go.
///
/// Each test leaves the disposable the scheduler's only owner (checked through a weak
/// reference), calls it, and checks the scheduler is freed exactly when the disposable
/// goes. If the disposable stopped owning its scheduler (a borrowing tag), the scheduler
/// would be freed when its task was done: the weak reference would be nil before the calls
/// (these tests then stop, rather than call into freed memory, which the AddressSanitizer
/// lane would report). XCTest, on the main thread: the blocks run on the main loop.
final class ScheduledBlockLifetimeTests: XCTestCase {
    final class WeakScheduler: @unchecked Sendable { weak var scheduler: Scheduler? }

    /// A scheduler of the main loop that is not ``Scheduler/main``: not immortal, so its
    /// tasks and disposables own references to it.
    func makeScheduler(_ tracked: WeakScheduler, _ name: String) -> LoopScheduler {
        let scheduler = LoopScheduler(loop: .main, name: name)
        XCTAssertFalse(scheduler.isImmortal)
        tracked.scheduler = scheduler
        return scheduler
    }

    /// The block has run (its task gave its reference back) and nothing else holds the
    /// scheduler: `isDisposed` and `dispose()` still reach it.
    func testADisposableAloneKeepsItsSchedulerAliveForItsCallsAfterTheBlockRan() {
        let tracked = WeakScheduler()
        let ran = Confined(false)
        var disposable: Disposable?
        do {
            let scheduler = makeScheduler(tracked, "test.pin.ran")
            disposable = scheduler.schedule { ran.value = true }
        }
        XCTAssertTrue(runMainLoop { ran.value })
        guard tracked.scheduler != nil else {
            return XCTFail("the scheduler was freed while its disposable still needed it")
        }
        XCTAssertEqual(disposable?.isDisposed, false)
        disposable?.dispose()
        XCTAssertEqual(disposable?.isDisposed, true)
        XCTAssertNotNil(tracked.scheduler, "still owned by the disposable")
        disposable = nil
        XCTAssertNil(tracked.scheduler, "freed with its last disposable")
    }

    /// The block is cancelled before it starts; once the loop has skipped it (and its task
    /// gave its reference back), the disposable is the scheduler's only owner.
    func testADisposableAloneKeepsItsSchedulerAliveAfterItsCancelledBlockWasSkipped() {
        let tracked = WeakScheduler()
        let log = Confined<[String]>([])
        var disposable: Disposable?
        do {
            let scheduler = makeScheduler(tracked, "test.pin.cancelled")
            disposable = scheduler.schedule { log.value.append("cancelled block ran") }
        }
        disposable?.dispose()
        // The marker is queued after the cancelled block: once it ran, the loop passed it.
        Scheduler.main.schedule { log.value.append("marker") }
        XCTAssertTrue(runMainLoop { log.value.contains("marker") })
        XCTAssertEqual(log.value, ["marker"])
        guard tracked.scheduler != nil else {
            return XCTFail("the scheduler was freed while its disposable still needed it")
        }
        XCTAssertEqual(disposable?.isDisposed, true)
        disposable?.dispose()
        XCTAssertNotNil(tracked.scheduler, "still owned by the disposable")
        disposable = nil
        XCTAssertNil(tracked.scheduler, "freed with its last disposable")
    }

    /// A block that takes its own disposable and its scheduler out of the only place they
    /// were kept, then disposes itself: everything is freed once the block has ended.
    func testABlockThatLetsGoOfItsSchedulerAndDisposesItselfFreesItAfterward() {
        let tracked = WeakScheduler()
        let log = Confined<[String]>([])
        let kept = Confined<(scheduler: Scheduler?, disposable: Disposable?)>((nil, nil))
        do {
            let scheduler = makeScheduler(tracked, "test.pin.self")
            kept.value.scheduler = scheduler
            kept.value.disposable = scheduler.schedule {
                let own = kept.value.disposable
                kept.value = (nil, nil)
                own?.dispose()  // already started: cancels nothing, marks it disposed
                log.value.append("disposed itself: \(own?.isDisposed == true); scheduler alive: \(tracked.scheduler != nil)")
            }
        }
        XCTAssertTrue(runMainLoop { !log.value.isEmpty })
        XCTAssertEqual(log.value, ["disposed itself: true; scheduler alive: true"])
        XCTAssertNil(tracked.scheduler, "freed once the block ended and its disposable went")
    }
}

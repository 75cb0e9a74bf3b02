import CSystemShims
import XCTest
@testable import ReactiveUV

/// `Diagnostics.liveSubscriptions` is counted per thread (a slot each, summed on read):
/// the sum must be exact whichever threads make and free subscriptions, and threads that
/// come and go must not leave slots behind. XCTest, because its methods run one at a time,
/// so the process-wide count is this test's alone.
final class LiveSubscriptionCountTests: XCTestCase {
    /// Made on eight threads, freed on this one (and the other way round): each thread's
    /// slot ends with a net +n or -n, and the sum is right at every step.
    func testSubscriptionsMadeOnOneThreadAndFreedOnAnotherAreCountedExactly() {
        let before = Diagnostics.liveSubscriptions
        let subject = Subject<Int>()
        // One box per thread: threads never touch the same array.
        let made = (0..<8).map { _ in SharedBox<[Disposable]>([]) }
        runOnThreads(8) { t in
            made[t].value = (0..<100).map { _ in subject.subscribeNext { _ in } }
        }
        XCTAssertEqual(Diagnostics.liveSubscriptions, before + 800)
        for box in made {
            for d in box.value { d.dispose() }
            box.value = []
        }
        XCTAssertEqual(Diagnostics.liveSubscriptions, before, "freed here, made there")

        // Made here, freed on other threads.
        let kept = (0..<8).map { _ in SharedBox((0..<100).map { _ in subject.subscribeNext { _ in } }) }
        XCTAssertEqual(Diagnostics.liveSubscriptions, before + 800)
        runOnThreads(8) { t in
            for d in kept[t].value { d.dispose() }
            kept[t].value = []
        }
        XCTAssertEqual(Diagnostics.liveSubscriptions, before, "made here, freed there")
    }

    /// Two hundred threads, one after another, each leaving a subscription alive: the
    /// count sees all of them after those threads are gone, and the threads reuse one slot
    /// instead of adding one each (a slot goes back to the pool when its thread exits).
    func testThreadsThatExitHandTheirSlotBackAndTheirCountStays() {
        let before = Diagnostics.liveSubscriptions
        let slotsBefore = csys_live_slots_allocated()
        let subject = Subject<Int>()
        let kept = SharedBox<[Disposable]>([])
        for _ in 0..<200 {
            let join = startThread { kept.value.append(subject.subscribeNext { _ in }) }
            join()
        }
        XCTAssertEqual(Diagnostics.liveSubscriptions, before + 200, "counts of exited threads stay in the sum")
        XCTAssertLessThanOrEqual(csys_live_slots_allocated(), slotsBefore + 1, "exited threads' slots are reused")
        for d in kept.value { d.dispose() }
        kept.value = []
        XCTAssertEqual(Diagnostics.liveSubscriptions, before)
    }
}

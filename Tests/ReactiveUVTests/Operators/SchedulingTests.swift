import CSystemShims
import XCTest
@testable import ReactiveUV
import ReactiveUVTestKit

/// deliverOn, subscribeOn and deliverOnMainThread against the real main loop (catalogue
/// §4b; their timing on a TestScheduler is in TimeOperatorMarbleTests). XCTest: the test
/// methods run on the main thread, which runs `EventLoop.main`.
final class SchedulingTests: XCTestCase {
    /// Runs the main loop until a block scheduled now has run: `Scheduler.main` is FIFO, so
    /// everything queued before it has run too. (No wall-clock wait.)
    func drainMainQueue() {
        var done = false
        _ = Scheduler.main.schedule { done = true }
        XCTAssertTrue(runMainLoop(timeout: 30) { done })
    }

    func testDeliverOnMainThreadRunsInlineOnTheMainThreadWhenNothingIsQueued() {
        var got: [Int] = []
        Signal.fromArray([1, 2]).deliverOnMainThread().subscribeNext { got.append($0) }
        XCTAssertEqual(got, [1, 2], "delivered during subscribe, without running the loop")
    }

    func testDeliverOnMainThreadFromABackgroundThreadArrivesOnMainInOrder() {
        let log = OpLog<Int>()
        let onMain = Locked(true)
        log.subscription = Signal.fromArray(Array(1...50)).subscribeOn(Scheduler.background()).deliverOnMainThread()
            .subscribeEvents { e in
                if !csys_thread_is_main() { onMain.withLock { $0 = false } }
                log.receive(e)
            }
        XCTAssertTrue(runMainLoop(timeout: 30) { log.isTerminated })
        XCTAssertEqual(log.values, Array(1...50))
        XCTAssertTrue(onMain.value)
    }

    func testDeliverOnMainThreadQueuesAReentrantSendBehindTheCurrentDelivery() {
        let source = Subject<Int>()
        var got: [String] = []
        source.deliverOnMainThread().subscribeNext { [unowned source] v in
            got.append("begin \(v)")
            if v == 1 { source.sendNext(2) }
            got.append("end \(v)")
        }
        source.sendNext(1)
        XCTAssertEqual(got, ["begin 1", "end 1"])
        XCTAssertTrue(runMainLoop(timeout: 30) { got.count == 4 })
        XCTAssertEqual(got, ["begin 1", "end 1", "begin 2", "end 2"])
    }

    func testDeliverOnMainThreadDisposalDropsQueuedEventsAndDisposesTheSource() {
        let p = OpProbe()
        let source = Subject<Int>()
        var got: [Int] = []
        var d: Disposable?
        d = source.probed(p).deliverOnMainThread().subscribeNext { v in
            got.append(v)
            if v == 1 {
                source.sendNext(2)  // queued
                d?.dispose()
            }
        }
        source.sendNext(1)
        XCTAssertEqual(p.live, 0)
        drainMainQueue()
        XCTAssertEqual(got, [1])
    }

    func testDeliverOnMainAlwaysEnqueuesEvenFromTheMainThread() {
        let log = opRecord(Signal.fromArray([1, 2]).deliverOn(Scheduler.main))
        XCTAssertTrue(log.events.isEmpty)
        XCTAssertTrue(runMainLoop(timeout: 30) { log.isTerminated })
        XCTAssertEqual(log.events, [.next(1), .next(2), .completed])
    }

    func testDeliverOnDisposalDropsPendingEvents() {
        let log = opRecord(Signal.fromArray([1, 2]).deliverOn(Scheduler.main))
        log.dispose()
        drainMainQueue()
        XCTAssertTrue(log.events.isEmpty)
    }

    func testSubscribeOnMainDefersTheSubscriptionAndDisposalBeforehandPreventsIt() {
        let p = OpProbe()
        let log = opRecord(Signal.fromArray([1]).probed(p).subscribeOn(Scheduler.main))
        XCTAssertEqual(p.subscriptions, 0)
        XCTAssertTrue(runMainLoop(timeout: 30) { log.isTerminated })
        XCTAssertEqual(log.events, [.next(1), .completed])

        let p2 = OpProbe()
        let log2 = opRecord(Signal.fromArray([1]).probed(p2).subscribeOn(Scheduler.main))
        log2.dispose()
        drainMainQueue()
        XCTAssertEqual(p2.subscriptions, 0)
    }
}

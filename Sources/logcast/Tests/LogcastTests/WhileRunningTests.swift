import ReactiveUV
import XCTest
@testable import logcast

/// The daemon's compounds hold a subscription or a timer only while it runs
/// (`CompoundDisposable.whileRunning`, `afterDelay`): one publish per batch for the life
/// of an edge must not leave one finished subscription behind per batch.
final class WhileRunningTests: XCTestCase {
    /// A weak reference, to see whether anything still holds a subscription.
    final class Watched {
        weak var disposable: Disposable?
        init(_ disposable: Disposable?) { self.disposable = disposable }
    }

    func testASubscriptionIsHeldWhileItRunsAndLetGoWhenItCompletes() {
        let running = CompoundDisposable()
        let subject = Subject<Int>()
        var events: [String] = []
        let watched = Watched(running.whileRunning(
            subject, next: { events.append("next \($0)") }, completed: { events.append("completed") }))
        XCTAssertNotNil(watched.disposable, "the compound holds a running subscription")
        subject.sendNext(1)
        XCTAssertNotNil(watched.disposable)
        subject.sendCompleted()
        XCTAssertNil(watched.disposable, "a completed subscription is no longer held")
        XCTAssertEqual(events, ["next 1", "completed"])
        XCTAssertFalse(running.isDisposed)
    }

    func testAFailedSubscriptionIsLetGoAndItsRetryTimerToOnceItFires() {
        let scheduler = TestScheduler()
        let running = CompoundDisposable()
        let subject = Subject<Int>()
        var retried = 0
        var timer: Watched?
        let watched = Watched(running.whileRunning(subject, error: { _ in
            timer = Watched(running.afterDelay(2, on: scheduler) { retried += 1 })
        }))
        subject.sendError(SignalError.timedOut)
        XCTAssertNil(watched.disposable, "a failed subscription is no longer held")
        XCTAssertNotNil(timer?.disposable, "the retry timer is held until it fires")
        scheduler.advance(by: 1)
        XCTAssertEqual(retried, 0)
        scheduler.advance(by: 1)
        XCTAssertEqual(retried, 1)
        XCTAssertNil(timer?.disposable, "a fired timer is no longer held")
    }

    func testASignalThatEndsWhileSubscribingIsNeverHeld() {
        let running = CompoundDisposable()
        var got: [Int] = []
        var completed = false
        let watched = Watched(running.whileRunning(
            Signal.return(7), next: { got.append($0) }, completed: { completed = true }))
        XCTAssertNil(watched.disposable)
        XCTAssertEqual(got, [7])
        XCTAssertTrue(completed)
    }

    func testDisposingTheCompoundEndsWhatItHoldsAndCancelsItsTimers() {
        let scheduler = TestScheduler()
        let running = CompoundDisposable()
        let subject = Subject<Int>()
        var got: [Int] = []
        var fired = false
        running.whileRunning(subject, next: { got.append($0) })
        running.afterDelay(1, on: scheduler) { fired = true }
        subject.sendNext(1)
        running.dispose()
        subject.sendNext(2)
        scheduler.advance(by: 5)
        XCTAssertEqual(got, [1])
        XCTAssertFalse(fired, "a pending timer is cancelled with the compound")
    }

    /// The edge's pattern: each acknowledgement starts the next publish from inside the
    /// previous one's delivery. Ten thousand of them, all answered, leave nothing held.
    func testTenThousandChainedRequestsLeaveNothingHeld() {
        let running = CompoundDisposable()
        var requests: [Subject<Int>] = []
        var watched: [Watched] = []
        var acknowledged = 0
        func send() {
            let request = Subject<Int>()
            requests.append(request)
            watched.append(Watched(running.whileRunning(request, next: { _ in
                acknowledged += 1
                if acknowledged < 10_000 { send() }
            })))
        }
        send()
        var answered = 0
        while answered < requests.count {
            requests[answered].sendNext(answered)
            requests[answered].sendCompleted()
            answered += 1
        }
        XCTAssertEqual(acknowledged, 10_000)
        XCTAssertEqual(watched.count, 10_000)
        XCTAssertEqual(watched.filter { $0.disposable != nil }.count, 0, "no finished request is held")
    }
}

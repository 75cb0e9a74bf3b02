import Testing
import XCTest
@testable import ReactiveUV

/// first, firstOrDefault, waitUntilCompleted, toArray, blockingSequence (catalogue §4i),
/// called from a test thread that runs no loop; sources on this thread or on a background
/// scheduler's loop thread. Serialized: each test blocks its thread while it waits.
@Suite(.serialized) struct BlockingTests {
    /// Sends `values` then completes (or fails) on a background scheduler's loop thread.
    func background(_ values: [Int], error: OpError? = nil) -> Signal<Int> {
        let tail: Signal<Int> = error.map { .error($0) } ?? .empty()
        return Signal.fromArray(values).concat(tail).subscribeOn(Scheduler.background())
    }

    @Test func firstReturnsTheFirstValueAndDisposesTheSource() {
        let p = OpProbe()
        let source = Signal<Int>.create { s in
            s.sendNext(1)
            s.sendNext(2)
            return nil
        }.probed(p)
        #expect(source.first() == 1)
        #expect(p.live == 0, "subscribes to take(1): disposed after the first value")
        #expect(background([7, 8]).first() == 7)
    }

    @Test func firstReturnsNilOnCompletionOrError() {
        #expect(Signal<Int>.empty().first() == nil)
        #expect(Signal<Int>.error(OpError.boom).first() == nil)
        #expect(background([]).first() == nil)
        #expect(background([], error: .boom).first() == nil)
    }

    @Test func firstOrDefault() {
        #expect(Signal<Int>.empty().firstOrDefault(5) == 5)
        #expect(Signal.fromArray([1, 2]).firstOrDefault(5) == 1)
        #expect(background([3]).firstOrDefault(5) == 3)
        #expect(background([], error: .boom).firstOrDefault(5) == 5)
    }

    @Test func firstOrDefaultReportsSuccessAndError() {
        var success = false
        var error: (any Error)?
        #expect(background([4]).firstOrDefault(0, success: &success, error: &error) == 4)
        #expect(success && error == nil)
        #expect(Signal<Int>.empty().firstOrDefault(9, success: &success, error: &error) == 9)
        #expect(success && error == nil, "completion without a value is a success")
        #expect(background([], error: .boom).firstOrDefault(9, success: &success, error: &error) == 9)
        #expect(!success)
        #expect(error as? OpError == .boom)
    }

    @Test func waitUntilCompletedIgnoresValuesAndThrowsTheError() throws {
        try background([1, 2, 3]).waitUntilCompleted()
        try Signal<Int>.empty().waitUntilCompleted()
        #expect(throws: OpError.boom) { try background([1], error: .boom).waitUntilCompleted() }
        var error: (any Error)?
        #expect(background([1]).waitUntilCompleted(error: &error))
        #expect(!Signal<Int>.error(OpError.other).waitUntilCompleted(error: &error))
        #expect(error as? OpError == .other)
    }

    @Test func toArrayReturnsAllValuesOrThrows() throws {
        #expect(try background([1, 2, 3]).toArray() == [1, 2, 3])
        #expect(try Signal<Int>.empty().toArray() == [])
        #expect(try Signal.fromArray([4, 5]).toArray() == [4, 5])
        #expect(throws: OpError.boom) { try background([1, 2], error: .boom).toArray() }
    }

    @Test func blockingOperatorsOnAValueFromAnotherThreadLater() throws {
        // The value arrives from a background loop after a (virtual-free) hop: deliverOn.
        let bg = Scheduler.background()
        #expect(try Signal.fromArray([1, 2]).deliverOn(bg).toArray() == [1, 2])
        #expect(Signal.fromArray([9]).deliverOn(bg).first() == 9)
    }

    @Test func blockingSequenceYieldsEveryValueThenEnds() {
        #expect(Array(Signal.fromArray([1, 2, 3]).blockingSequence) == [1, 2, 3])
        #expect(Array(background([4, 5, 6]).blockingSequence) == [4, 5, 6])
        #expect(Array(background([1], error: .boom).blockingSequence) == [1], "an error ends the sequence")
    }

    @Test func blockingSequenceFromABackgroundThreadValueByValue() {
        let bg = Scheduler.background()
        var got: [Int] = []
        for v in Signal.fromArray(Array(1...50)).deliverOn(bg).blockingSequence { got.append(v) }
        #expect(got == Array(1...50))
    }

    @Test func leavingABlockingSequenceEarlyDisposesTheSubscription() {
        let p = OpProbe()
        let source = Signal<Int>.create { s in
            s.sendNext(1)
            s.sendNext(2)
            s.sendNext(3)
            return nil
        }.probed(p)
        var got: [Int] = []
        do {
            for v in source.blockingSequence {
                got.append(v)
                if v == 2 { break }
            }
        }
        #expect(got == [1, 2])
        #expect(p.live == 0)
    }
}

/// The asynchronous waits spin the main loop (catalogue §5): XCTest, on the main thread.
final class BlockingMainLoopTests: XCTestCase {
    func testAsynchronousFirstOrDefaultRunsTheMainLoopUntilAValueArrives() throws {
        let value = try Signal.fromArray([5, 6]).deliverOn(Scheduler.main).asynchronousFirstOrDefault(0, timeout: 30)
        XCTAssertEqual(value, 5)
        XCTAssertEqual(try Signal<Int>.empty().deliverOn(Scheduler.main).asynchronousFirstOrDefault(7, timeout: 30), 7)
    }

    func testAsynchronousFirstOrDefaultThrowsTheErrorOrTimesOut() {
        XCTAssertThrowsError(try Signal<Int>.error(OpError.boom).deliverOn(Scheduler.main).asynchronousFirstOrDefault(0)) {
            XCTAssertEqual($0 as? OpError, .boom)
        }
        // A signal that never answers: the outcome does not depend on how long the wait is.
        XCTAssertThrowsError(try Signal<Int>.never().asynchronousFirstOrDefault(0, timeout: 0.05)) {
            XCTAssertEqual($0 as? SignalError, .timedOut)
        }
    }

    func testAsynchronouslyWaitUntilCompleted() {
        let p = OpProbe()
        XCTAssertNoThrow(try Signal.fromArray([1, 2]).probed(p).deliverOn(Scheduler.main).asynchronouslyWaitUntilCompleted(timeout: 30))
        XCTAssertEqual(p.live, 0)
        XCTAssertThrowsError(try Signal<Int>.error(OpError.other).deliverOn(Scheduler.main).asynchronouslyWaitUntilCompleted()) {
            XCTAssertEqual($0 as? OpError, .other)
        }
        XCTAssertThrowsError(try Signal<Int>.never().probed(p).asynchronouslyWaitUntilCompleted(timeout: 0.05))
        XCTAssertEqual(p.live, 0, "the wait disposes its subscription when it gives up")
    }

    func testBlockingFirstOnTheMainThreadRunsTheMainLoop() throws {
        // On a loop's own thread the blocking operators run that loop, so work queued to it
        // (here: deliverOn(main)) still arrives.
        XCTAssertEqual(Signal.fromArray([3]).deliverOn(Scheduler.main).first(), 3)
        XCTAssertEqual(try Signal.fromArray([1, 2]).deliverOn(Scheduler.main).toArray(), [1, 2])
    }
}

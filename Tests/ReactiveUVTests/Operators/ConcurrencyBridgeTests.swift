import Testing
import XCTest
@testable import ReactiveUV

/// The Swift-concurrency bridges: `values`, `Signal(asyncSequence)`, async first,
/// firstOrDefault, toArray, waitUntilCompleted (catalogue §20). Every wait is bounded by the
/// suite's time limit; the process-wide subscription counter is only asserted in the
/// XCTest class below (XCTest methods run one at a time).
@Suite(.timeLimit(.minutes(2))) struct ConcurrencyBridgeTests {
    /// A signal that yields into an `AsyncStream` whenever it is subscribed or disposed,
    /// so a test can await those moments without sleeping.
    func announcing<V>(_ signal: Signal<V>) -> (Signal<V>, AsyncStream<String>) {
        let (moments, continuation) = AsyncStream<String>.makeStream()
        let s = signal.on(subscribed: { continuation.yield("subscribed") }, disposed: { continuation.yield("disposed") })
        return (s, moments)
    }

    // MARK: values

    @Test func valuesIteratesEveryValueThenEnds() async throws {
        var got: [Int] = []
        for try await v in Signal.fromArray([1, 2, 3]).values { got.append(v) }
        #expect(got == [1, 2, 3])
    }

    @Test func valuesFromABackgroundThread() async throws {
        var got: [Int] = []
        for try await v in Signal.fromArray(Array(1...20)).deliverOn(Scheduler.background()).values { got.append(v) }
        #expect(got == Array(1...20))
    }

    @Test func valuesThrowsTheSignalsError() async {
        var got: [Int] = []
        await #expect(throws: OpError.boom) {
            for try await v in Signal.fromArray([1]).concat(.error(OpError.boom)).values { got.append(v) }
        }
        #expect(got == [1])
    }

    @Test func breakingOutOfValuesDisposesTheSubscription() async throws {
        let (signal, moments) = announcing(Signal.fromArray([1, 2, 3]).concat(.never()))
        var got: [Int] = []
        for try await v in signal.values {
            got.append(v)
            if v == 2 { break }
        }
        #expect(got == [1, 2])
        var it = moments.makeAsyncIterator()
        #expect(await it.next() == "subscribed")
        #expect(await it.next() == "disposed")
    }

    @Test func cancellingTheConsumingTaskDisposesTheSubscription() async {
        let (signal, moments) = announcing(Signal<Int>.never())
        let task = Task { for try await _ in signal.values {} }
        var it = moments.makeAsyncIterator()
        #expect(await it.next() == "subscribed")
        task.cancel()
        #expect(await it.next() == "disposed")
        _ = await task.result
    }

    // MARK: Signal(asyncSequence)

    @Test func signalFromAnAsyncSequenceSendsItsElementsThenCompletes() async throws {
        let (stream, continuation) = AsyncStream<Int>.makeStream()
        for i in 1...3 { continuation.yield(i) }
        continuation.finish()
        #expect(try await Signal(stream).toArray() == [1, 2, 3])
    }

    @Test func signalFromAThrowingAsyncSequenceSendsTheError() async {
        let (stream, continuation) = AsyncThrowingStream<Int, any Error>.makeStream()
        continuation.yield(1)
        continuation.finish(throwing: OpError.boom)
        var got: [Int] = []
        await #expect(throws: OpError.boom) {
            for try await v in Signal(stream).values { got.append(v) }
        }
        #expect(got == [1])
    }

    @Test func disposingASignalFromAnAsyncSequenceCancelsItsTask() async {
        let (stream, continuation) = AsyncStream<Int>.makeStream()
        let (ended, endedContinuation) = AsyncStream<Void>.makeStream()
        continuation.onTermination = { _ in endedContinuation.yield() }
        let log = OpLog<Int>()
        log.subscription = Signal(stream).subscribeEvents { log.receive($0) }
        continuation.yield(1)
        log.dispose()
        var it = ended.makeAsyncIterator()
        await it.next()  // the iterating task was cancelled: the stream terminated
        continuation.yield(2)
        #expect(!log.isTerminated)
        #expect(!log.values.contains(2))
    }

    @Test func eachSubscriptionToASignalFromAnAsyncSequenceIteratesAgain() async throws {
        struct Count: AsyncSequence, Sendable {
            typealias Element = Int
            let upTo: Int
            struct AsyncIterator: AsyncIteratorProtocol {
                var i = 0
                let upTo: Int
                mutating func next() async -> Int? {
                    i += 1
                    return i <= upTo ? i : nil
                }
            }
            func makeAsyncIterator() -> AsyncIterator { AsyncIterator(upTo: upTo) }
        }
        let s = Signal(Count(upTo: 3))
        #expect(try await s.toArray() == [1, 2, 3])
        #expect(try await s.toArray() == [1, 2, 3])
    }

    // MARK: async first, firstOrDefault, toArray, waitUntilCompleted

    @Test func asyncFirstTakesOneValueAndDisposes() async throws {
        let (signal, moments) = announcing(Signal.fromArray([5, 6]).concat(.never()))
        #expect(try await signal.first() == 5)
        var it = moments.makeAsyncIterator()
        #expect(await it.next() == "subscribed")
        #expect(await it.next() == "disposed")
        #expect(try await Signal<Int>.empty().first() == nil)
        await #expect(throws: OpError.boom) { try await Signal<Int>.error(OpError.boom).first() }
    }

    @Test func asyncFirstOrDefault() async throws {
        #expect(try await Signal<Int>.empty().firstOrDefault(3) == 3)
        #expect(try await Signal.fromArray([1, 2]).deliverOn(Scheduler.background()).firstOrDefault(3) == 1)
        await #expect(throws: OpError.boom) { try await Signal<Int>.error(OpError.boom).firstOrDefault(3) }
    }

    @Test func asyncToArray() async throws {
        #expect(try await Signal.fromArray([1, 2, 3]).deliverOn(Scheduler.background()).toArray() == [1, 2, 3])
        #expect(try await Signal<Int>.empty().toArray() == [])
        await #expect(throws: OpError.boom) { try await Signal.fromArray([1]).concat(.error(OpError.boom)).toArray() }
    }

    @Test func asyncWaitUntilCompleted() async throws {
        try await Signal.fromArray([1, 2]).deliverOn(Scheduler.background()).waitUntilCompleted()
        await #expect(throws: OpError.boom) { try await Signal<Int>.error(OpError.boom).waitUntilCompleted() }
    }
}

/// Leak checks of the bridges on the process-wide `Diagnostics.liveSubscriptions`.
final class ConcurrencyBridgeLeakTests: XCTestCase {
    /// These tests compare the process-wide live-subscription count with its value at the
    /// start. Work an earlier test left queued on the main loop (a subscription it ends)
    /// would change the count during the wait, so it runs first: a marker block scheduled
    /// on the main loop has run only when everything queued before it has.
    override func setUp() {
        for _ in 0..<3 {
            let ran = Locked(false)
            Scheduler.main.schedule { ran.withLock { $0 = true } }
            XCTAssertTrue(runMainLoop(timeout: 10) { ran.value })
        }
    }

    func testCancelledValuesConsumerOfANeverCompletingSignalLeavesNoLiveSubscription() {
        let before = Diagnostics.liveSubscriptions
        let subscribed = Latch(), disposed = Latch(), finished = Latch()
        let subject = Subject<Int>()
        let signal = subject.on(subscribed: { subscribed.countDown() }, disposed: { disposed.countDown() })
        let task = Task.detached {
            do { for try await _ in signal.values {} } catch {}
            finished.countDown()
        }
        XCTAssertTrue(subscribed.wait(timeout: 60))
        XCTAssertEqual(Diagnostics.liveSubscriptions, before + 1)
        task.cancel()
        XCTAssertTrue(disposed.wait(timeout: 60))
        XCTAssertTrue(finished.wait(timeout: 60))
        XCTAssertTrue(runMainLoop(timeout: 60) { Diagnostics.liveSubscriptions == before })
        XCTAssertTrue(subject.roster.entries.isEmpty)
    }

    func testBreakingOutOfValuesLeavesNoLiveSubscription() {
        let before = Diagnostics.liveSubscriptions
        let finished = Latch()
        let signal = Signal.fromArray([1, 2, 3]).concat(.never())
        Task.detached {
            for try await v in signal.values where v == 2 { break }
            finished.countDown()
        }
        XCTAssertTrue(finished.wait(timeout: 60))
        XCTAssertTrue(runMainLoop(timeout: 60) { Diagnostics.liveSubscriptions == before })
    }

    func testDisposedSignalFromANeverEndingAsyncSequenceLeavesNoTaskBehind() {
        let before = Diagnostics.liveSubscriptions
        let (stream, continuation) = AsyncStream<Int>.makeStream()
        let ended = Latch()
        continuation.onTermination = { _ in ended.countDown() }
        do {
            let d = Signal(stream).subscribeNext { _ in }
            XCTAssertEqual(Diagnostics.liveSubscriptions, before + 1)
            d.dispose()
        }
        XCTAssertTrue(ended.wait(timeout: 60), "the iterating task is cancelled")
        XCTAssertTrue(runMainLoop(timeout: 60) { Diagnostics.liveSubscriptions == before })
    }

    func testCompletedValuesLeavesNoLiveSubscription() {
        let before = Diagnostics.liveSubscriptions
        let finished = Latch()
        let got = Locked<[Int]>([])
        Task.detached {
            for try await v in Signal.fromArray([1, 2]).values { got.withLock { $0.append(v) } }
            finished.countDown()
        }
        XCTAssertTrue(finished.wait(timeout: 60))
        XCTAssertEqual(got.value, [1, 2])
        XCTAssertTrue(runMainLoop(timeout: 60) { Diagnostics.liveSubscriptions == before })
    }
}

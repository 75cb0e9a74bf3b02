import XCTest
@testable import ReactiveUV

/// Subscriptions that end leave nothing alive: counted with `Diagnostics.liveSubscriptions`
/// (XCTest, because XCTest methods run one at a time, so the process-wide count is ours)
/// and with weak references.
final class MemoryTests: XCTestCase {
    func testMillionSubscribeDisposeCyclesOfAThreeOperatorChainLeaveNoLiveObjects() {
        let before = Diagnostics.liveSubscriptions
        let subject = Subject<Int>()
        let chain = subject.map { $0 + 1 }.filter { $0 % 2 == 1 }.scan(start: 0, reduce: +)
        var received: [Int] = []
        var sampled: [() -> AnyObject?] = []
        for i in 0..<1_000_000 {
            let d = chain.subscribeNext { received.append($0) }
            if i % 1000 == 0 {
                subject.sendNext(i)
                weak let weakD = d
                sampled.append { weakD }
            }
            d.dispose()
        }
        XCTAssertEqual(received, (0..<1000).map { $0 * 1000 + 1 }, "each sampled cycle saw exactly its one value")
        XCTAssertTrue(subject.roster.entries.isEmpty)
        XCTAssertTrue(sampled.allSatisfy { $0() == nil }, "disposed subscriptions are freed")
        XCTAssertEqual(Diagnostics.liveSubscriptions, before)
    }

    func testColdSignalCyclesLeaveNoLiveObjects() {
        let before = Diagnostics.liveSubscriptions
        let chain = Signal<Int>.create { s in
            s.sendNext(1)
            return Disposable {}
        }.map { $0 * 2 }.filter { $0 > 0 }.take(5)
        var n = 0
        for _ in 0..<100_000 {
            chain.subscribeNext { n += $0 }.dispose()
        }
        XCTAssertEqual(n, 200_000)
        XCTAssertEqual(Diagnostics.liveSubscriptions, before)
    }

    func testTerminatedSubscriptionReleasesItsSubscriberAndSource() {
        weak var weakSubject: Subject<Int>?
        let before = Diagnostics.liveSubscriptions
        do {
            let subject = Subject<Int>()
            weakSubject = subject
            subject.map { $0 }.subscribeNext { _ in }
            subject.sendCompleted()
        }
        XCTAssertNil(weakSubject)
        XCTAssertEqual(Diagnostics.liveSubscriptions, before)
    }
}

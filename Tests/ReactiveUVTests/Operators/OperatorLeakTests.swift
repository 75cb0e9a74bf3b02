import XCTest
@testable import ReactiveUV

/// Every operator family, subscribed and then disposed or terminated, leaves nothing alive:
/// the process-wide `Diagnostics.liveSubscriptions` returns to its baseline and the source
/// subject is freed. XCTest, because its methods run one at a time (the counter is global).
final class OperatorLeakTests: XCTestCase {
    typealias Chain = (Subject<Int>) -> Disposable

    nonisolated(unsafe) static let chains: [(String, Chain)] = [
        ("map/filter/scan", { $0.map { $0 }.filter { _ in true }.scan(start: 0, reduce: +).subscribeNext { _ in } }),
        ("take/skip/distinct", { $0.skip(0).distinctUntilChanged().take(5).subscribeNext { _ in } }),
        ("takeLast/collect", { $0.takeLast(2).collect().subscribeNext { _ in } }),
        ("materialize/dematerialize", { $0.materialize().dematerialize().subscribeNext { (_: Int) in } }),
        ("concat/then", { $0.concat(.never()).then { Signal<Int>.return(1) }.subscribeNext { _ in } }),
        ("merge", { $0.merge(Subject<Int>()).subscribeNext { _ in } }),
        ("zip", { $0.zip(with: Subject<Int>()).subscribeNext { _ in } }),
        ("combineLatest", { s in Signal.combineLatest([s, Subject<Int>()]).subscribeNext { _ in } }),
        ("sample", { $0.sample(Subject<Void>()).subscribeNext { _ in } }),
        ("takeUntil", { $0.takeUntil(Subject<Void>()).subscribeNext { _ in } }),
        ("takeUntilReplacement", { $0.takeUntilReplacement(Subject<Int>()).subscribeNext { _ in } }),
        ("flattenMap", { $0.flattenMap { _ in Signal<Int>.never() }.subscribeNext { _ in } }),
        ("flatten(1)", { $0.map { _ in Signal<Int>.never() }.flatten(1).subscribeNext { _ in } }),
        ("switchToLatest", { $0.map { _ in Signal<Int>.never() }.switchToLatest().subscribeNext { _ in } }),
        ("bind", { $0.bind { { _, _ in Signal<Int>.never() } }.subscribeNext { _ in } }),
        ("catch", { $0.catch { _ in .never() }.subscribeNext { _ in } }),
        ("retry", { $0.retry(3).subscribeNext { _ in } }),
        ("repeat", { $0.repeat().subscribeNext { _ in } }),
        ("retry(when:)", { $0.retry(when: { $0 }).subscribeNext { _ in } }),
        ("tryMap", { $0.tryMap { $0 }.subscribeNext { _ in } }),
        ("aggregate/any/all", { s in Signal.merge([s.any(), s.all { _ in true }]).subscribeNext { _ in } }),
        ("groupBy", { $0.groupBy { $0 }.flattenMap { $0 }.subscribeNext { _ in } }),
        ("publish/autoconnect", { $0.publish().autoconnect().subscribeNext { _ in } }),
        ("replayLazily", { $0.replayLazily().subscribeNext { _ in } }),
        ("share", { $0.share(replay: 1).subscribeNext { _ in } }),
        ("withLatestFrom", { $0.withLatestFrom(Subject<Int>()).subscribeNext { _ in } }),
        ("using", { s in Signal<Int>.using({ Disposable() }, { _ in s }).subscribeNext { _ in } }),
        ("collect(count:)", { $0.collect(count: 2).subscribeNext { _ in } }),
        ("logEvents", { $0.logEvents(identifier: "leak").subscribeNext { _ in } }),
    ]

    nonisolated(unsafe) var previousSink: (@Sendable (String) -> Void)?

    override func setUp() {
        super.setUp()
        previousSink = SignalLog.sink
        SignalLog.sink = { _ in }
    }

    override func tearDown() {
        if let previousSink { SignalLog.sink = previousSink }
        super.tearDown()
    }

    func check(_ name: String, _ chain: Chain, terminate: (Subject<Int>, Disposable) -> Void) {
        let before = Diagnostics.liveSubscriptions
        weak var weakSubject: Subject<Int>?
        do {
            let subject = Subject<Int>()
            weakSubject = subject
            let d = chain(subject)
            subject.sendNext(1)
            subject.sendNext(2)
            terminate(subject, d)
        }
        XCTAssertEqual(Diagnostics.liveSubscriptions, before, "\(name): live subscriptions")
        XCTAssertNil(weakSubject, "\(name): the source is freed")
    }

    func testDisposedChainsLeaveNothingAlive() {
        for (name, chain) in Self.chains {
            check(name, chain) { _, d in d.dispose() }
        }
    }

    // `repeat()` resubscribes at every completion and `retry(when: { $0 })` at every error;
    // a terminated subject replays its terminal event to each resubscription, so those two
    // would resubscribe forever on the sending thread. They are left out of the terminated
    // runs (see ErrorHandlingTests / RetryWhenTests for their own termination tests).
    func testCompletedChainsLeaveNothingAlive() {
        for (name, chain) in Self.chains where name != "repeat" {
            check(name, chain) { s, d in
                s.sendCompleted()
                d.dispose()  // those that wait for another source to complete
            }
        }
    }

    func testFailedChainsLeaveNothingAlive() {
        for (name, chain) in Self.chains where name != "retry(when:)" {
            check(name, chain) { s, d in
                s.sendError(OpError.boom)
                d.dispose()
            }
        }
    }
}

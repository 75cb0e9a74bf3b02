import Testing
@testable import ReactiveUV

/// Pins the `_isConcrete(S.self)` guard of the two fused overrides of
/// `attach(sink:closing:_:)` (`ReturnSignal`, and `StageSignal`, which runs every stage:
/// `map`, `filter`, `scan`) on its two sides:
///
/// - **`false` in unspecialized code** (here: a debug build, which specializes nothing, so
///   every call lands in the library's generic copy): the override must ask `closing` for
///   the closure once and take the closure path. These tests fail if the guard became
///   always-true (then `closing` is never called and the struct sinks run generically).
/// - **`true` in specialized code**: `AllocationCountTests` (its release-built probe) counts
///   at most one allocation for `return→map→filter→subscribeNext→dispose`, which only the
///   fused path achieves (each closure stage adds its context), and checks that the fused,
///   partly fused and closure paths deliver the same events, termination and disposal. It
///   fails if the guard became always-false.
@Suite struct FusedPathChoiceTests {
    /// A fused-path sink that records what reaches it.
    struct RecordingSink<Value>: EventSink {
        let log: Locked<[String]>

        func receive(_ event: Event<Value>) {
            switch event {
            case .next(let v): log.append("next \(v)")
            case .error(let e): log.append("error \(e)")
            case .completed: log.append("completed")
            }
        }
    }

    struct Failure: Error, CustomStringConvertible { var description: String { "failure" } }

    /// Attaches a recording sink through the fused entry point, logging each time the
    /// signal asks `closing` for the closure, and whether the lifetime ended.
    func attachRecording<Value>(_ signal: Signal<Value>) -> [String] {
        let log = Locked<[String]>([])
        let lifetime = CompoundDisposable()
        signal.attach(
            sink: RecordingSink<Value>(log: log),
            closing: { sink in
                log.append("closing")
                return { sink.receive($0) }
            }, lifetime)
        log.append("lifetime disposed: \(lifetime.isDisposed)")
        return log.value
    }

    @Test func returnTakesTheClosureInUnspecializedCode() {
        #expect(attachRecording(Signal.return(3)) == ["closing", "next 3", "completed", "lifetime disposed: false"])
    }

    @Test func mapTakesTheClosureInUnspecializedCode() {
        #expect(attachRecording(Signal.return(3).map { $0 * 2 }) == ["closing", "next 6", "completed", "lifetime disposed: false"])
    }

    @Test func filterTakesTheClosureInUnspecializedCode() {
        #expect(attachRecording(Signal.return(3).filter { $0 > 5 }) == ["closing", "completed", "lifetime disposed: false"])
        #expect(attachRecording(Signal.return(7).filter { $0 > 5 }) == ["closing", "next 7", "completed", "lifetime disposed: false"])
    }

    @Test func scanTakesTheClosureInUnspecializedCode() {
        #expect(attachRecording(Signal.return(3).scan(start: 10, reduce: +)) == ["closing", "next 13", "completed", "lifetime disposed: false"])
        #expect(attachRecording(Signal.return(3).scan(start: 10) { a, v, i in a + v * 100 + i }) == ["closing", "next 310", "completed", "lifetime disposed: false"])
    }

    /// A stage's state is per subscription: one `scan` signal attached twice, on the path
    /// this build takes and through the plain closure entry, keeps two accumulators, and a
    /// re-subscription starts from `start` again.
    @Test func scanStateIsPerSubscriptionOnBothEntries() {
        let subject = Subject<Int>()
        let scanned = subject.scan(start: 100, reduce: +)
        let indexed = subject.scan(start: 0) { a, v, i in a + v * 10 + i }
        let first = Locked<[String]>([])
        let second = Locked<[String]>([])
        let plain = Locked<[String]>([])
        let lifetimes = (0..<4).map { _ in CompoundDisposable() }
        scanned.attach(sink: RecordingSink<Int>(log: first), closing: { s in { s.receive($0) } }, lifetimes[0])
        indexed.attach(sink: RecordingSink<Int>(log: first), closing: { s in { s.receive($0) } }, lifetimes[1])
        subject.sendNext(1)
        subject.sendNext(2)
        scanned.attach(sink: RecordingSink<Int>(log: second), closing: { s in { s.receive($0) } }, lifetimes[2])
        scanned.attach({ event in if case .next(let v) = event { plain.append("next \(v)") } }, lifetimes[3])
        subject.sendNext(3)
        subject.sendCompleted()
        #expect(first.value == ["next 101", "next 10", "next 103", "next 31", "next 106", "next 63", "completed", "completed"])
        #expect(second.value == ["next 103", "completed"])
        #expect(plain.value == ["next 103"])
    }

    /// The other stages (`compactMap`, `combinePrevious`, `ignoreValues`), and
    /// `combinePrevious`'s previous value per subscription: a second attach starts from
    /// `start`.
    @Test func theOtherStagesTakeTheClosureAndKeepStatePerSubscription() {
        #expect(attachRecording(Signal.return(3).compactMap { $0 > 5 ? $0 : nil }) == ["closing", "completed", "lifetime disposed: false"])
        #expect(attachRecording(Signal.return(7).compactMap { $0 > 5 ? $0 : nil }) == ["closing", "next 7", "completed", "lifetime disposed: false"])
        #expect(attachRecording(Signal.return(7).ignoreValues()) == ["closing", "completed", "lifetime disposed: false"])
        #expect(attachRecording(Signal<Int>.error(Failure()).ignoreValues()) == ["closing", "error failure", "lifetime disposed: false"])
        let subject = Subject<Int>()
        let pairs = subject.combinePrevious(start: 0) { $0 * 10 + $1 }
        let first = Locked<[String]>([])
        let second = Locked<[String]>([])
        let lifetimes = (0..<2).map { _ in CompoundDisposable() }
        pairs.attach(sink: RecordingSink<Int>(log: first), closing: { s in { s.receive($0) } }, lifetimes[0])
        subject.sendNext(1)
        subject.sendNext(2)
        pairs.attach(sink: RecordingSink<Int>(log: second), closing: { s in { s.receive($0) } }, lifetimes[1])
        subject.sendNext(3)
        subject.sendCompleted()
        #expect(first.value == ["next 1", "next 12", "next 23", "completed"])
        #expect(second.value == ["next 3", "completed"])
    }

    /// A whole chain asks once, at its last stage; the stages above run as closures.
    @Test func aFusedChainAsksForTheClosureOnceAtItsEnd() {
        let chain = Signal.return(3).map { $0 * 2 }.filter { $0 > 0 }.map { "<\($0)>" }
        #expect(attachRecording(chain) == ["closing", "next <6>", "completed", "lifetime disposed: false"])
    }

    /// Over a subject (the subject keeps the closure), and with an error travelling through:
    /// the same events on the closure path as the fused one would send.
    @Test func overASubjectAndWithAnError() {
        let subject = Subject<Int>()
        let log = Locked<[String]>([])
        let lifetime = CompoundDisposable()
        subject.map { $0 + 1 }.filter { $0 != 3 }.attach(
            sink: RecordingSink<Int>(log: log),
            closing: { sink in
                log.append("closing")
                return { sink.receive($0) }
            }, lifetime)
        for v in 1...3 { subject.sendNext(v) }
        subject.sendError(Failure())
        #expect(log.value == ["closing", "next 2", "next 4", "error failure"])
        lifetime.dispose()
    }
}

import Testing
@testable import ReactiveUV
import ReactiveUVTestKit

/// Every time operator, drawn as marble diagrams on virtual time (1 frame = 1 virtual second).
@Suite struct TimeOperatorMarbleTests {
    @Test func marbleParsingAndRendering() throws {
        #expect(try Marble.parse("-a-(bc)|") == [
            .init(frame: 1, event: .next("a")), .init(frame: 3, event: .next("b")),
            .init(frame: 3, event: .next("c")), .init(frame: 4, event: .completed),
        ])
        #expect(try Marble.parse("a-^-b") == [.init(frame: -2, event: .next("a")), .init(frame: 1, event: .next("b"))])
        #expect(throws: MarbleError.self) { try Marble.parse("(a") }
        #expect(Marble.render(try Marble.parse("--a--(b|)")) == "--a--(b|)")
    }

    @Test func coldSignalReplaysPerSubscription() {
        let s = TestScheduler()
        let cold = s.createColdSignal("-a-b|")
        #expect(expect(cold, on: s) == "-a-b|")
        s.advance(by: 10)
        #expect(expect(cold, on: s) == "-a-b|")
    }

    @Test func hotSignalSendsOnlyFromSubscription() {
        let s = TestScheduler()
        let hot = s.createHotSignal("^-a--b---c|")
        s.advance(by: 3)
        #expect(expect(hot, on: s) == "-b---c|")
    }

    @Test func throttleIsDebounceAndFlushesOnCompletion() {
        let s = TestScheduler()
        let source = s.createColdSignal("-a-b-----c|")
        #expect(expect(source.throttle(2, on: s), on: s) == "-----b----(c|)")
    }

    @Test func throttleValuesPassingTestSendsOthersAtOnceAndDropsHeld() {
        let s = TestScheduler()
        let source = s.createColdSignal("-a-x---b|")
        #expect(expect(source.throttle(2, valuesPassingTest: { $0 != "x" }, on: s), on: s) == "---x----(b|)")
    }

    @Test func throttleDropsHeldValueOnError() {
        let s = TestScheduler()
        #expect(expect(s.createColdSignal("-a#").throttle(2, on: s), on: s) == "--#")
    }

    @Test func debounceDropsHeldValueOnCompletion() {
        let s = TestScheduler()
        let source = s.createColdSignal("-a-b-----c|")
        #expect(expect(source.debounce(2, on: s), on: s) == "-----b----|")
        #expect(expect(source.debounce(2, on: s, flushOnCompletion: true), on: s) == "-----b----(c|)")
    }

    @Test func delayShiftsValuesAndCompletionButNotErrors() {
        let s = TestScheduler()
        #expect(expect(s.createColdSignal("-a-b|").delay(2, on: s), on: s) == "---a-b|")
        #expect(expect(s.createColdSignal("-a-#").delay(2, on: s), on: s) == "---#")
    }

    @Test func timeoutIsATotalDurationLimit() {
        let s = TestScheduler()
        #expect(expect(s.createColdSignal("a-b-c-d|").timeout(5, on: s), on: s) == "a-b-c#")
        #expect(expect(s.createColdSignal("a-b|").timeout(5, on: s), on: s) == "a-b|")
    }

    @Test func timeoutDisposesTheSource() {
        let s = TestScheduler()
        var disposed = false
        let source = s.createColdSignal("a-------|").on(disposed: { disposed = true })
        #expect(expect(source.timeout(3, on: s), on: s) == "a--#")
        #expect(disposed)
    }

    @Test func bufferWithTimeStartsOnFirstValueAndFlushesOnCompletion() {
        let s = TestScheduler()
        let source = s.createColdSignal("ab---c-d|")
        let render: ([String]) -> String = { $0.isEmpty ? "_" : "[" + $0.joined() + "]" }
        let got = expect(source.bufferWithTime(3, on: s), on: s, render: render)
        // [ab] at 0+3, then c at 5 starts a new window; completion at 8 flushes [cd] early.
        #expect(got.actual == "---[ab]----([cd]|)")
    }

    @Test func intervalTicksEveryIntervalAfterOneInterval() {
        let s = TestScheduler()
        let ticks = Signal.interval(2, on: s).scan(start: 0) { n, _ in n + 1 }.take(3)
        #expect(expect(ticks, on: s) == "--1-2-(3|)")
    }

    @Test func intervalOnImmediateSchedulerIsAnError() {
        var error: (any Error)?
        Signal.interval(1, on: Scheduler.immediate).subscribeError { error = $0 }
        #expect(error as? SignalError == .invalidScheduler("interval needs a scheduler that keeps time, not the immediate one"))
    }

    @Test func sampleSendsLatestOnEachTick() {
        let s = TestScheduler()
        let source = s.createColdSignal("a---b------")
        let sampler = s.createColdSignal("--x-y-z|")
        #expect(expect(source.sample(sampler), on: s, frames: 12) == "--a-b-b|")
    }

    @Test func deliverOnTestSchedulerKeepsOrder() {
        let s = TestScheduler()
        #expect(expect(s.createColdSignal("(ab)-c|").deliverOn(s), on: s) == "(ab)-c|")
    }

    @Test func subscribeOnDefersSubscription() {
        let s = TestScheduler()
        var subscribed = false
        let source = Signal<String>.create { sub in
            subscribed = true
            sub.sendNext("a")
            sub.sendCompleted()
            return nil
        }
        let r = s.record(source.subscribeOn(s))
        #expect(!subscribed)
        s.advance()
        #expect(subscribed)
        #expect(r.values == ["a"])
    }

    @Test func retryWithBackoffWaitsLongerEachTime() {
        let s = TestScheduler()
        var attempts: [SchedulerTime] = []
        let failing = Signal<String>.create { sub in
            attempts.append(s.now)
            sub.sendError(MarbleError.error)
            return nil
        }
        let r = s.record(failing.retry(maxRetries: 3, initialDelay: 1, multiplier: 2, on: s))
        s.run()
        #expect(attempts.map { $0.nanoseconds / 1_000_000_000 } == [0, 1, 3, 7])
        #expect(r.marble() == "-------#")
    }

    @Test func timerSendsOnceThenCompletesViaInterval() {
        let s = TestScheduler()
        #expect(expect(Signal.interval(3, on: s).take(1).mapReplace("t"), on: s) == "---(t|)")
    }
}

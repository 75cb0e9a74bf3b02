import ReactiveUV
import ReactiveUVTestKit
import Testing

// The test kit's examples (ReactiveUVTestKit.md, TestingWithMarbles.md, and the README's
// "Testing your own pipelines"), run as the Swift Testing tests they are in the articles.

@Suite struct TestKitExamples {
    /// ReactiveUVTestKit.md and TestingWithMarbles.md, "A test".
    @Test func throttleKeepsTheLastValueOfABurst() {
        let s = TestScheduler()
        let source = s.createColdSignal("-a-b-----c|")
        #expect(expect(source.throttle(2, on: s), on: s) == "-----b----(c|)")
    }

    /// TestingWithMarbles.md: record and inspect.
    @Test func aRecorderHoldsTheValuesAndTheTerminalEvent() {
        let s = TestScheduler()
        let signal = s.createColdSignal("-a-b|")
        let recorder = s.record(signal)
        s.advance(by: 10)
        #expect(recorder.values == ["a", "b"])
        #expect(recorder.events.last?.event.isTerminating == true)
    }

    /// A diagram that does not match fails: the comparison is not a formality.
    @Test func aWrongDiagramDoesNotMatch() {
        let s = TestScheduler()
        let source = s.createColdSignal("-a-b-----c|")
        #expect(expect(source.throttle(2, on: s), on: s) != "-a-b-----c|")
    }
}

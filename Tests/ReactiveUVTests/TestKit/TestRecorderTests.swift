import ReactiveUV
import ReactiveUVTestKit
import Testing

/// The test kit is its own product (ReactiveUVTestKit); these tests use it as a client
/// would, through its public API only (no `@testable`).
@Suite struct TestRecorderTests {
    /// `events` (and `values`, `isTerminated`, `marble`) may be read while another thread
    /// sends: every snapshot is a consistent prefix of what was sent, in order, and the
    /// last one has everything.
    @Test func eventsAreSafeToReadWhileAnotherThreadSends() {
        let scheduler = TestScheduler()
        let subject = Subject<Int>()
        let recorder = scheduler.record(subject)
        let count = 20_000
        let join = startThread {
            for i in 0..<count { subject.sendNext(i) }
            subject.sendCompleted()
        }
        var snapshots = 0
        var lastSeen = 0
        while !recorder.isTerminated {
            let values = recorder.values
            #expect(values.count >= lastSeen, "a later snapshot never has fewer events")
            #expect(values == Array(0..<values.count), "each snapshot is an in-order prefix")
            lastSeen = values.count
            snapshots += 1
        }
        join()
        #expect(snapshots > 0)
        #expect(recorder.values == Array(0..<count))
        #expect(recorder.events.count == count + 1)
        #expect(recorder.events.last?.event.isTerminating == true)
    }

    /// Recorded times come from the scheduler's virtual clock; `marble` draws them.
    @Test func recordsVirtualTimesAndDrawsThem() {
        let scheduler = TestScheduler()
        let recorder = scheduler.record(scheduler.createColdSignal("-a--b|"))
        scheduler.run()
        #expect(recorder.events.map { $0.time.nanoseconds } == [1_000_000_000, 4_000_000_000, 5_000_000_000])
        #expect(recorder.marble() == "-a--b|")
        #expect(expect(scheduler.createColdSignal("--x|").map { $0.uppercased() }, on: scheduler) == "--X|")
    }

    /// A hot signal sends at its times whether or not anyone listens; a late recorder sees
    /// only what comes after its subscription.
    @Test func hotSignalsSendToWhoeverIsSubscribed() {
        let scheduler = TestScheduler()
        let hot = scheduler.createHotSignal("^-a-b-c|")
        scheduler.advance(by: 2)
        let recorder = scheduler.record(hot)
        scheduler.run()
        #expect(recorder.values == ["b", "c"])
        #expect(recorder.isTerminated)
    }
}

import Testing
@testable import ReactiveUV
import ReactiveUVTestKit

/// The logging helpers write through the process-wide `SignalLog.sink`: serialized, so one
/// test's replacement sink never swallows another's lines.
@Suite(.serialized) struct LoggingTests {
    @Test func logHelpersWriteThroughTheReplaceableSink() {
        let lines = Locked<[String]>([])
        let previous = SignalLog.sink
        SignalLog.sink = { line in lines.withLock { $0.append(line) } }
        defer { SignalLog.sink = previous }

        opRecord(Signal.fromArray([1]).named("logAllSignal").logAll())
        opRecord(Signal<Int>.error(OpError.boom).named("logErrorSignal").logError())
        opRecord(Signal<Int>.fromArray([2]).named("logNextSignal").logNext())
        opRecord(Signal<Int>.empty().named("logCompletedSignal").logCompleted())
        let mine = lines.value.filter { $0.hasPrefix("log") }
        #expect(mine == [
            "logAllSignal next: 1", "logAllSignal completed", "logErrorSignal error: boom", "logNextSignal next: 2",
            "logCompletedSignal completed",
        ])
    }

    @Test func logEventsLogsSubscriptionEventsAndDisposal() {
        let lines = Locked<[String]>([])
        let previous = SignalLog.sink
        SignalLog.sink = { line in lines.withLock { $0.append(line) } }
        defer { SignalLog.sink = previous }

        let subject = Subject<Int>()
        let log = opRecord(subject.logEvents(identifier: "beyond-tap"))
        subject.sendNext(7)
        log.dispose()
        opRecord(Signal<Int>.error(OpError.boom).logEvents(identifier: "beyond-tap2"))
        let mine = lines.value.filter { $0.hasPrefix("[beyond-tap") }
        #expect(mine == [
            "[beyond-tap] subscribed", "[beyond-tap] next: 7", "[beyond-tap] disposed",
            "[beyond-tap2] subscribed", "[beyond-tap2] error: boom", "[beyond-tap2] disposed",
        ])
    }

    @Test func loggingOperatorsPassEventsThroughUnchanged() {
        let previous = SignalLog.sink
        SignalLog.sink = { _ in }
        defer { SignalLog.sink = previous }
        let p = OpProbe()
        #expect(opRecord(Signal.fromArray([1, 2]).logAll().logEvents(identifier: "x")).events == [.next(1), .next(2), .completed])
        opRecord(Signal<Int>.never().probed(p).logAll()).dispose()
        #expect(p.subscriptions == 1 && p.live == 0)
    }
}

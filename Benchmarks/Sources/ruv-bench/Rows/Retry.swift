import OpenCombine
import ReactiveUV

// Values pushed through subject → retry() → sink: the per-value cost of an operator that
// resubscribes on error (RAC's `-retry`, on most network signals), subscribed where its
// class is not known. No error is sent: the row measures what every value pays.

extension Row {
    static let retry = Row(
        name: "retry",
        title: "subject→retry()→sink (10M values)",
        unit: "value",
        size: 10_000_000,
        reactiveUV: Retry.reactiveUV,
        openCombine: Retry.openCombine,
        baseline: Retry.baseline
    )
}

enum Retry {
    struct Failure: Error {}

    static func reactiveUV(_ n: Int) -> Int {
        let subject = ReactiveUV.Subject<Int>()
        var sum = 0
        let subscription = subject.retry().subscribeNext { sum &+= $0 }
        for i in 0..<n { subject.sendNext(i) }
        subscription.dispose()
        return sum
    }

    static func openCombine(_ n: Int) -> Int {
        let subject = PassthroughSubject<Int, Failure>()
        var sum = 0
        let cancellable = subject.retry(Int.max).sink(receiveCompletion: { _ in }, receiveValue: { sum &+= $0 })
        for i in 0..<n { subject.send(i) }
        cancellable.cancel()
        return sum
    }

    /// A forwarding closure that checks the event kind (as a retry must), then the sink.
    static func baseline(_ n: Int) -> Int {
        var sum = 0
        let sink: (Int) -> Void = opaque { sum &+= $0 }
        let forward: (Int?) -> Void = opaque { if let v = $0 { sink(v) } }
        for i in 0..<n { forward(i) }
        return sum
    }
}

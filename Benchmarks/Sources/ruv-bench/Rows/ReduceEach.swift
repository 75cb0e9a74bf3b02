import OpenCombine
import ReactiveUV

// Tuples pushed through subject → reduceEach → sink: RAC's `combineLatest(…).reduceEach`
// idiom without the combining, so the row shows what the reducing step costs per value.
// OpenCombine has no reduceEach: its counterpart is a map over the tuple.

extension Row {
    static let reduceEach = Row(
        name: "reduceeach",
        title: "subject of pairs→reduceEach→sink (10M values)",
        unit: "value",
        size: 10_000_000,
        reactiveUV: ReduceEach.reactiveUV,
        openCombine: ReduceEach.openCombine,
        baseline: ReduceEach.baseline
    )
}

enum ReduceEach {
    static func reactiveUV(_ n: Int) -> Int {
        let subject = ReactiveUV.Subject<(Int, Int)>()
        var sum = 0
        let subscription = subject.reduceEach { $0 &+ $1 }.subscribeNext { sum &+= $0 }
        for i in 0..<n { subject.sendNext((i, 1)) }
        subscription.dispose()
        return sum
    }

    static func openCombine(_ n: Int) -> Int {
        let subject = PassthroughSubject<(Int, Int), Never>()
        var sum = 0
        let cancellable = subject.map { $0.0 &+ $0.1 }.sink { sum &+= $0 }
        for i in 0..<n { subject.send((i, 1)) }
        cancellable.cancel()
        return sum
    }

    /// A reducing closure, then the sink.
    static func baseline(_ n: Int) -> Int {
        var sum = 0
        let sink: (Int) -> Void = opaque { sum &+= $0 }
        let reduce: ((Int, Int)) -> Void = opaque { sink($0.0 &+ $0.1) }
        for i in 0..<n { reduce((i, 1)) }
        return sum
    }
}

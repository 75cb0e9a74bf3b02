import OpenCombine
import ReactiveUV

// Row 1: values pushed through subject → map → filter → scan → sink.
//
// The per-event cost of a linear chain: one hot source, three stages, one subscriber.

extension Row {
    static let pipeline = Row(
        name: "pipeline",
        title: "subject→map→filter→scan→sink (10M values)",
        unit: "value",
        size: 10_000_000,
        reactiveUV: Pipeline.reactiveUV,
        openCombine: Pipeline.openCombine,
        baseline: Pipeline.baseline
    )
}

enum Pipeline {
    static func reactiveUV(_ n: Int) -> Int {
        let subject = ReactiveUV.Subject<Int>()
        var sum = 0
        let subscription = subject
            .map { $0 &+ 1 }
            .filter { $0 & 1 == 0 }
            .scan(start: 0, reduce: &+)
            .subscribeNext { sum &+= $0 }
        for i in 0..<n { subject.sendNext(i) }
        subscription.dispose()
        return sum
    }

    static func openCombine(_ n: Int) -> Int {
        let subject = PassthroughSubject<Int, Never>()
        var sum = 0
        let cancellable = subject
            .map { $0 &+ 1 }
            .filter { $0 & 1 == 0 }
            .scan(0, &+)
            .sink { sum &+= $0 }
        for i in 0..<n { subject.send(i) }
        cancellable.cancel()
        return sum
    }

    /// The same stages as plain closures chained by hand, each one a real indirect call
    /// (`opaque` stops the optimizer from fusing them into one loop body, which no chain
    /// built at run time could get).
    static func baseline(_ n: Int) -> Int {
        var sum = 0
        var accumulator = 0
        let sink: (Int) -> Void = opaque { sum &+= $0 }
        let scan: (Int) -> Void = opaque {
            accumulator = accumulator &+ $0
            sink(accumulator)
        }
        let filter: (Int) -> Void = opaque { if $0 & 1 == 0 { scan($0) } }
        let map: (Int) -> Void = opaque { filter($0 &+ 1) }
        for i in 0..<n { map(i) }
        return sum
    }
}

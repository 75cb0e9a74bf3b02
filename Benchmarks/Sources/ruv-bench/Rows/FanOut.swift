import OpenCombine
import ReactiveUV

// Row 3: one hot source, 100 subscribers; reported per delivered value (n × 100).

extension Row {
    static let fanOut = Row(
        name: "fanout",
        title: "subject fan-out to 100 subscribers (100k values)",
        unit: "delivered value",
        size: 100_000,
        eventsPerUnit: FanOut.subscribers,
        reactiveUV: FanOut.reactiveUV,
        openCombine: FanOut.openCombine,
        baseline: FanOut.baseline
    )

    /// The same fan-out with sinks that cost next to nothing: each subscriber adds into its
    /// own cell of a buffer (no captured `var`, so no dynamic exclusivity check, which in
    /// `fanout` is most of every column's time), so the row shows what the library itself
    /// spends per delivery.
    static let fanOutTally = Row(
        name: "fanout-tally",
        title: "subject fan-out to 100 subscribers, sinks without exclusivity checks",
        unit: "delivered value",
        size: 100_000,
        eventsPerUnit: FanOut.subscribers,
        reactiveUV: FanOut.tallyReactiveUV,
        openCombine: FanOut.tallyOpenCombine,
        baseline: FanOut.tallyBaseline
    )
}

enum FanOut {
    static let subscribers = 100

    static func reactiveUV(_ n: Int) -> Int {
        let subject = ReactiveUV.Subject<Int>()
        var sum = 0
        var subscriptions: [Disposable] = []
        for _ in 0..<subscribers {
            subscriptions.append(subject.subscribeNext { sum &+= $0 })
        }
        for i in 0..<n { subject.sendNext(i) }
        for s in subscriptions { s.dispose() }
        return sum
    }

    static func openCombine(_ n: Int) -> Int {
        let subject = PassthroughSubject<Int, Never>()
        var sum = 0
        var cancellables: [AnyCancellable] = []
        for _ in 0..<subscribers {
            cancellables.append(subject.sink { sum &+= $0 })
        }
        for i in 0..<n { subject.send(i) }
        for c in cancellables { c.cancel() }
        return sum
    }

    /// An array of 100 closures, each called for each value.
    static func baseline(_ n: Int) -> Int {
        var sum = 0
        var sinks: [(Int) -> Void] = []
        for _ in 0..<subscribers {
            sinks.append(opaque { sum &+= $0 })
        }
        sinks = opaque(sinks)
        for i in 0..<n {
            for sink in sinks { sink(i) }
        }
        return sum
    }

    /// One counter cell per subscriber, zeroed; the checksum is their sum.
    static func cells() -> UnsafeMutableBufferPointer<Int> {
        let cells = UnsafeMutableBufferPointer<Int>.allocate(capacity: subscribers)
        cells.initialize(repeating: 0)
        return cells
    }

    /// Sums and frees the cells.
    static func total(_ cells: UnsafeMutableBufferPointer<Int>) -> Int {
        let sum = cells.reduce(0, &+)
        cells.deallocate()
        return sum
    }

    static func tallyReactiveUV(_ n: Int) -> Int {
        let subject = ReactiveUV.Subject<Int>()
        let tally = cells()
        let subscriptions = (0..<subscribers).map { k in
            let cell = tally.baseAddress! + k
            return subject.subscribeNext { cell.pointee &+= $0 }
        }
        for i in 0..<n { subject.sendNext(i) }
        for s in subscriptions { s.dispose() }
        return total(tally)
    }

    static func tallyOpenCombine(_ n: Int) -> Int {
        let subject = PassthroughSubject<Int, Never>()
        let tally = cells()
        let cancellables = (0..<subscribers).map { k in
            let cell = tally.baseAddress! + k
            return subject.sink { cell.pointee &+= $0 }
        }
        for i in 0..<n { subject.send(i) }
        for c in cancellables { c.cancel() }
        return total(tally)
    }

    static func tallyBaseline(_ n: Int) -> Int {
        let tally = cells()
        let sinks: [(Int) -> Void] = opaque((0..<subscribers).map { k in
            let cell = tally.baseAddress! + k
            return opaque { cell.pointee &+= $0 }
        })
        for i in 0..<n {
            for sink in sinks { sink(i) }
        }
        return total(tally)
    }
}

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
}

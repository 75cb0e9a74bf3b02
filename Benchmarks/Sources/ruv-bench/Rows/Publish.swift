import OpenCombine
import ReactiveUV

// Values pushed through subject → publish() (a multicast connection, connected) → two
// subscribers: the per-value cost of sharing one subscription (RAC's `-publish` and
// `-connect`, behind `replay`, `replayLazily` and `share`). OpenCombine's counterpart is
// `share()`.

extension Row {
    static let publish = Row(
        name: "publish",
        title: "subject→publish()→2 subscribers (10M values)",
        unit: "value",
        size: 10_000_000,
        reactiveUV: Publish.reactiveUV,
        openCombine: Publish.openCombine,
        baseline: Publish.baseline
    )
}

enum Publish {
    static func reactiveUV(_ n: Int) -> Int {
        let source = ReactiveUV.Subject<Int>()
        let connection = source.publish()
        var sum = 0
        let a = connection.signal.subscribeNext { sum &+= $0 }
        let b = connection.signal.subscribeNext { sum &+= $0 }
        let connected = connection.connect()
        for i in 0..<n { source.sendNext(i) }
        connected.dispose()
        a.dispose()
        b.dispose()
        return sum
    }

    static func openCombine(_ n: Int) -> Int {
        let source = PassthroughSubject<Int, Never>()
        let shared = source.share()
        var sum = 0
        let a = shared.sink { sum &+= $0 }
        let b = shared.sink { sum &+= $0 }
        for i in 0..<n { source.send(i) }
        a.cancel()
        b.cancel()
        return sum
    }

    /// A forwarding closure that calls two sinks.
    static func baseline(_ n: Int) -> Int {
        var sum = 0
        let sinkA: (Int) -> Void = opaque { sum &+= $0 }
        let sinkB: (Int) -> Void = opaque { sum &+= $0 }
        let forward: (Int) -> Void = opaque { sinkA($0); sinkB($0) }
        for i in 0..<n { forward(i) }
        return sum
    }
}

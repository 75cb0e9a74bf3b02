import OpenCombine
import ReactiveUV

// Row 2: subscribe → receive → dispose cycles of a one-value cold signal with map + filter.
//
// The per-subscription cost: building the chain, subscribing, one value, completion, and
// tearing the subscription down. Half the values pass the filter (odd i).

extension Row {
    static let coldSubscribe = Row(
        name: "cold",
        title: "return(i)→map→filter→subscribeNext, dispose (1M cycles)",
        unit: "cycle",
        size: 1_000_000,
        reactiveUV: ColdSubscribe.reactiveUV,
        openCombine: ColdSubscribe.openCombine,
        baseline: ColdSubscribe.baseline
    )
}

enum ColdSubscribe {
    static func reactiveUV(_ n: Int) -> Int {
        var sum = 0
        for i in 0..<n {
            let subscription = Signal.return(i)
                .map { $0 &+ 1 }
                .filter { $0 & 1 == 0 }
                .subscribeNext { sum &+= $0 }
            subscription.dispose()
        }
        return sum
    }

    static func openCombine(_ n: Int) -> Int {
        var sum = 0
        for i in 0..<n {
            let cancellable = Just(i)
                .map { $0 &+ 1 }
                .filter { $0 & 1 == 0 }
                .sink { sum &+= $0 }
            cancellable.cancel()
        }
        return sum
    }

    /// Per cycle, a chain of three closures is built (each escaping, so each a heap
    /// context, as a subscription's stages are) and called once.
    static func baseline(_ n: Int) -> Int {
        var sum = 0
        for i in 0..<n {
            let sink: (Int) -> Void = opaque { sum &+= $0 }
            let filter: (Int) -> Void = opaque { if $0 & 1 == 0 { sink($0) } }
            let map: (Int) -> Void = opaque { filter($0 &+ 1) }
            map(i)
        }
        return sum
    }
}

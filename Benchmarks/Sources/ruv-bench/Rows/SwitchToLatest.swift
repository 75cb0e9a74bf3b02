import OpenCombine
import ReactiveUV

// Row 4: switchToLatest over n inner subjects with 10 values each; reported per inner value
// (n × 10). Each inner costs a subscription and the disposal of the previous one.

extension Row {
    static let switchToLatest = Row(
        name: "switch",
        title: "switchToLatest, 100k inner subjects × 10 values",
        unit: "inner value",
        size: 100_000,
        eventsPerUnit: SwitchToLatest.valuesPerInner,
        reactiveUV: SwitchToLatest.reactiveUV,
        openCombine: SwitchToLatest.openCombine,
        baseline: SwitchToLatest.baseline
    )
}

enum SwitchToLatest {
    static let valuesPerInner = 10

    static func reactiveUV(_ n: Int) -> Int {
        let outer = ReactiveUV.Subject<Signal<Int>>()
        var sum = 0
        let subscription = outer.switchToLatest().subscribeNext { sum &+= $0 }
        for _ in 0..<n {
            let inner = ReactiveUV.Subject<Int>()
            outer.sendNext(inner)
            for j in 0..<valuesPerInner { inner.sendNext(j) }
        }
        subscription.dispose()
        return sum
    }

    static func openCombine(_ n: Int) -> Int {
        let outer = PassthroughSubject<PassthroughSubject<Int, Never>, Never>()
        var sum = 0
        let cancellable = outer.switchToLatest().sink { sum &+= $0 }
        for _ in 0..<n {
            let inner = PassthroughSubject<Int, Never>()
            outer.send(inner)
            for j in 0..<valuesPerInner { inner.send(j) }
        }
        cancellable.cancel()
        return sum
    }

    /// A hand-made "latest" slot: each inner is a heap object holding the sink closure; a
    /// new inner unhooks the previous one and becomes the one that is forwarded.
    static func baseline(_ n: Int) -> Int {
        final class Inner {
            var sink: ((Int) -> Void)?
        }
        var sum = 0
        let sink: (Int) -> Void = opaque { sum &+= $0 }
        var current: Inner?
        for _ in 0..<n {
            let inner = opaque(Inner())
            current?.sink = nil
            inner.sink = opaque { sink($0) }
            current = inner
            for j in 0..<valuesPerInner { inner.sink?(j) }
        }
        blackHole(current)
        return sum
    }
}

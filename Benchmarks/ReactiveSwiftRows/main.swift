// rs-bench: ruv-bench's operator rows written against ReactiveSwift 7.2.1, for a comparison
// that never puts ReactiveSwift into a package of ours: scripts/bench-reactiveswift.sh
// builds this file in a throw-away package beside a fetched copy of ReactiveSwift (plain
// release, or with -cross-module-optimization) and runs it next to ruv-bench.
//
// Same workloads, sizes and checksums as ruv-bench's rows of the same names; ns per event,
// the median of 5 timed runs after one warm-up run.

import ReactiveSwift

#if canImport(Glibc)
import Glibc
#endif

@inline(never) @_optimize(none) func blackHole<T>(_ value: T) {}
@inline(never) @_optimize(none) func opaque<T>(_ value: T) -> T { value }

func now() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

typealias Pipe = (output: Signal<Int, Never>, input: Signal<Int, Never>.Observer)
func pipes(_ k: Int) -> [Pipe] { (0..<k).map { _ in Signal<Int, Never>.pipe() } }

/// Value i into source i % k.
func drive(_ p: [Pipe], _ n: Int) {
    var j = 0
    for i in 0..<n {
        p[j].input.send(value: i)
        j += 1
        if j == p.count { j = 0 }
    }
}

let departures: [Int] = (0..<10_000).map { ($0 * 7919) % 10_000 }
func chunks(_ n: Int, _ k: Int) -> [[Int]] { (0..<k).map { c in Array((c * n / k)..<((c + 1) * n / k)) } }

struct RSRow {
    let name: String
    let size: Int
    let eventsPerUnit: Int
    let work: (Int) -> Int
}

let rows: [RSRow] = [
    RSRow(name: "pipeline", size: 10_000_000, eventsPerUnit: 1) { n in
        let (signal, input) = Signal<Int, Never>.pipe()
        var sum = 0
        let d = signal.map { $0 &+ 1 }.filter { $0 & 1 == 0 }.scan(0, &+).observeValues { sum &+= $0 }
        for i in 0..<n { input.send(value: i) }
        d?.dispose()
        return sum
    },
    RSRow(name: "cold", size: 1_000_000, eventsPerUnit: 1) { n in
        var sum = 0
        for i in 0..<n {
            SignalProducer<Int, Never>(value: i).map { $0 &+ 1 }.filter { $0 & 1 == 0 }
                .startWithValues { sum &+= $0 }.dispose()
        }
        return sum
    },
    RSRow(name: "fanout", size: 100_000, eventsPerUnit: 100) { n in
        let (signal, input) = Signal<Int, Never>.pipe()
        var sum = 0
        let ds = (0..<100).map { _ in signal.observeValues { sum &+= $0 } }
        for i in 0..<n { input.send(value: i) }
        for d in ds { d?.dispose() }
        return sum
    },
    RSRow(name: "fanout-tally", size: 100_000, eventsPerUnit: 100) { n in
        let (signal, input) = Signal<Int, Never>.pipe()
        let tally = UnsafeMutableBufferPointer<Int>.allocate(capacity: 100)
        tally.initialize(repeating: 0)
        let ds = (0..<100).map { k -> Disposable? in
            let cell = tally.baseAddress! + k
            return signal.observeValues { cell.pointee &+= $0 }
        }
        for i in 0..<n { input.send(value: i) }
        for d in ds { d?.dispose() }
        let sum = tally.reduce(0, &+)
        tally.deallocate()
        return sum
    },
    RSRow(name: "switch", size: 100_000, eventsPerUnit: 10) { n in
        let (outer, outerInput) = Signal<Signal<Int, Never>, Never>.pipe()
        var sum = 0
        let d = outer.flatten(.latest).observeValues { sum &+= $0 }
        for _ in 0..<n {
            let (inner, innerInput) = Signal<Int, Never>.pipe()
            outerInput.send(value: inner)
            for j in 0..<10 { innerInput.send(value: j) }
        }
        d?.dispose()
        return sum
    },
    RSRow(name: "flatten", size: 1_000, eventsPerUnit: 1_000) { n in
        let inner = SignalProducer<Int, Never> { observer, _ in
            for i in 0..<1_000 { observer.send(value: i) }
            observer.sendCompleted()
        }
        var sum = 0
        SignalProducer<SignalProducer<Int, Never>, Never>(Array(repeating: inner, count: n))
            .flatten(.merge).startWithValues { sum &+= $0 }
        return sum
    },
    RSRow(name: "cl-with", size: 1_000_000, eventsPerUnit: 1) { n in
        let p = pipes(2)
        var sum = 0
        let d = p[0].output.combineLatest(with: p[1].output).observeValues { sum &+= $0.0 &+ $0.1 }
        drive(p, n)
        d?.dispose()
        return sum
    },
    RSRow(name: "cl-static6", size: 1_000_000, eventsPerUnit: 1) { n in
        let p = pipes(6)
        var sum = 0
        let d = Signal.combineLatest(p[0].output, p[1].output, p[2].output, p[3].output, p[4].output, p[5].output)
            .observeValues { sum &+= $0.0 &+ $0.1 &+ $0.2 &+ $0.3 &+ $0.4 &+ $0.5 }
        drive(p, n)
        d?.dispose()
        return sum
    },
    RSRow(name: "cl-array6", size: 1_000_000, eventsPerUnit: 1) { n in
        let p = pipes(6)
        var sum = 0
        let d = Signal.combineLatest(p.map(\.output)).observeValues { for v in $0 { sum &+= v } }
        drive(p, n)
        d?.dispose()
        return sum
    },
    RSRow(name: "zip-with", size: 1_000_000, eventsPerUnit: 1) { n in
        let p = pipes(2)
        var sum = 0
        let d = p[0].output.zip(with: p[1].output).observeValues { sum &+= $0.0 &+ $0.1 }
        drive(p, n)
        d?.dispose()
        return sum
    },
    RSRow(name: "zip-static6", size: 1_000_000, eventsPerUnit: 1) { n in
        let p = pipes(6)
        var sum = 0
        let d = Signal.zip(p[0].output, p[1].output, p[2].output, p[3].output, p[4].output, p[5].output)
            .observeValues { sum &+= $0.0 &+ $0.1 &+ $0.2 &+ $0.3 &+ $0.4 &+ $0.5 }
        drive(p, n - n % 6)
        d?.dispose()
        return sum
    },
    RSRow(name: "zip-array6", size: 1_000_000, eventsPerUnit: 1) { n in
        let p = pipes(6)
        var sum = 0
        let d = Signal.zip(p.map(\.output)).observeValues { for v in $0 { sum &+= v } }
        drive(p, n - n % 6)
        d?.dispose()
        return sum
    },
    RSRow(name: "merge-array6", size: 1_000_000, eventsPerUnit: 1) { n in
        let p = pipes(6)
        var sum = 0
        let d = Signal.merge(p.map(\.output)).observeValues { sum &+= $0 }
        drive(p, n)
        d?.dispose()
        return sum
    },
    RSRow(name: "concat-array6", size: 1_000_000, eventsPerUnit: 1) { n in
        var sum = 0
        SignalProducer<SignalProducer<Int, Never>, Never>(chunks(n, 6).map { SignalProducer($0) })
            .flatten(.concat).startWithValues { sum &+= $0 }
        return sum
    },
    RSRow(name: "subject-churn", size: 20_000, eventsPerUnit: 1) { n in
        let (signal, input) = Signal<Int, Never>.pipe()
        var sum = 0
        for round in 0..<(n / 10_000) {
            var ds: [Disposable?] = []
            ds.reserveCapacity(10_000)
            for _ in 0..<10_000 { ds.append(signal.observeValues { sum &+= $0 }) }
            input.send(value: round)
            for i in departures { ds[i]?.dispose() }
        }
        return sum
    },
]

let wanted = CommandLine.arguments.dropFirst().first.map { Set($0.split(separator: ",").map(String.init)) }
print("| row | ReactiveSwift (ns per event) | checksum |")
print("| --- | ---: | ---: |")
for row in rows where wanted?.contains(row.name) ?? true {
    let checksum = row.work(opaque(row.size))
    var samples: [Double] = []
    for _ in 0..<5 {
        let start = now()
        blackHole(row.work(opaque(row.size)))
        samples.append(Double(now() - start) / Double(row.size * row.eventsPerUnit))
    }
    samples.sort()
    print("| \(row.name) | \((samples[2] * 10).rounded() / 10) | \(checksum) |")
}

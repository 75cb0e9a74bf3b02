import OpenCombine
import ReactiveUV

// The call forms of issue 13 §3: every static and collection form of combineLatest, zip,
// merge and concat beside the instance form (`a.combineLatest(with: b)`...), per value
// sent into a source, so arities compare directly. Sources are subjects sent to in turn
// (value i into source i % k); concat's sources are cold arrays. Plus subscribers coming to
// and going from a subject with 10,000 of them (CompoundDisposable/Subject removal).
//
// Checksums: every form adds up what it emits, so all columns of a row agree.
// Generated shape (one function per arity), like the operators themselves.

extension Row {
    static let cl_with = Row(
        name: "cl-with",
        title: "combineLatest: a.combineLatest(with: b)",
        unit: "value sent",
        size: 1_000_000,
        reactiveUV: CallForms.clWith,
        openCombine: nil,
        baseline: { CallForms.clBaseline($0, 2) }
    )
    static let cl_static2 = Row(
        name: "cl-static2",
        title: "combineLatest: Signal.combineLatest(×2) typed",
        unit: "value sent",
        size: 1_000_000,
        reactiveUV: CallForms.clStatic2,
        openCombine: nil,
        baseline: { CallForms.clBaseline($0, 2) }
    )
    static let cl_static3 = Row(
        name: "cl-static3",
        title: "combineLatest: Signal.combineLatest(×3) typed",
        unit: "value sent",
        size: 1_000_000,
        reactiveUV: CallForms.clStatic3,
        openCombine: nil,
        baseline: { CallForms.clBaseline($0, 3) }
    )
    static let cl_static4 = Row(
        name: "cl-static4",
        title: "combineLatest: Signal.combineLatest(×4) typed",
        unit: "value sent",
        size: 1_000_000,
        reactiveUV: CallForms.clStatic4,
        openCombine: nil,
        baseline: { CallForms.clBaseline($0, 4) }
    )
    static let cl_static5 = Row(
        name: "cl-static5",
        title: "combineLatest: Signal.combineLatest(×5) typed",
        unit: "value sent",
        size: 1_000_000,
        reactiveUV: CallForms.clStatic5,
        openCombine: nil,
        baseline: { CallForms.clBaseline($0, 5) }
    )
    static let cl_static6 = Row(
        name: "cl-static6",
        title: "combineLatest: Signal.combineLatest(×6) typed",
        unit: "value sent",
        size: 1_000_000,
        reactiveUV: CallForms.clStatic6,
        openCombine: nil,
        baseline: { CallForms.clBaseline($0, 6) }
    )
    static let cl_array2 = Row(
        name: "cl-array2",
        title: "combineLatest: Signal.combineLatest([×2])",
        unit: "value sent",
        size: 1_000_000,
        reactiveUV: { CallForms.clArray($0, 2) },
        openCombine: nil,
        baseline: { CallForms.clBaseline($0, 2) }
    )
    static let cl_array6 = Row(
        name: "cl-array6",
        title: "combineLatest: Signal.combineLatest([×6])",
        unit: "value sent",
        size: 1_000_000,
        reactiveUV: { CallForms.clArray($0, 6) },
        openCombine: nil,
        baseline: { CallForms.clBaseline($0, 6) }
    )
    static let zip_with = Row(
        name: "zip-with",
        title: "zip: a.zip(with: b)",
        unit: "value sent",
        size: 1_000_000,
        reactiveUV: CallForms.zipWith,
        openCombine: CallForms.zipOC2,
        baseline: { CallForms.zipBaseline($0, 2) }
    )
    static let zip_static2 = Row(
        name: "zip-static2",
        title: "zip: Signal.zip(×2) typed",
        unit: "value sent",
        size: 1_000_000,
        reactiveUV: CallForms.zipStatic2,
        openCombine: CallForms.zipOC2,
        baseline: { CallForms.zipBaseline($0, 2) }
    )
    static let zip_static3 = Row(
        name: "zip-static3",
        title: "zip: Signal.zip(×3) typed",
        unit: "value sent",
        size: 1_000_000,
        reactiveUV: CallForms.zipStatic3,
        openCombine: CallForms.zipOC3,
        baseline: { CallForms.zipBaseline($0, 3) }
    )
    static let zip_static4 = Row(
        name: "zip-static4",
        title: "zip: Signal.zip(×4) typed",
        unit: "value sent",
        size: 1_000_000,
        reactiveUV: CallForms.zipStatic4,
        openCombine: CallForms.zipOC4,
        baseline: { CallForms.zipBaseline($0, 4) }
    )
    static let zip_static5 = Row(
        name: "zip-static5",
        title: "zip: Signal.zip(×5) typed",
        unit: "value sent",
        size: 1_000_000,
        reactiveUV: CallForms.zipStatic5,
        openCombine: nil,
        baseline: { CallForms.zipBaseline($0, 5) }
    )
    static let zip_static6 = Row(
        name: "zip-static6",
        title: "zip: Signal.zip(×6) typed",
        unit: "value sent",
        size: 1_000_000,
        reactiveUV: CallForms.zipStatic6,
        openCombine: nil,
        baseline: { CallForms.zipBaseline($0, 6) }
    )
    static let zip_array2 = Row(
        name: "zip-array2",
        title: "zip: Signal.zip([×2])",
        unit: "value sent",
        size: 1_000_000,
        reactiveUV: { CallForms.zipArray($0, 2) },
        openCombine: nil,
        baseline: { CallForms.zipBaseline($0, 2) }
    )
    static let zip_array6 = Row(
        name: "zip-array6",
        title: "zip: Signal.zip([×6])",
        unit: "value sent",
        size: 1_000_000,
        reactiveUV: { CallForms.zipArray($0, 6) },
        openCombine: nil,
        baseline: { CallForms.zipBaseline($0, 6) }
    )
    static let merge_with = Row(
        name: "merge-with",
        title: "merge: a.merge(b)",
        unit: "value sent",
        size: 1_000_000,
        reactiveUV: CallForms.mergeWith,
        openCombine: { CallForms.mergeOC($0, 2) },
        baseline: { CallForms.forwardBaseline($0, 2) }
    )
    static let merge_array2 = Row(
        name: "merge-array2",
        title: "merge: Signal.merge([×2])",
        unit: "value sent",
        size: 1_000_000,
        reactiveUV: { CallForms.mergeArray($0, 2) },
        openCombine: { CallForms.mergeOC($0, 2) },
        baseline: { CallForms.forwardBaseline($0, 2) }
    )
    static let merge_array6 = Row(
        name: "merge-array6",
        title: "merge: Signal.merge([×6])",
        unit: "value sent",
        size: 1_000_000,
        reactiveUV: { CallForms.mergeArray($0, 6) },
        openCombine: { CallForms.mergeOC($0, 6) },
        baseline: { CallForms.forwardBaseline($0, 6) }
    )
    static let concat_with = Row(
        name: "concat-with",
        title: "concat: a.concat(b), cold arrays",
        unit: "value",
        size: 1_000_000,
        reactiveUV: CallForms.concatWith,
        openCombine: { CallForms.concatOC($0, 2) },
        baseline: { CallForms.concatBaseline($0, 2) }
    )
    static let concat_array2 = Row(
        name: "concat-array2",
        title: "concat: Signal.concat([×2]), cold arrays",
        unit: "value",
        size: 1_000_000,
        reactiveUV: { CallForms.concatArray($0, 2) },
        openCombine: { CallForms.concatOC($0, 2) },
        baseline: { CallForms.concatBaseline($0, 2) }
    )
    static let concat_array6 = Row(
        name: "concat-array6",
        title: "concat: Signal.concat([×6]), cold arrays",
        unit: "value",
        size: 1_000_000,
        reactiveUV: { CallForms.concatArray($0, 6) },
        openCombine: { CallForms.concatOC($0, 6) },
        baseline: { CallForms.concatBaseline($0, 6) }
    )
    static let subject_churn = Row(
        name: "subject-churn",
        title: "subject with 10,000 subscribers coming and going (scattered order)",
        unit: "subscriber",
        size: 20_000,
        reactiveUV: CallForms.churnRUV,
        openCombine: CallForms.churnOC,
        baseline: CallForms.churnBaseline
    )

    /// The call-form rows, in table order.
    static let callForms: [Row] = [
        .cl_with, .cl_static2, .cl_static3, .cl_static4, .cl_static5, .cl_static6, .cl_array2, .cl_array6, .zip_with, .zip_static2, .zip_static3, .zip_static4, .zip_static5, .zip_static6, .zip_array2, .zip_array6, .merge_with, .merge_array2, .merge_array6, .concat_with, .concat_array2, .concat_array6, .subject_churn
    ]
}

enum CallForms {
    static func subjects(_ k: Int) -> [ReactiveUV.Subject<Int>] { (0..<k).map { _ in ReactiveUV.Subject<Int>() } }

    /// Value i into source i % k.
    @inline(__always)
    static func drive(_ s: [ReactiveUV.Subject<Int>], _ n: Int) {
        var j = 0
        for i in 0..<n {
            s[j].sendNext(i)
            j += 1
            if j == s.count { j = 0 }
        }
    }

    // MARK: combineLatest

    static func clWith(_ n: Int) -> Int {
        let s = subjects(2)
        var sum = 0
        let d = s[0].combineLatest(with: s[1]).subscribeNext { sum &+= $0.0 &+ $0.1 }
        drive(s, n)
        d.dispose()
        return sum
    }

    static func clStatic2(_ n: Int) -> Int {
        let s = subjects(2)
        var sum = 0
        let d = Signal.combineLatest(s[0], s[1]).subscribeNext { sum &+= $0.0 &+ $0.1 }
        drive(s, n)
        d.dispose()
        return sum
    }

    static func clStatic3(_ n: Int) -> Int {
        let s = subjects(3)
        var sum = 0
        let d = Signal.combineLatest(s[0], s[1], s[2]).subscribeNext { sum &+= $0.0 &+ $0.1 &+ $0.2 }
        drive(s, n)
        d.dispose()
        return sum
    }

    static func clStatic4(_ n: Int) -> Int {
        let s = subjects(4)
        var sum = 0
        let d = Signal.combineLatest(s[0], s[1], s[2], s[3]).subscribeNext { sum &+= $0.0 &+ $0.1 &+ $0.2 &+ $0.3 }
        drive(s, n)
        d.dispose()
        return sum
    }

    static func clStatic5(_ n: Int) -> Int {
        let s = subjects(5)
        var sum = 0
        let d = Signal.combineLatest(s[0], s[1], s[2], s[3], s[4]).subscribeNext { sum &+= $0.0 &+ $0.1 &+ $0.2 &+ $0.3 &+ $0.4 }
        drive(s, n)
        d.dispose()
        return sum
    }

    static func clStatic6(_ n: Int) -> Int {
        let s = subjects(6)
        var sum = 0
        let d = Signal.combineLatest(s[0], s[1], s[2], s[3], s[4], s[5]).subscribeNext { sum &+= $0.0 &+ $0.1 &+ $0.2 &+ $0.3 &+ $0.4 &+ $0.5 }
        drive(s, n)
        d.dispose()
        return sum
    }

    static func clArray(_ n: Int, _ k: Int) -> Int {
        let s = subjects(k)
        var sum = 0
        let d = Signal.combineLatest(s).subscribeNext { for v in $0 { sum &+= v } }
        drive(s, n)
        d.dispose()
        return sum
    }

    /// k slots; once all are set, each update adds up the k latest values.
    static func clBaseline(_ n: Int, _ k: Int) -> Int {
        var sum = 0
        var slots = [Int](repeating: 0, count: k)
        var missing = k
        var seen = [Bool](repeating: false, count: k)
        var updates: [(Int) -> Void] = []
        for index in 0..<k {
            updates.append(opaque { v in
                if !seen[index] { seen[index] = true; missing -= 1 }
                slots[index] = v
                if missing == 0 { for x in slots { sum &+= x } }
            })
        }
        var j = 0
        for i in 0..<n {
            updates[j](i)
            j += 1
            if j == k { j = 0 }
        }
        return sum
    }

    // MARK: zip

    static func zipWith(_ n: Int) -> Int {
        let s = subjects(2)
        var sum = 0
        let d = s[0].zip(with: s[1]).subscribeNext { sum &+= $0.0 &+ $0.1 }
        drive(s, n)
        d.dispose()
        return sum
    }

    static func zipStatic2(_ n: Int) -> Int {
        let s = subjects(2)
        var sum = 0
        let d = Signal.zip(s[0], s[1]).subscribeNext { sum &+= $0.0 &+ $0.1 }
        drive(s, n - n % 2)
        d.dispose()
        return sum
    }

    static func zipStatic3(_ n: Int) -> Int {
        let s = subjects(3)
        var sum = 0
        let d = Signal.zip(s[0], s[1], s[2]).subscribeNext { sum &+= $0.0 &+ $0.1 &+ $0.2 }
        drive(s, n - n % 3)
        d.dispose()
        return sum
    }

    static func zipStatic4(_ n: Int) -> Int {
        let s = subjects(4)
        var sum = 0
        let d = Signal.zip(s[0], s[1], s[2], s[3]).subscribeNext { sum &+= $0.0 &+ $0.1 &+ $0.2 &+ $0.3 }
        drive(s, n - n % 4)
        d.dispose()
        return sum
    }

    static func zipStatic5(_ n: Int) -> Int {
        let s = subjects(5)
        var sum = 0
        let d = Signal.zip(s[0], s[1], s[2], s[3], s[4]).subscribeNext { sum &+= $0.0 &+ $0.1 &+ $0.2 &+ $0.3 &+ $0.4 }
        drive(s, n - n % 5)
        d.dispose()
        return sum
    }

    static func zipStatic6(_ n: Int) -> Int {
        let s = subjects(6)
        var sum = 0
        let d = Signal.zip(s[0], s[1], s[2], s[3], s[4], s[5]).subscribeNext { sum &+= $0.0 &+ $0.1 &+ $0.2 &+ $0.3 &+ $0.4 &+ $0.5 }
        drive(s, n - n % 6)
        d.dispose()
        return sum
    }

    static func zipOC2(_ n: Int) -> Int {
        let s0 = PassthroughSubject<Int, Never>()
        let s1 = PassthroughSubject<Int, Never>()
        let s = [s0, s1]
        var sum = 0
        let c = s0.zip(s1).sink { sum &+= $0.0 &+ $0.1 }
        var j = 0
        for i in 0..<(n - n % 2) {
            s[j].send(i)
            j += 1
            if j == 2 { j = 0 }
        }
        c.cancel()
        return sum
    }

    static func zipOC3(_ n: Int) -> Int {
        let s0 = PassthroughSubject<Int, Never>()
        let s1 = PassthroughSubject<Int, Never>()
        let s2 = PassthroughSubject<Int, Never>()
        let s = [s0, s1, s2]
        var sum = 0
        let c = s0.zip(s1, s2).sink { sum &+= $0.0 &+ $0.1 &+ $0.2 }
        var j = 0
        for i in 0..<(n - n % 3) {
            s[j].send(i)
            j += 1
            if j == 3 { j = 0 }
        }
        c.cancel()
        return sum
    }

    static func zipOC4(_ n: Int) -> Int {
        let s0 = PassthroughSubject<Int, Never>()
        let s1 = PassthroughSubject<Int, Never>()
        let s2 = PassthroughSubject<Int, Never>()
        let s3 = PassthroughSubject<Int, Never>()
        let s = [s0, s1, s2, s3]
        var sum = 0
        let c = s0.zip(s1, s2, s3).sink { sum &+= $0.0 &+ $0.1 &+ $0.2 &+ $0.3 }
        var j = 0
        for i in 0..<(n - n % 4) {
            s[j].send(i)
            j += 1
            if j == 4 { j = 0 }
        }
        c.cancel()
        return sum
    }

    static func zipArray(_ n: Int, _ k: Int) -> Int {
        let s = subjects(k)
        var sum = 0
        let d = Signal.zip(s).subscribeNext { for v in $0 { sum &+= v } }
        drive(s, n - n % k)
        d.dispose()
        return sum
    }

    /// k queues; when each has a value, the k oldest are taken and added up.
    static func zipBaseline(_ n: Int, _ k: Int) -> Int {
        var sum = 0
        var queues = [[Int]](repeating: [], count: k)
        var heads = [Int](repeating: 0, count: k)
        var updates: [(Int) -> Void] = []
        for index in 0..<k {
            updates.append(opaque { v in
                queues[index].append(v)
                for q in 0..<k where heads[q] == queues[q].count { return }
                for q in 0..<k {
                    sum &+= queues[q][heads[q]]
                    heads[q] += 1
                    if heads[q] == queues[q].count { queues[q].removeAll(keepingCapacity: true); heads[q] = 0 }
                }
            })
        }
        var j = 0
        for i in 0..<(n - n % k) {
            updates[j](i)
            j += 1
            if j == k { j = 0 }
        }
        return sum
    }

    // MARK: merge

    static func mergeWith(_ n: Int) -> Int {
        let s = subjects(2)
        var sum = 0
        let d = s[0].merge(s[1]).subscribeNext { sum &+= $0 }
        drive(s, n)
        d.dispose()
        return sum
    }

    static func mergeArray(_ n: Int, _ k: Int) -> Int {
        let s = subjects(k)
        var sum = 0
        let d = Signal.merge(s).subscribeNext { sum &+= $0 }
        drive(s, n)
        d.dispose()
        return sum
    }

    static func mergeOC(_ n: Int, _ k: Int) -> Int {
        let s = (0..<k).map { _ in PassthroughSubject<Int, Never>() }
        var sum = 0
        // OpenCombine 0.14 has no Merge: flatMap over the subjects is its merge.
        let c = Publishers.Sequence<[PassthroughSubject<Int, Never>], Never>(sequence: s).flatMap { $0 }.sink { sum &+= $0 }
        var j = 0
        for i in 0..<n {
            s[j].send(i)
            j += 1
            if j == k { j = 0 }
        }
        c.cancel()
        return sum
    }

    /// k closures that all forward into one sink.
    static func forwardBaseline(_ n: Int, _ k: Int) -> Int {
        var sum = 0
        let sink: (Int) -> Void = opaque { sum &+= $0 }
        let sources: [(Int) -> Void] = (0..<k).map { _ in opaque { sink($0) } }
        var j = 0
        for i in 0..<n {
            sources[j](i)
            j += 1
            if j == k { j = 0 }
        }
        return sum
    }

    // MARK: concat

    /// n values split into k consecutive chunks.
    static func chunks(_ n: Int, _ k: Int) -> [[Int]] {
        (0..<k).map { c in Array((c * n / k)..<((c + 1) * n / k)) }
    }

    static func concatWith(_ n: Int) -> Int {
        let c = chunks(n, 2)
        var sum = 0
        Signal.fromArray(c[0]).concat(.fromArray(c[1])).subscribeNext { sum &+= $0 }
        return sum
    }

    static func concatArray(_ n: Int, _ k: Int) -> Int {
        let c = chunks(n, k)
        var sum = 0
        Signal.concat(c.map { Signal.fromArray($0) }).subscribeNext { sum &+= $0 }
        return sum
    }

    static func concatOC(_ n: Int, _ k: Int) -> Int {
        let c = chunks(n, k)
        var sum = 0
        let publishers = c.map { Publishers.Sequence<[Int], Never>(sequence: $0).eraseToAnyPublisher() }
        let chain = publishers.dropFirst().reduce(publishers[0]) { $0.append($1).eraseToAnyPublisher() }
        let cancellable = chain.sink { sum &+= $0 }
        cancellable.cancel()
        return sum
    }

    static func concatBaseline(_ n: Int, _ k: Int) -> Int {
        let c = chunks(n, k)
        var sum = 0
        let sink: (Int) -> Void = opaque { sum &+= $0 }
        for chunk in c {
            let source: (Int) -> Void = opaque { sink($0) }
            for v in chunk { source(v) }
        }
        return sum
    }

    // MARK: subscribers coming and going

    static let crowd = 10_000

    /// Departure order: a fixed permutation (7,919 is prime to 10,000), so neither the
    /// newest nor the oldest subscriber leaves first.
    static let departures: [Int] = (0..<crowd).map { ($0 * 7919) % crowd }

    static func churnRUV(_ n: Int) -> Int {
        let subject = ReactiveUV.Subject<Int>()
        var sum = 0
        for round in 0..<(n / crowd) {
            var subscriptions: [Disposable] = []
            subscriptions.reserveCapacity(crowd)
            for _ in 0..<crowd { subscriptions.append(subject.subscribeNext { sum &+= $0 }) }
            subject.sendNext(round)
            for i in departures { subscriptions[i].dispose() }
        }
        return sum
    }

    static func churnOC(_ n: Int) -> Int {
        let subject = PassthroughSubject<Int, Never>()
        var sum = 0
        for round in 0..<(n / crowd) {
            var cancellables: [AnyCancellable] = []
            cancellables.reserveCapacity(crowd)
            for _ in 0..<crowd { cancellables.append(subject.sink { sum &+= $0 }) }
            subject.send(round)
            for i in departures { cancellables[i].cancel() }
        }
        return sum
    }

    /// Closures in a dictionary keyed by a token: O(1) in and out, in no order.
    static func churnBaseline(_ n: Int) -> Int {
        var sum = 0
        var sinks: [Int: (Int) -> Void] = [:]
        for round in 0..<(n / crowd) {
            for token in 0..<crowd { sinks[token] = opaque { sum &+= $0 } }
            for sink in sinks.values { sink(round) }
            for i in departures { sinks[i] = nil }
        }
        return sum
    }
}

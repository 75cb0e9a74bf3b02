import OpenCombine
import ReactiveUV

// The operator rows of the catalogue issue: flatten, combineLatest, zip, and RAC's
// throttle (a debounce) on virtual time. Each beside OpenCombine's nearest operator where
// one exists, and a hand-written closure version.

extension Row {
    static let flatten = Row(
        name: "flatten",
        title: "flatten: 1,000 inner cold signals × 1,000 values",
        unit: "value",
        size: 1_000,
        eventsPerUnit: Combinators.valuesPerInner,
        reactiveUV: Combinators.flattenRUV,
        openCombine: Combinators.flattenOC,
        baseline: Combinators.flattenBaseline
    )

    static let combineLatest = Row(
        name: "combinelatest",
        title: "combineLatest of two subjects, 1M alternating updates",
        unit: "update",
        size: 1_000_000,
        reactiveUV: Combinators.combineLatestRUV,
        openCombine: Combinators.combineLatestOC,
        baseline: Combinators.combineLatestBaseline
    )

    static let zip = Row(
        name: "zip",
        title: "zip of two subjects, 1M pairs",
        unit: "pair",
        size: 1_000_000,
        reactiveUV: Combinators.zipRUV,
        openCombine: Combinators.zipOC,
        baseline: Combinators.zipBaseline
    )

    static let throttle = Row(
        name: "throttle",
        title: "throttle (debounce) on a TestScheduler, 1M values",
        unit: "value",
        size: 1_000_000,
        reactiveUV: Combinators.throttleRUV,
        openCombine: nil,  // OpenCombine has no virtual-time scheduler to run debounce on
        baseline: Combinators.throttleBaseline
    )
}

enum Combinators {
    static let valuesPerInner = 1_000

    // MARK: flatten

    static func flattenRUV(_ n: Int) -> Int {
        let inner = Signal<Int>.create { s in
            for i in 0..<valuesPerInner { s.sendNext(i) }
            s.sendCompleted()
            return nil
        }
        var sum = 0
        Signal<Signal<Int>>.fromArray(Array(repeating: inner, count: n)).flatten().subscribeNext { sum &+= $0 }
        return sum
    }

    static func flattenOC(_ n: Int) -> Int {
        var sum = 0
        let cancellable = Publishers.Sequence<[Int], Never>(sequence: Array(0..<n))
            .flatMap { _ in Publishers.Sequence<Range<Int>, Never>(sequence: 0..<valuesPerInner) }
            .sink { sum &+= $0 }
        cancellable.cancel()
        return sum
    }

    static func flattenBaseline(_ n: Int) -> Int {
        var sum = 0
        let sink: (Int) -> Void = opaque { sum &+= $0 }
        for _ in 0..<n {
            let inner: (Int) -> Void = opaque { sink($0) }
            for i in 0..<valuesPerInner { inner(i) }
        }
        return sum
    }

    // MARK: combineLatest

    static func combineLatestRUV(_ n: Int) -> Int {
        let a = ReactiveUV.Subject<Int>(), b = ReactiveUV.Subject<Int>()
        var sum = 0
        let d = a.combineLatest(with: b).subscribeNext { sum &+= $0.0 &+ $0.1 }
        for i in 0..<n { if i & 1 == 0 { a.sendNext(i) } else { b.sendNext(i) } }
        d.dispose()
        return sum
    }

    static func combineLatestOC(_ n: Int) -> Int {
        let a = PassthroughSubject<Int, Never>(), b = PassthroughSubject<Int, Never>()
        var sum = 0
        let c = a.combineLatest(b).sink { sum &+= $0.0 &+ $0.1 }
        for i in 0..<n { if i & 1 == 0 { a.send(i) } else { b.send(i) } }
        c.cancel()
        return sum
    }

    static func combineLatestBaseline(_ n: Int) -> Int {
        var sum = 0
        var left: Int?, right: Int?
        let emit: (Int) -> Void = opaque { _ in if let l = left, let r = right { sum &+= l &+ r } }
        let onA: (Int) -> Void = opaque { left = $0; emit(0) }
        let onB: (Int) -> Void = opaque { right = $0; emit(0) }
        for i in 0..<n { if i & 1 == 0 { onA(i) } else { onB(i) } }
        return sum
    }

    // MARK: zip

    static func zipRUV(_ n: Int) -> Int {
        let a = ReactiveUV.Subject<Int>(), b = ReactiveUV.Subject<Int>()
        var sum = 0
        let d = a.zip(with: b).subscribeNext { sum &+= $0.0 &+ $0.1 }
        for i in 0..<n {
            a.sendNext(i)
            b.sendNext(i)
        }
        d.dispose()
        return sum
    }

    static func zipOC(_ n: Int) -> Int {
        let a = PassthroughSubject<Int, Never>(), b = PassthroughSubject<Int, Never>()
        var sum = 0
        let c = a.zip(b).sink { sum &+= $0.0 &+ $0.1 }
        for i in 0..<n {
            a.send(i)
            b.send(i)
        }
        c.cancel()
        return sum
    }

    static func zipBaseline(_ n: Int) -> Int {
        var sum = 0
        var queue: [Int] = []
        var head = 0
        let onA: (Int) -> Void = opaque { queue.append($0) }
        let onB: (Int) -> Void = opaque { v in
            sum &+= queue[head] &+ v
            head += 1
            if head == queue.count { queue.removeAll(keepingCapacity: true); head = 0 }
        }
        for i in 0..<n {
            onA(i)
            onB(i)
        }
        return sum
    }

    // MARK: throttle

    /// Ten values per virtual second, then the clock moves one second: every tenth value
    /// survives the 0.5 s quiet period.
    static func throttleRUV(_ n: Int) -> Int {
        let scheduler = TestScheduler()
        let subject = ReactiveUV.Subject<Int>()
        var sum = 0
        let d = subject.throttle(0.5, on: scheduler).subscribeNext { sum &+= $0 }
        for i in 0..<n {
            subject.sendNext(i)
            if i % 10 == 9 { scheduler.advance(by: 1) }
        }
        d.dispose()
        return sum
    }

    static func throttleBaseline(_ n: Int) -> Int {
        var sum = 0
        var held: Int?
        let receive: (Int) -> Void = opaque { held = $0 }
        let tick: (Int) -> Void = opaque { _ in if let h = held { sum &+= h; held = nil } }
        for i in 0..<n {
            receive(i)
            if i % 10 == 9 { tick(0) }
        }
        return sum
    }
}

import Testing
@testable import ReactiveUV

/// groupBy, not/and/or, reduceEach, reduceApply (catalogue §4g).
@Suite struct GroupingTests {
    @Test func groupBySendsAGroupPerNewKeyAndRoutesValues() {
        let source = Subject<Int>()
        var groups: [String: [Int]] = [:]
        var keys: [String] = []
        source.groupBy({ $0 % 2 == 0 ? "even" : "odd" }, transform: { $0 * 10 }).subscribeNext { g in
            keys.append(g.key)
            g.subscribeNext { [key = g.key] in groups[key, default: []].append($0) }
        }
        for i in 1...5 { source.sendNext(i) }
        #expect(keys == ["odd", "even"])
        #expect(groups == ["odd": [10, 30, 50], "even": [20, 40]])
    }

    @Test func groupByTerminatesTheOuterFirstThenEveryGroupInCreationOrder() {
        let source = Subject<String>()
        var order: [String] = []
        source.groupBy { $0 }.subscribe(next: { g in
            g.subscribeCompleted { order.append("group \(g.key)") }
        }, completed: { order.append("outer") })
        source.sendNext("b")
        source.sendNext("a")
        source.sendNext("c")
        source.sendCompleted()
        #expect(order == ["outer", "group b", "group a", "group c"])
    }

    @Test func groupByErrorReachesTheOuterFirstThenTheGroups() {
        let source = Subject<String>()
        var order: [String] = []
        source.groupBy { $0 }.subscribe(next: { g in
            g.subscribeError { order.append("group \(g.key) \($0)") }
        }, error: { order.append("outer \($0)") })
        source.sendNext("x")
        source.sendNext("y")
        source.sendError(OpError.boom)
        #expect(order == ["outer boom", "group x boom", "group y boom"])
    }

    @Test func groupByValuesBeforeAGroupSubscriberAreLost() {
        let source = Subject<Int>()
        var group: GroupedSignal<Int, Int>?
        source.groupBy { _ in 0 }.subscribeNext { group = $0 }
        source.sendNext(1)
        var got: [Int] = []
        group?.subscribeNext { got.append($0) }
        source.sendNext(2)
        #expect(got == [2])
    }

    @Test func groupByCallsTheKeyAndTransformBlocksOncePerValue() {
        let source = Subject<Int>()
        var keyCalls: [Int] = []
        var transformCalls: [Int] = []
        var got: [Int] = []
        source.groupBy({ keyCalls.append($0); return $0 % 3 }, transform: { transformCalls.append($0); return $0 })
            .subscribeNext { g in g.subscribeNext { got.append($0) } }
        for i in 0..<9 { source.sendNext(i) }
        #expect(keyCalls == Array(0..<9))
        #expect(transformCalls == Array(0..<9))
        #expect(got == Array(0..<9))
    }

    /// A group's subscriber sends to the source from inside its delivery, making new groups
    /// (the groups table grows) while a group is being sent to: every value reaches its group
    /// once, in order.
    @Test func groupBySurvivesNewGroupsMadeFromInsideAGroupsDelivery() {
        let source = Subject<Int>()
        var got: [Int: [Int]] = [:]
        var keys: [Int] = []
        // The group's block holds its key and the source weakly, not the group or the
        // source themselves: either would be a reference cycle (LeakSanitizer).
        let subscription = source.groupBy { $0 % 100 }.subscribeNext { [weak source] g in
            keys.append(g.key)
            g.subscribeNext { [key = g.key] v in
                got[key, default: []].append(v)
                // From group 0's first values: one new key each, nested.
                if key == 0 && v < 500 { source?.sendNext(v / 100 + 1) }
            }
        }
        defer { subscription.dispose() }
        source.sendNext(0)
        for v in stride(from: 100, through: 400, by: 100) { source.sendNext(v) }
        #expect(keys == [0, 1, 2, 3, 4, 5])
        #expect(got[0] == [0, 100, 200, 300, 400])
        #expect((1...5).map { got[$0] ?? [] } == [[1], [2], [3], [4], [5]])
    }

    /// The groups belong to the subscription's state; one the subscriber keeps outlives the
    /// subscription (it gets no more values) and is freed once let go.
    @Test func groupByGroupKeptByTheSubscriberOutlivesTheSubscription() {
        let source = Subject<Int>()
        var kept: GroupedSignal<Int, Int>?
        weak var weakGroup: GroupedSignal<Int, Int>?
        var got: [Int] = []
        let subscription = source.groupBy { _ in 7 }.subscribeNext { g in
            kept = g
            weakGroup = g
            g.subscribeNext { got.append($0) }
        }
        source.sendNext(1)
        subscription.dispose()
        source.sendNext(2)
        #expect(kept?.key == 7)
        #expect(got == [1])
        kept = nil
        #expect(weakGroup == nil)
    }

    @Test func groupByDisposalDisposesUpstream() {
        let p = OpProbe()
        opRecord(Signal<Int>.never().probed(p).groupBy { $0 }).dispose()
        #expect(p.subscriptions == 1 && p.live == 0)
    }

    @Test func notInvertsBooleans() {
        #expect(opRecord(Signal.fromArray([true, false]).not()).events == [.next(false), .next(true), .completed])
        #expect(opRecord(Signal<Bool>.error(OpError.boom).not()).events == [.error(OpError.boom)])
    }

    @Test func andOrOfTuplesAndArrays() {
        let pairs = Signal.fromArray([(true, true), (true, false), (false, false)])
        #expect(opRecord(pairs.and()).values == [true, false, false])
        #expect(opRecord(pairs.or()).values == [true, true, false])
        let triples = Signal.fromArray([(true, true, true), (true, false, true), (false, false, false)])
        #expect(opRecord(triples.and()).values == [true, false, false])
        #expect(opRecord(triples.or()).values == [true, true, false])
        let arrays = Signal.fromArray([[true], [true, false], [false, false]])
        #expect(opRecord(arrays.and()).events == [.next(true), .next(false), .next(false), .completed])
        #expect(opRecord(arrays.or()).events == [.next(true), .next(true), .next(false), .completed])
    }

    @Test func reduceEachCallsTheBlockWithTheTupleElements() {
        let two = Signal.fromArray([(1, "a"), (2, "b")]).reduceEach { (n: Int, s: String) -> String in "\(n)\(s)" }
        #expect(opRecord(two).events == [.next("1a"), .next("2b"), .completed])
        let three = Signal.fromArray([(1, 2, 3)]).reduceEach { (a: Int, b: Int, c: Int) -> [Int] in [a, b, c] }
        #expect(opRecord(three).values == [[1, 2, 3]])
        let four = Signal.fromArray([(1, 2, 3, 4)]).reduceEach { (a: Int, b: Int, c: Int, d: Int) -> [Int] in [a, b, c, d] }
        #expect(opRecord(four).values == [[1, 2, 3, 4]])
        let five = Signal.fromArray([(1, 2, 3, 4, 5)])
            .reduceEach { (a: Int, b: Int, c: Int, d: Int, e: Int) -> [Int] in [a, b, c, d, e] }
        #expect(opRecord(five).values == [[1, 2, 3, 4, 5]])
        let six = Signal.fromArray([(1, 2, 3, 4, 5, 6)])
            .reduceEach { (a: Int, b: Int, c: Int, d: Int, e: Int, f: Int) -> [Int] in [a, b, c, d, e, f] }
        #expect(opRecord(six).values == [[1, 2, 3, 4, 5, 6]])
        let failing = Signal<(Int, Int)>.error(OpError.boom).reduceEach { (a: Int, b: Int) -> Int in a + b }
        #expect(opRecord(failing).events == [.error(OpError.boom)])
    }

    @Test func reduceEachAfterCombineLatestSeesEveryValue() {
        let a = Subject<Int>(), b = Subject<Int>()
        let log = opRecord(a.combineLatest(with: b).reduceEach { $0 * $1 })
        a.sendNext(2)
        b.sendNext(3)
        a.sendNext(4)
        #expect(log.values == [6, 12])
    }

    @Test func reduceApplyCallsTheBlockInTheTuple() {
        let f1: (Int) -> [Int] = { [$0] }
        let f2: (Int, Int) -> [Int] = { [$0, $1] }
        let f3: (Int, Int, Int) -> [Int] = { [$0, $1, $2] }
        let f4: (Int, Int, Int, Int) -> [Int] = { [$0, $1, $2, $3] }
        let f5: (Int, Int, Int, Int, Int) -> [Int] = { [$0, $1, $2, $3, $4] }
        let one: Signal<[Int]> = Signal<((Int) -> [Int], Int)>.return((f1, 1)).reduceApply()
        #expect(opRecord(one).events == [.next([1]), .completed])
        let two: Signal<[Int]> = Signal<((Int, Int) -> [Int], Int, Int)>.return((f2, 1, 2)).reduceApply()
        #expect(opRecord(two).values == [[1, 2]])
        let three: Signal<[Int]> = Signal<((Int, Int, Int) -> [Int], Int, Int, Int)>.return((f3, 1, 2, 3)).reduceApply()
        #expect(opRecord(three).values == [[1, 2, 3]])
        let four: Signal<[Int]> = Signal<((Int, Int, Int, Int) -> [Int], Int, Int, Int, Int)>
            .return((f4, 1, 2, 3, 4)).reduceApply()
        #expect(opRecord(four).values == [[1, 2, 3, 4]])
        let five: Signal<[Int]> = Signal<((Int, Int, Int, Int, Int) -> [Int], Int, Int, Int, Int, Int)>
            .return((f5, 1, 2, 3, 4, 5)).reduceApply()
        #expect(opRecord(five).values == [[1, 2, 3, 4, 5]])
        let failing: Signal<[Int]> = Signal<((Int) -> [Int], Int)>.error(OpError.boom).reduceApply()
        #expect(opRecord(failing).events == [.error(OpError.boom)])
    }
}

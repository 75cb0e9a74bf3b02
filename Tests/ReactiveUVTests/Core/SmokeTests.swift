import Testing
@testable import ReactiveUV

@Suite struct SmokeTests {
    @Test func pipeline() {
        let subject = Subject<Int>()
        var got: [Int] = []
        var completed = false
        let d = subject.map { $0 * 2 }.filter { $0 % 4 == 0 }.scan(start: 0, reduce: +)
            .subscribe(next: { got.append($0) }, completed: { completed = true })
        for i in 0..<5 { subject.sendNext(i) }
        subject.sendCompleted()
        #expect(got == [0, 4, 12])
        #expect(completed)
        #expect(d.isDisposed)
    }

    @Test func createTakeInfinite() {
        var sent = 0
        let s = Signal<Int>.create { sub in
            while !sub.isDisposed { sub.sendNext(sent); sent += 1 }
            return nil
        }
        var got: [Int] = []
        s.take(3).subscribeNext { got.append($0) }
        #expect(got == [0, 1, 2])
        #expect(sent == 3)
    }

    @Test func mergeZipCombine() throws {
        let a = Signal.fromArray([1, 2, 3])
        let b = Signal.fromArray([10, 20])
        #expect(try Signal.merge([a, b]).toArray() == [1, 2, 3, 10, 20])
        #expect(try Signal.zip([a, b]).toArray() == [[1, 10], [2, 20]])
        #expect(try Signal.combineLatest([a, b]).toArray() == [[3, 10], [3, 20]])
        #expect(try a.concat(b).toArray() == [1, 2, 3, 10, 20])
        #expect(try Signal.fromArray([a, b]).concat().toArray() == [1, 2, 3, 10, 20])
    }

    @Test func retryCounts() {
        var subs = 0
        struct E: Error {}
        let s = Signal<Int>.create { sub in subs += 1; sub.sendError(E()); return nil }
        var err: (any Error)?
        s.retry(2).subscribeError { err = $0 }
        #expect(subs == 3)
        #expect(err is E)
    }

    @Test func switchToLatestSync() throws {
        let outer = Subject<Signal<Int>>()
        let i1 = Subject<Int>(), i2 = Subject<Int>()
        var got: [Int] = []
        var done = false
        outer.switchToLatest().subscribe(next: { got.append($0) }, completed: { done = true })
        outer.sendNext(i1); i1.sendNext(1); outer.sendNext(i2); i1.sendNext(99); i2.sendNext(2)
        outer.sendCompleted()
        #expect(!done)
        i2.sendCompleted()
        #expect(done)
        #expect(got == [1, 2])
    }
}

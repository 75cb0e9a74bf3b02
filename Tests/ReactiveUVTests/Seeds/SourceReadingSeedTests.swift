// Seed cases R01–R05 (shared/seeds/rac-source-reading.txt: createSignal, subjects, bind,
// map/flattenMap/flatten). All synchronous.

import ReactiveUV
import Testing

@Suite struct SourceReadingSeedTests {
    @Test func testR01_createSignal() {
        let log = SeedLog()
        let signal = Signal<String>.create { s in
            log("didSubscribe")
            s.sendNext("1")
            s.sendCompleted()
            return Disposable { log("disposed") }
        }
        #expect(log.entries.isEmpty)  // cold: nothing runs before a subscription
        Seeds.record(signal, into: log)
        Seeds.record(signal, into: log, prefix: "second ")
        // The block runs once per subscription; its disposable is disposed by the terminal event.
        #expect(log.entries == [
            "didSubscribe", "next(1)", "completed", "disposed",
            "didSubscribe", "second next(1)", "second completed", "disposed",
        ])
    }

    /// R01: events sent after the subscription is disposed are dropped.
    @Test func testR01_createSignal_nothingAfterDisposal() {
        let log = SeedLog()
        var subscriber: Subscriber<String>?
        let d = Seeds.record(Signal<String>.create { s in
            subscriber = s
            return nil
        }, into: log)
        subscriber?.sendNext("1")
        d.dispose()
        subscriber?.sendNext("2")
        subscriber?.sendCompleted()
        #expect(log.entries == ["next(1)"])
        #expect(subscriber?.isDisposed == true)
    }

    @Test func testR02_subjectIsHot() {
        let log = SeedLog()
        let subject = Subject<String>()
        Seeds.record(subject, into: log, prefix: "A ")
        subject.sendNext("a")
        Seeds.record(subject, into: log, prefix: "B ")
        subject.sendNext("b")
        #expect(log.entries == ["A next(a)", "A next(b)", "B next(b)"])
    }

    /// R02, ReactiveUV's documented deviation: a terminated subject replays its terminal
    /// event to late subscribers (and nothing else).
    @Test func testR02_subjectReplaysTerminalEventToLateSubscribers() {
        let log = SeedLog()
        let subject = Subject<String>()
        subject.sendNext("a")
        subject.sendCompleted()
        subject.sendNext("b")
        Seeds.record(subject, into: log, prefix: "late ")
        #expect(log.entries == ["late completed"])
    }

    /// R02 (catalogue C6): a subject used as the subscriber of several signals is terminated
    /// by the first terminal event of any of them; its other subscriptions are disposed.
    @Test func testR02_subjectAsSubscriberEndsAllOnFirstTerminalEvent() {
        let log = SeedLog()
        let subject = Subject<String>()
        Seeds.record(subject, into: log)
        let a = Subject<String>(), b = Subject<String>()
        a.on(disposed: { log("a disposed") }).subscribe(subject)
        b.on(disposed: { log("b disposed") }).subscribe(subject)
        a.sendNext("a1")
        b.sendNext("b1")
        a.sendCompleted()
        b.sendNext("b2")
        #expect(log.entries.prefix(3) == ["next(a1)", "next(b1)", "completed"])
        #expect(Set(log.entries.dropFirst(3)) == ["a disposed", "b disposed"])
        #expect(log.entries.count == 5)
    }

    @Test func testR03_bind() {
        let log = SeedLog()
        let bound = Signal<String>.return("8").bind { { value, _ in Signal.return(value) } }
        Seeds.record(bound, into: log)
        #expect(log.entries == ["next(8)", "completed"])
    }

    // MARK: R04, one test per rule of bind

    /// Rule 1: bind subscribes to the source (once per subscription, not before).
    @Test func testR04_bindSubscribesToSource() {
        let log = SeedLog()
        let source = Seeds.sync().on(subscribed: { log("source subscribed") })
        let bound = source.bind { { v, _ in Signal.return(v) } }
        #expect(log.entries.isEmpty)
        Seeds.record(bound, into: log)
        Seeds.record(bound, into: log, prefix: "again ")
        #expect(log.entries == [
            "source subscribed", "next(0)", "next(1)", "completed",
            "source subscribed", "again next(0)", "again next(1)", "again completed",
        ])
    }

    /// Rule 2: each value goes through the binding block, in order; the outer block runs once
    /// per subscription.
    @Test func testR04_bindPassesEachValueThroughBlock() {
        let log = SeedLog()
        let bound = Seeds.sync().bind { () -> (Int, inout Bool) -> Signal<Int>? in
            log("make block")
            return { v, _ in
                log("block(\(v))")
                return Signal.empty()
            }
        }
        Seeds.record(bound, into: log)
        #expect(log.entries == ["make block", "block(0)", "block(1)", "completed"])
    }

    /// Rule 3: a returned signal is subscribed at once and its events pass through (merged).
    @Test func testR04_bindSubscribesReturnedSignal() {
        let log = SeedLog()
        let inners = [Subject<String>(), Subject<String>()]
        let source = Subject<Int>()
        Seeds.record(source.bind { { v, _ in
            log("returning inner \(v)")
            return inners[v].on(subscribed: { log("inner \(v) subscribed") })
        } }, into: log)
        source.sendNext(0)
        inners[0].sendNext("a")
        source.sendNext(1)
        inners[1].sendNext("b")
        inners[0].sendNext("c")
        #expect(log.entries == [
            "returning inner 0", "inner 0 subscribed", "next(a)",
            "returning inner 1", "inner 1 subscribed", "next(b)", "next(c)",
        ])
    }

    /// Rule 4: stop = true subscribes the returned signal, then disposes the source side only;
    /// inners already subscribed keep delivering, and the result completes when they do.
    @Test func testR04_bindStopCompletesSourceSide() {
        let log = SeedLog()
        let source = Subject<Int>()
        let longInner = Subject<String>()
        let bound = source.on(disposed: { log("source disposed") }).bind { { v, stop in
            log("block(\(v))")
            if v == 0 { return longInner }
            stop = true
            return Signal.return("last \(v)")
        } }
        Seeds.record(bound, into: log)
        source.sendNext(0)
        source.sendNext(1)  // stop
        source.sendNext(2)  // the source side has ended: never reaches the block
        longInner.sendNext("still alive")
        #expect(log.entries == ["block(0)", "block(1)", "next(last 1)", "source disposed", "next(still alive)"])
        longInner.sendCompleted()
        #expect(log.entries.last == "completed")
    }

    /// Rule 4': a nil return ends the source side like stop (without an inner).
    @Test func testR04_bindNilEndsSourceSide() {
        let log = SeedLog()
        let source = Subject<Int>()
        let bound = source.on(disposed: { log("source disposed") }).bind { { v, _ -> Signal<Int>? in
            log("block(\(v))")
            return v == 1 ? nil : Signal.return(v)
        } }
        Seeds.record(bound, into: log)
        source.sendNext(0)
        source.sendNext(1)
        source.sendNext(2)
        #expect(log.entries == ["block(0)", "next(0)", "block(1)", "source disposed", "completed"])
    }

    /// Rule 5: completes only when the source and every inner have completed.
    @Test func testR04_bindCompletesWhenSourceAndInnersComplete() {
        let log = SeedLog()
        let source = Subject<Int>()
        let inners = [Subject<Int>(), Subject<Int>()]
        Seeds.record(source.bind { { v, _ in inners[v] } }, into: log)
        source.sendNext(0)
        source.sendNext(1)
        source.sendCompleted()
        log("source completed")
        inners[1].sendCompleted()
        log("inner 1 completed")
        inners[0].sendNext(5)
        inners[0].sendCompleted()
        #expect(log.entries == ["source completed", "inner 1 completed", "next(5)", "completed"])
    }

    /// Rule 6: an error from an inner is forwarded at once and everything is disposed.
    @Test func testR04_bindInnerErrorDisposesEverything() {
        let log = SeedLog()
        let source = Subject<Int>()
        let inners = [Subject<Int>(), Subject<Int>()]
        let bound = source.on(disposed: { log("source disposed") }).bind { { v, _ in
            inners[v].on(disposed: { log("inner \(v) disposed") })
        } }
        Seeds.record(bound, into: log)
        source.sendNext(0)
        source.sendNext(1)
        inners[1].sendError(SeedError())
        inners[0].sendNext(9)
        source.sendNext(0)
        let tail = Set(log.entries.dropFirst())
        #expect(log.entries.first == "error(SeedError(test, 1))")
        #expect(tail == ["source disposed", "inner 0 disposed", "inner 1 disposed"])
        #expect(log.entries.count == 4)
    }

    /// Rule 6: an error from the source is forwarded at once and the inners are disposed.
    @Test func testR04_bindSourceErrorDisposesEverything() {
        let log = SeedLog()
        let source = Subject<Int>()
        let inner = Subject<Int>()
        let bound = source.bind { { _, _ in inner.on(disposed: { log("inner disposed") }) } }
        Seeds.record(bound, into: log)
        source.sendNext(0)
        inner.sendNext(1)
        source.sendError(SeedError("source", code: 2))
        inner.sendNext(2)
        #expect(log.entries == ["next(1)", "error(SeedError(source, 2))", "inner disposed"])
    }

    // MARK: R05 map / flattenMap / flatten

    @Test func testR05_mapIsFlattenMapOfReturn() {
        let f: (Int) -> String = { "v\($0 * 10)" }
        let viaMap = SeedLog(), viaFlattenMap = SeedLog()
        Seeds.record(Seeds.sync().map(f), into: viaMap)
        Seeds.record(Seeds.sync().flattenMap { Signal.return(f($0)) }, into: viaFlattenMap)
        #expect(viaMap.entries == ["next(v0)", "next(v10)", "completed"])
        #expect(viaFlattenMap.entries == viaMap.entries)

        let failing = Seeds.sync().concat(.error(SeedError()))
        let e1 = SeedLog(), e2 = SeedLog()
        Seeds.record(failing.map(f), into: e1)
        Seeds.record(failing.flattenMap { Signal.return(f($0)) }, into: e2)
        #expect(e1.entries == ["next(v0)", "next(v10)", "error(SeedError(test, 1))"])
        #expect(e2.entries == e1.entries)
    }

    @Test func testR05_flattenIsFlattenMapIdentity() {
        func run(_ transform: (Signal<Signal<String>>) -> Signal<String>) -> [String] {
            let log = SeedLog()
            let outer = Subject<Signal<String>>()
            let a = Subject<String>(), b = Subject<String>()
            Seeds.record(transform(outer), into: log)
            outer.sendNext(a)
            a.sendNext("a1")
            outer.sendNext(b)
            b.sendNext("b1")
            a.sendNext("a2")  // merged: the older inner keeps delivering
            outer.sendCompleted()
            a.sendCompleted()
            b.sendNext("b2")
            b.sendCompleted()
            return log.entries
        }
        let flattened = run { $0.flatten() }
        let flattenMapped = run { $0.flattenMap { $0 } }
        #expect(flattened == ["next(a1)", "next(b1)", "next(a2)", "next(b2)", "completed"])
        #expect(flattenMapped == flattened)
    }

    /// R05: flattenMap treats a nil result as empty.
    @Test func testR05_flattenMapNilIsEmpty() {
        let log = SeedLog()
        Seeds.record(Seeds.sync().flattenMap { v -> Signal<Int>? in v == 0 ? nil : Signal.return(v) }, into: log)
        #expect(log.entries == ["next(1)", "completed"])
    }
}

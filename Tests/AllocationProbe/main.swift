// ruv-alloc-probe: counts the heap allocations of one subscription cycle.
//
// Run with LD_PRELOAD pointing at a malloc counter that exports
// `long ruv_malloc_counter_value(void)` (AllocationCountTests compiles one from
// Tests/AllocationProbe/malloc_counter.c). A separate process, because a test bundle that
// defined malloc itself would fight the sanitizers' own malloc (the `make sanitize` lane).
//
// Prints one line per workload: `<name> <allocations per cycle, rounded down>`. Each
// workload runs a warm-up first, so one-time costs (metadata, caches, the first growth of
// a buffer) are not counted.

import ReactiveUV

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

typealias CounterFunction = @convention(c) () -> Int

// RTLD_DEFAULT (a null handle on glibc): the preloaded object is searched first.
guard let symbol = dlsym(nil, "ruv_malloc_counter_value") else {
    print("ruv-alloc-probe: no malloc counter preloaded (LD_PRELOAD)")
    exit(2)
}
let counter = unsafeBitCast(symbol, to: CounterFunction.self)

/// Allocations per cycle of `body`, after `warmUp` cycles, over `cycles` cycles.
@inline(never)
func measure(_ name: String, warmUp: Int = 1_000, cycles: Int = 10_000, _ body: (Int) -> Void) {
    for i in 0..<warmUp { body(i) }
    let before = counter()
    for i in 0..<cycles { body(i) }
    let after = counter()
    let perCycle = Double(after - before) / Double(cycles)
    print("\(name) \(perCycle)")
}

var sum = 0

// The benchmark's `cold` row: build a chain, subscribe, receive one value and completion,
// dispose.
measure("cold") { i in
    let subscription = Signal.return(i)
        .map { $0 &+ 1 }
        .filter { $0 & 1 == 0 }
        .subscribeNext { sum &+= $0 }
    subscription.dispose()
}

// A longer chain of the fused stages.
measure("cold-long") { i in
    let subscription = Signal.return(i)
        .map { $0 &+ 1 }
        .map { $0 &* 3 }
        .filter { $0 & 1 == 0 }
        .map { $0 &- 2 }
        .subscribeNext { sum &+= $0 }
    subscription.dispose()
}

// A stateful stage in a cold chain: `scan`'s accumulator is per subscription, a `Cell`
// (the stage's `makeState()`), the one allocation the chain adds to `cold`'s.
measure("cold-scan") { i in
    let subscription = Signal.return(i)
        .map { $0 &+ 1 }
        .scan(start: 0, reduce: &+)
        .filter { $0 & 1 == 0 }
        .subscribeNext { sum &+= $0 }
    subscription.dispose()
}

// The same without operators: the floor a subscription itself costs.
measure("return") { i in
    Signal.return(i).subscribeNext { sum &+= $0 }.dispose()
}

// A subscriber coming to and going from a long-lived subject.
let subject = Subject<Int>()
let others = (0..<100).map { _ in subject.subscribeNext { sum &+= $0 } }
measure("subject") { _ in
    subject.subscribeNext { sum &+= $0 }.dispose()
}
subject.sendNext(1)
for d in others { d.dispose() }

// A `Signal.create` subscription: the block sends a value and completes. What it costs
// beyond `return`'s: the `Subscriber` the block sends into, with its lock (stored in it),
// and the closures that carry the block and the sink.
let created = Signal<Int>.create { subscriber in
    subscriber.sendNext(1)
    subscriber.sendCompleted()
    return nil
}
measure("create") { _ in
    created.subscribeNext { sum &+= $0 }.dispose()
}

// A merge-like operator's subscription: `merge` of two cold signals, each sending a value
// and completing. Its per-subscription state is a `LockedState` (`MergeState`), with the
// lock stored in it, plus a child lifetime and a forwarding closure per source.
let merged = Signal.merge([Signal.return(1), Signal.return(2)])
measure("merge") { _ in
    merged.subscribeNext { sum &+= $0 }.dispose()
}
if sum == 42 { print("") }

// The fused path of `return`/`map`/`filter` (taken where the optimizer sees the whole chain,
// as above) against the closure path (taken where it cannot: the chain, or its upstream,
// comes out of a function it does not look into). Each check subscribes the same chain
// three ways and prints `check <name> ok`, or `check <name> FAIL …` with what each got.

/// A signal the optimizer cannot see through: a subscription to it goes through the vtable
/// into the library's unspecialized code.
@_optimize(none) @inline(never)
func hidden<T>(_ signal: Signal<T>) -> Signal<T> { signal }

/// What a subscription saw, in order, and (`events`) whether it reads as disposed by then.
final class Seen {
    private var seen: [String] = []
    private var subscription: Disposable?
    var events: [String] { seen + (subscription?.isDisposed == false ? ["not disposed"] : []) }
    @inline(__always)
    func record(_ signal: Signal<String>) {
        subscription = signal.subscribe(
            next: { self.seen.append($0) },
            error: { self.seen.append("error \($0)") },
            completed: { self.seen.append("completed") })
    }
}

func check(_ name: String, expected: [String], _ fused: Seen, _ partly: Seen, _ closures: Seen) {
    if fused.events == expected && partly.events == expected && closures.events == expected {
        print("check \(name) ok")
    } else {
        print("check \(name) FAIL expected \(expected) fused \(fused.events) partly \(partly.events) closures \(closures.events)")
    }
}

struct ProbeError: Error, CustomStringConvertible { var description: String { "probe" } }

do {
    let (f, p, c) = (Seen(), Seen(), Seen())
    f.record(Signal.return(3).map { $0 * 2 }.filter { $0 > 0 }.map { "\($0)" })
    p.record(hidden(Signal.return(3).map { $0 * 2 }).filter { $0 > 0 }.map { "\($0)" })
    c.record(hidden(Signal.return(3).map { $0 * 2 }.filter { $0 > 0 }.map { "\($0)" }))
    check("map-filter-pass", expected: ["6", "completed"], f, p, c)
}
do {
    let (f, p, c) = (Seen(), Seen(), Seen())
    f.record(Signal.return(3).map { $0 * 2 }.filter { $0 < 0 }.map { "\($0)" })
    p.record(hidden(Signal.return(3).map { $0 * 2 }).filter { $0 < 0 }.map { "\($0)" })
    c.record(hidden(Signal.return(3).map { $0 * 2 }.filter { $0 < 0 }.map { "\($0)" }))
    check("map-filter-drop", expected: ["completed"], f, p, c)
}
do {
    let (f, p, c) = (Seen(), Seen(), Seen())
    f.record(Signal.return("a").map { $0 + "b" }.map { $0.count }.map { "\($0)!" })
    p.record(hidden(Signal.return("a").map { $0 + "b" }).map { $0.count }.map { "\($0)!" })
    c.record(hidden(Signal.return("a").map { $0 + "b" }.map { $0.count }.map { "\($0)!" }))
    check("maps-changing-type", expected: ["2!", "completed"], f, p, c)
}
do {
    let (f, p, c) = (Seen(), Seen(), Seen())
    f.record(Signal<Int>.error(ProbeError()).map { $0 + 1 }.filter { _ in true }.map { "\($0)" })
    p.record(hidden(Signal<Int>.error(ProbeError()).map { $0 + 1 }).filter { _ in true }.map { "\($0)" })
    c.record(hidden(Signal<Int>.error(ProbeError()).map { $0 + 1 }.filter { _ in true }.map { "\($0)" }))
    check("error-through", expected: ["error probe"], f, p, c)
}
do {
    // A stateful operator between fused stages: the stages below it take the closure.
    let (f, p, c) = (Seen(), Seen(), Seen())
    f.record(Signal.return(5).map { $0 * 2 }.scan(start: 1) { $0 + $1 }.filter { $0 > 0 }.map { "\($0)" })
    p.record(hidden(Signal.return(5).map { $0 * 2 }).scan(start: 1) { $0 + $1 }.filter { $0 > 0 }.map { "\($0)" })
    c.record(hidden(Signal.return(5).map { $0 * 2 }.scan(start: 1) { $0 + $1 }.filter { $0 > 0 }.map { "\($0)" }))
    check("around-scan", expected: ["11", "completed"], f, p, c)
}
do {
    // Fused stages over a subject: the subject keeps the closure `closing` makes.
    let subject = Subject<Int>()
    let (f, p, c) = (Seen(), Seen(), Seen())
    f.record(subject.map { $0 * 2 }.filter { $0 != 4 }.map { "\($0)" })
    p.record(hidden(subject.map { $0 * 2 }).filter { $0 != 4 }.map { "\($0)" })
    c.record(hidden(subject.map { $0 * 2 }.filter { $0 != 4 }.map { "\($0)" }))
    for v in 1...3 { subject.sendNext(v) }
    subject.sendCompleted()
    check("over-a-subject", expected: ["2", "6", "completed"], f, p, c)
}
do {
    // One `scan` signal subscribed twice (fused, partly fused, closures): each subscription
    // keeps its own accumulator, and the second starts from `start` again.
    let subject = Subject<Int>()
    let fused = subject.scan(start: 100, reduce: +).map { "\($0)" }
    let partly = hidden(subject.scan(start: 100, reduce: +)).map { "\($0)" }
    let closures = hidden(subject.scan(start: 100, reduce: +).map { "\($0)" })
    let (f1, p1, c1, f2, p2, c2) = (Seen(), Seen(), Seen(), Seen(), Seen(), Seen())
    f1.record(fused); p1.record(partly); c1.record(closures)
    subject.sendNext(1)
    subject.sendNext(2)
    f2.record(fused); p2.record(partly); c2.record(closures)
    subject.sendNext(3)
    subject.sendCompleted()
    check("scan-per-subscription-first", expected: ["101", "103", "106", "completed"], f1, p1, c1)
    check("scan-per-subscription-second", expected: ["103", "completed"], f2, p2, c2)
}
do {
    // The other stages: compactMap, combinePrevious and ignoreValues over a subject.
    let subject = Subject<Int>()
    func chain(_ s: Signal<Int>) -> Signal<String> {
        s.compactMap { $0 % 3 == 0 ? nil : $0 }.combinePrevious(start: 0) { "\($0)>\($1)" }
    }
    let (f, p, c) = (Seen(), Seen(), Seen())
    f.record(subject.compactMap { $0 % 3 == 0 ? nil : $0 }.combinePrevious(start: 0) { "\($0)>\($1)" })
    p.record(hidden(subject.compactMap { $0 % 3 == 0 ? nil : $0 }).combinePrevious(start: 0) { "\($0)>\($1)" })
    c.record(hidden(chain(subject)))
    let (fi, pi, ci) = (Seen(), Seen(), Seen())
    fi.record(subject.map { "\($0)" }.ignoreValues())
    pi.record(hidden(subject.map { "\($0)" }).ignoreValues())
    ci.record(hidden(subject.map { "\($0)" }.ignoreValues()))
    for v in 1...5 { subject.sendNext(v) }
    subject.sendError(ProbeError())
    check("compactMap-combinePrevious", expected: ["0>1", "1>2", "2>4", "4>5", "error probe"], f, p, c)
    check("ignoreValues", expected: ["error probe"], fi, pi, ci)
}

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
if sum == 42 { print("") }

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// Heap allocations per event, when the run has a malloc counter preloaded:
//
//     cc -O2 -shared -fPIC -o /tmp/mc.so Tests/AllocationProbe/malloc_counter.c
//     LD_PRELOAD=/tmp/mc.so .../release/ruv-bench --rows cold
//
// (`make bench-allocs` does both.) The counter is found by name, so an ordinary run has
// none and measures as before; a counted run adds one relaxed atomic increment per
// allocation, so read its times with that in mind.

/// `ruv_malloc_counter_value` of the preloaded counter, if there is one.
nonisolated(unsafe) let mallocCounter: (@convention(c) () -> Int)? = dlsym(nil, "ruv_malloc_counter_value")
    .map { unsafeBitCast($0, to: (@convention(c) () -> Int).self) }

/// Prints allocations per event for every row and column that was counted.
func printAllocations(_ results: [RowResult]) {
    let rows = results.filter { !$0.allocations.isEmpty }
    guard !rows.isEmpty else { return }
    print("")
    print("Heap allocations per event (malloc, calloc, realloc and aligned allocations; a run after the warm-up):")
    print("")
    print("| row | unit | " + Column.allCases.map(\.header).joined(separator: " | ") + " |")
    print("| --- | --- |" + Column.allCases.map { _ in " ---: |" }.joined())
    for r in rows {
        let cells = Column.allCases.map { c in r.allocations[c].map { format($0, decimals: 2) } ?? "—" }
        print("| \(r.row.title) | \(r.row.unit) | " + cells.joined(separator: " | ") + " |")
    }
}

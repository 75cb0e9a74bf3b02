// Optimizer barriers. Both are out of line and unoptimized, so the compiler can neither see
// what happens to a value handed in nor know what comes back out.

/// Consumes `value` so that the work producing it cannot be eliminated as dead code.
@inline(never) @_optimize(none)
func blackHole<T>(_ value: T) {}

/// Returns `value` unchanged, hiding it from the optimizer: a size that cannot be
/// constant-folded, or a closure the optimizer cannot inline (the baseline's closures stay
/// real indirect calls, as the stages of a chain built at run time are).
@inline(never) @_optimize(none)
func opaque<T>(_ value: T) -> T { value }

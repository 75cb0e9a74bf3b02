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

/// `opaque` for the baselines' `(Int) -> Void` stages. Not generic on purpose: passing a
/// closure through a generic parameter re-abstracts it (its `Int` then travels indirectly,
/// through a thunk), which would make the baseline pay for something plain closures don't.
@inline(never) @_optimize(none)
func opaque(_ stage: @escaping (Int) -> Void) -> (Int) -> Void { stage }

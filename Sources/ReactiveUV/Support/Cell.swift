/// A mutable value shared by reference, for per-subscription operator state captured by
/// closures (a running `scan` total, `take`'s remaining count).
///
/// Why not a captured `var`: Swift boxes it and checks exclusive access dynamically on every
/// read and write, which costs more than the operator itself on the per-event path. The
/// threading contract already serializes events through one subscription, so the check
/// buys nothing here.
@usableFromInline
final class Cell<T> {
    @usableFromInline @exclusivity(unchecked) var value: T

    @inlinable
    init(_ value: T) { self.value = value }
}

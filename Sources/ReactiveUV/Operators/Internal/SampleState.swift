/// State of `sample`, `takeUntil` and `takeUntilReplacement`: the receiver's latest value
/// (for `sample`), under the lock that serializes the two sources. Usable from inlinable
/// code: the operators are inlinable so their per-value closures run specialized in the
/// caller's module (the generic copy looks `Event<Value>` up in the runtime's metadata
/// cache on every value).
@usableFromInline
final class SampleState<Value>: TerminableState, @unchecked Sendable {
    @usableFromInline @exclusivity(unchecked) var latest: Value?

    @inlinable
    override init() { super.init() }
}

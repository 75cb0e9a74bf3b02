/// State of `sample`, `takeUntil` and `takeUntilReplacement`: the receiver's latest value
/// (for `sample`), under the lock that serializes the two sources.
final class SampleState<Value>: TerminableState, @unchecked Sendable {
    var latest: Value?
}

/// State of `retry(when:)`: the last error (sent on when the handler completes) and a
/// terminal event of the handler held while an attempt is being subscribed.
@usableFromInline
final class RetryWhenState<Value>: ResubscribeState, @unchecked Sendable {
    @usableFromInline var lastError: (any Error)?
    /// The handler's terminal event, held while an attempt is being subscribed.
    @usableFromInline var handlerEnded: Event<Value>?

    @inlinable
    override init() { super.init() }
}

/// State of `share(replay:scope:)`: the replay subject of the current connection, the
/// connection, and how many subscribers share it; guarded by the inherited lock.
@usableFromInline
final class ShareState<Value>: LockedState, @unchecked Sendable {
    @usableFromInline var subject: ReplaySubject<Value>?
    @usableFromInline var connection: SerialDisposable?
    @usableFromInline var subscribers = 0

    @inlinable
    override init() { super.init() }
}

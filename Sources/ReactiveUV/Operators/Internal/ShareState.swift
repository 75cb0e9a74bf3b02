/// State of `share(replay:scope:)`: the replay subject of the current connection, the
/// connection, and how many subscribers share it; guarded by the inherited lock.
final class ShareState<Value>: LockedState, @unchecked Sendable {
    var subject: ReplaySubject<Value>?
    var connection: SerialDisposable?
    var subscribers = 0
}

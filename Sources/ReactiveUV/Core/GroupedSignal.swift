/// One group of ``Signal/groupBy(_:transform:)``: a hot subject carrying its key (RAC's
/// `RACGroupedSignal`). Values sent to a group before anyone subscribes to it are lost.
public final class GroupedSignal<Key, Value>: Subject<Value>, @unchecked Sendable {
    /// The key shared by every value of this group.
    public let key: Key

    /// Creates a group for `key`.
    public init(key: Key) {
        self.key = key
        super.init()
    }
}

/// State of `groupBy`: the groups by key, and in the order they were made (the order the
/// terminal event reaches them).
///
/// Only the source's events touch it, and those never overlap (the source's contract), so
/// there is no lock. A class with unchecked fields rather than captured `var`s: a captured
/// `var` is checked for exclusive access at run time on every value (a thread-local lookup
/// each time, an eighth of a grouped value's cost), which buys nothing here.
@usableFromInline
final class GroupByState<Key: Hashable, U>: @unchecked Sendable {
    /// The groups by key, unretained: `order` owns them, and neither ever drops one, so a
    /// value's lookup and send take no reference (a retain and a release, a quarter of a
    /// grouped value's cost, when the dictionary held them strongly).
    @usableFromInline @exclusivity(unchecked) var groups: [Key: Unmanaged<GroupedSignal<Key, U>>] = [:]
    @usableFromInline @exclusivity(unchecked) var order: [GroupedSignal<Key, U>] = []

    @inlinable
    init() {}

    /// Sends `value` to the group of `key`; `nil` when there is no such group yet.
    ///
    /// Through a guaranteed reference, without a retain: `order` holds every group for as
    /// long as this state lives, and the state lives for the whole call, since the source's
    /// sink that captured it is being called (even when the group's subscriber ends the
    /// source's subscription, its own, or the group). Pinned by `GroupByStateTests`.
    @inlinable
    func send(_ value: @autoclosure () -> U, toGroupOf key: Key) -> Bool {
        guard let group = groups[key] else { return false }
        group._withUnsafeGuaranteedRef { $0.sendNext(value()) }
        return true
    }

    /// Makes the group of `key` (the caller has checked there is none) and keeps it.
    @inlinable
    func makeGroup(_ key: Key) -> GroupedSignal<Key, U> {
        let group = GroupedSignal<Key, U>(key: key)
        order.append(group)
        groups[key] = Unmanaged.passUnretained(group)
        return group
    }
}

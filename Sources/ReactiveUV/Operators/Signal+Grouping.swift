// Grouping values by key (RACSignal+Operations' groupBy:transform:, groupBy:). Booleans
// (not, and, or) and tuple reduction (reduceEach, reduceApply) are in Signal+Reducing.swift.

extension Signal {
    /// Splits the signal into groups by key: RAC's `-groupBy:transform:`.
    ///
    /// On the first value with a new key, sends a ``GroupedSignal`` (a hot subject carrying
    /// the key); each value, transformed, is sent to its group. Values sent to a group before
    /// anyone subscribes to it are lost. On completion or error the outer signal terminates
    /// first, then every group in creation order.
    ///
    /// **RAC:** `-groupBy:transform:`. **Thread:** groups and their values on the source's
    /// thread. **Disposal:** disposes the source; groups already sent get no more values
    /// (and no terminal event). **Terminates:** with the source; each group receives the
    /// source's terminal event.
    @inlinable
    public func groupBy<Key: Hashable, U>(
        _ keyOf: @escaping (Value) -> Key, transform: @escaping (Value) -> U
    ) -> Signal<GroupedSignal<Key, U>> {
        let source = self
        return AnonymousSignal { observer, lifetime in
            let state = GroupByState<Key, U>()
            source.attach({ event in
                switch event {
                case .next(let v):
                    let key = keyOf(v)
                    if state.send(transform(v), toGroupOf: key) { return }
                    let group = state.makeGroup(key)
                    observer(.next(group))
                    group.sendNext(transform(v))
                case .error(let e):
                    observer(.error(e))
                    for g in state.order { g.sendError(e) }
                case .completed:
                    observer(.completed)
                    for g in state.order { g.sendCompleted() }
                }
            }, lifetime)
        }
    }

    /// ``groupBy(_:transform:)`` with the values unchanged: RAC's `-groupBy:`.
    ///
    /// **RAC:** `-groupBy:`. **Thread:** groups and their values on the source's thread.
    /// **Disposal:** disposes the source. **Terminates:** with the source; each group
    /// receives the source's terminal event.
    @inlinable
    public func groupBy<Key: Hashable>(_ keyOf: @escaping (Value) -> Key) -> Signal<GroupedSignal<Key, Value>> {
        groupBy(keyOf, transform: { $0 })
    }
}

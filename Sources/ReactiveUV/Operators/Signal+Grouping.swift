// groupBy and the Boolean and tuple operators (RACSignal+Operations' groupBy:transform:,
// not, and, or, reduceApply).

extension Signal {
    /// Splits the signal into groups by key: RAC's `-groupBy:transform:`.
    ///
    /// On the first value with a new key, sends a ``GroupedSignal`` (a hot subject carrying
    /// the key); each value, transformed, is sent to its group. Values sent to a group before
    /// anyone subscribes to it are lost. On completion or error the outer signal terminates
    /// first, then every group in creation order.
    public func groupBy<Key: Hashable, U>(
        _ keyOf: @escaping (Value) -> Key, transform: @escaping (Value) -> U
    ) -> Signal<GroupedSignal<Key, U>> {
        let source = self
        return AnonymousSignal { observer, lifetime in
            var groups: [Key: GroupedSignal<Key, U>] = [:]
            var order: [GroupedSignal<Key, U>] = []
            source.attach({ event in
                switch event {
                case .next(let v):
                    let key = keyOf(v)
                    let group: GroupedSignal<Key, U>
                    if let g = groups[key] {
                        group = g
                    } else {
                        group = GroupedSignal(key: key)
                        groups[key] = group
                        order.append(group)
                        observer(.next(group))
                    }
                    group.sendNext(transform(v))
                case .error(let e):
                    observer(.error(e))
                    for g in order { g.sendError(e) }
                case .completed:
                    observer(.completed)
                    for g in order { g.sendCompleted() }
                }
            }, lifetime)
        }
    }

    /// ``groupBy(_:transform:)`` with the values unchanged: RAC's `-groupBy:`.
    public func groupBy<Key: Hashable>(_ keyOf: @escaping (Value) -> Key) -> Signal<GroupedSignal<Key, Value>> {
        groupBy(keyOf, transform: { $0 })
    }
}

extension Signal where Value == Bool {
    /// Inverts each Boolean: RAC's `-not`.
    public func not() -> Signal<Bool> { map { !$0 } }
}

extension Signal where Value == [Bool] {
    /// AND of every element of each array (at least one element): RAC's `-and`.
    public func and() -> Signal<Bool> { map { $0.allSatisfy { $0 } } }

    /// OR of every element of each array: RAC's `-or`.
    public func or() -> Signal<Bool> { map { $0.contains(true) } }
}

extension Signal {
    /// AND of each pair of Booleans: RAC's `-and` on 2-tuples.
    public func and() -> Signal<Bool> where Value == (Bool, Bool) { map { $0.0 && $0.1 } }

    /// OR of each pair of Booleans: RAC's `-or` on 2-tuples.
    public func or() -> Signal<Bool> where Value == (Bool, Bool) { map { $0.0 || $0.1 } }

    /// AND of each triple of Booleans.
    public func and() -> Signal<Bool> where Value == (Bool, Bool, Bool) { map { $0.0 && $0.1 && $0.2 } }

    /// OR of each triple of Booleans.
    public func or() -> Signal<Bool> where Value == (Bool, Bool, Bool) { map { $0.0 || $0.1 || $0.2 } }

    /// Calls the function in each tuple with the rest of the tuple: RAC's `-reduceApply`.
    public func reduceApply<A, R>() -> Signal<R> where Value == ((A) -> R, A) { map { $0.0($0.1) } }

    /// Calls the function in each tuple with the rest of the tuple: RAC's `-reduceApply`.
    public func reduceApply<A, B, R>() -> Signal<R> where Value == ((A, B) -> R, A, B) { map { $0.0($0.1, $0.2) } }

    /// Calls the function in each tuple with the rest of the tuple: RAC's `-reduceApply`.
    public func reduceApply<A, B, C, R>() -> Signal<R> where Value == ((A, B, C) -> R, A, B, C) {
        map { $0.0($0.1, $0.2, $0.3) }
    }

    /// Calls `reduce` with the elements of each 2-tuple: RAC's `-reduceEach:`.
    public func reduceEach<A, B, R>(_ reduce: @escaping (A, B) -> R) -> Signal<R> where Value == (A, B) {
        map { reduce($0.0, $0.1) }
    }

    /// Calls `reduce` with the elements of each 3-tuple: RAC's `-reduceEach:`.
    public func reduceEach<A, B, C, R>(_ reduce: @escaping (A, B, C) -> R) -> Signal<R> where Value == (A, B, C) {
        map { reduce($0.0, $0.1, $0.2) }
    }

    /// Calls `reduce` with the elements of each 4-tuple: RAC's `-reduceEach:`.
    public func reduceEach<A, B, C, D, R>(_ reduce: @escaping (A, B, C, D) -> R) -> Signal<R> where Value == (A, B, C, D) {
        map { reduce($0.0, $0.1, $0.2, $0.3) }
    }

    /// Calls `reduce` with the elements of each 5-tuple: RAC's `-reduceEach:`.
    public func reduceEach<A, B, C, D, E, R>(_ reduce: @escaping (A, B, C, D, E) -> R) -> Signal<R> where Value == (A, B, C, D, E) {
        map { reduce($0.0, $0.1, $0.2, $0.3, $0.4) }
    }

    /// Calls `reduce` with the elements of each 6-tuple: RAC's `-reduceEach:`.
    public func reduceEach<A, B, C, D, E, F, R>(_ reduce: @escaping (A, B, C, D, E, F) -> R) -> Signal<R> where Value == (A, B, C, D, E, F) {
        map { reduce($0.0, $0.1, $0.2, $0.3, $0.4, $0.5) }
    }

    /// Calls the function in each tuple with the rest of the tuple: RAC's `-reduceApply`.
    public func reduceApply<A, B, C, D, R>() -> Signal<R> where Value == ((A, B, C, D) -> R, A, B, C, D) {
        map { $0.0($0.1, $0.2, $0.3, $0.4) }
    }

    /// Calls the function in each tuple with the rest of the tuple: RAC's `-reduceApply`.
    public func reduceApply<A, B, C, D, E, R>() -> Signal<R> where Value == ((A, B, C, D, E) -> R, A, B, C, D, E) {
        map { $0.0($0.1, $0.2, $0.3, $0.4, $0.5) }
    }
}

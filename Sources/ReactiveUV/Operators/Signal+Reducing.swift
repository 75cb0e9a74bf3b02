// Booleans and tuples reduced to one value: RACSignal+Operations' -not, -and, -or and
// RACStream's -reduceEach: and -reduceApply for tuples of 2 to 6 elements (the shapes
// zip and combineLatest produce). All inlinable: each is a `map` whose closure, formed in the
// library's generic copy, would run generic code on every value.

extension Signal where Value == Bool {
    /// Inverts each Boolean: RAC's `-not`.
    ///
    /// **RAC:** `-not`. **Thread:** events arrive on the source's thread. **Disposal:**
    /// disposes the source. **Terminates:** when the source terminates; errors pass through
    /// at once.
    @inlinable
    public func not() -> Signal<Bool> { map { !$0 } }
}

extension Signal where Value == [Bool] {
    /// AND of every element of each array (at least one element): RAC's `-and`.
    ///
    /// **RAC:** `-and`. **Thread:** events arrive on the source's thread. **Disposal:**
    /// disposes the source. **Terminates:** when the source terminates; errors pass through
    /// at once.
    @inlinable
    public func and() -> Signal<Bool> { map { $0.allSatisfy { $0 } } }

    /// OR of every element of each array: RAC's `-or`.
    ///
    /// **RAC:** `-or`. **Thread:** events arrive on the source's thread. **Disposal:**
    /// disposes the source. **Terminates:** when the source terminates; errors pass through
    /// at once.
    @inlinable
    public func or() -> Signal<Bool> { map { $0.contains(true) } }
}

extension Signal {
    /// AND of each pair of Booleans: RAC's `-and` on 2-tuples.
    ///
    /// **RAC:** `-and`. **Thread:** events arrive on the source's thread. **Disposal:**
    /// disposes the source. **Terminates:** when the source terminates; errors pass through
    /// at once.
    @inlinable
    public func and() -> Signal<Bool> where Value == (Bool, Bool) { map { $0.0 && $0.1 } }

    /// OR of each pair of Booleans: RAC's `-or` on 2-tuples.
    ///
    /// **RAC:** `-or`. **Thread:** events arrive on the source's thread. **Disposal:**
    /// disposes the source. **Terminates:** when the source terminates; errors pass through
    /// at once.
    @inlinable
    public func or() -> Signal<Bool> where Value == (Bool, Bool) { map { $0.0 || $0.1 } }

    /// AND of each triple of Booleans.
    ///
    /// **RAC:** `-and`. **Thread:** events arrive on the source's thread. **Disposal:**
    /// disposes the source. **Terminates:** when the source terminates; errors pass through
    /// at once.
    @inlinable
    public func and() -> Signal<Bool> where Value == (Bool, Bool, Bool) { map { $0.0 && $0.1 && $0.2 } }

    /// OR of each triple of Booleans.
    ///
    /// **RAC:** `-or`. **Thread:** events arrive on the source's thread. **Disposal:**
    /// disposes the source. **Terminates:** when the source terminates; errors pass through
    /// at once.
    @inlinable
    public func or() -> Signal<Bool> where Value == (Bool, Bool, Bool) { map { $0.0 || $0.1 || $0.2 } }

    /// Calls the function in each tuple with the rest of the tuple: RAC's `-reduceApply`.
    ///
    /// **RAC:** `-reduceApply`. **Thread:** events arrive on the source's thread.
    /// **Disposal:** disposes the source. **Terminates:** when the source terminates;
    /// errors pass through at once.
    @inlinable
    public func reduceApply<A, R>() -> Signal<R> where Value == ((A) -> R, A) { map { $0.0($0.1) } }

    /// Calls the function in each tuple with the rest of the tuple: RAC's `-reduceApply`.
    ///
    /// **RAC:** `-reduceApply`. **Thread:** events arrive on the source's thread.
    /// **Disposal:** disposes the source. **Terminates:** when the source terminates;
    /// errors pass through at once.
    @inlinable
    public func reduceApply<A, B, R>() -> Signal<R> where Value == ((A, B) -> R, A, B) { map { $0.0($0.1, $0.2) } }

    /// Calls the function in each tuple with the rest of the tuple: RAC's `-reduceApply`.
    ///
    /// **RAC:** `-reduceApply`. **Thread:** events arrive on the source's thread.
    /// **Disposal:** disposes the source. **Terminates:** when the source terminates;
    /// errors pass through at once.
    @inlinable
    public func reduceApply<A, B, C, R>() -> Signal<R> where Value == ((A, B, C) -> R, A, B, C) {
        map { $0.0($0.1, $0.2, $0.3) }
    }

    /// Calls `reduce` with the elements of each 2-tuple: RAC's `-reduceEach:`.
    ///
    /// **RAC:** `-reduceEach:`. **Thread:** events arrive on the source's thread.
    /// **Disposal:** disposes the source. **Terminates:** when the source terminates;
    /// errors pass through at once.
    @inlinable
    public func reduceEach<A, B, R>(_ reduce: @escaping (A, B) -> R) -> Signal<R> where Value == (A, B) {
        map { reduce($0.0, $0.1) }
    }

    /// Calls `reduce` with the elements of each 3-tuple: RAC's `-reduceEach:`.
    ///
    /// **RAC:** `-reduceEach:`. **Thread:** events arrive on the source's thread.
    /// **Disposal:** disposes the source. **Terminates:** when the source terminates;
    /// errors pass through at once.
    @inlinable
    public func reduceEach<A, B, C, R>(_ reduce: @escaping (A, B, C) -> R) -> Signal<R> where Value == (A, B, C) {
        map { reduce($0.0, $0.1, $0.2) }
    }

    /// Calls `reduce` with the elements of each 4-tuple: RAC's `-reduceEach:`.
    @inlinable
    public func reduceEach<A, B, C, D, R>(_ reduce: @escaping (A, B, C, D) -> R) -> Signal<R> where Value == (A, B, C, D) {
        map { reduce($0.0, $0.1, $0.2, $0.3) }
    }

    /// Calls `reduce` with the elements of each 5-tuple: RAC's `-reduceEach:`.
    @inlinable
    public func reduceEach<A, B, C, D, E, R>(_ reduce: @escaping (A, B, C, D, E) -> R) -> Signal<R> where Value == (A, B, C, D, E) {
        map { reduce($0.0, $0.1, $0.2, $0.3, $0.4) }
    }

    /// Calls `reduce` with the elements of each 6-tuple: RAC's `-reduceEach:`.
    @inlinable
    public func reduceEach<A, B, C, D, E, F, R>(_ reduce: @escaping (A, B, C, D, E, F) -> R) -> Signal<R> where Value == (A, B, C, D, E, F) {
        map { reduce($0.0, $0.1, $0.2, $0.3, $0.4, $0.5) }
    }

    /// Calls the function in each tuple with the rest of the tuple: RAC's `-reduceApply`.
    @inlinable
    public func reduceApply<A, B, C, D, R>() -> Signal<R> where Value == ((A, B, C, D) -> R, A, B, C, D) {
        map { $0.0($0.1, $0.2, $0.3, $0.4) }
    }

    /// Calls the function in each tuple with the rest of the tuple: RAC's `-reduceApply`.
    @inlinable
    public func reduceApply<A, B, C, D, E, R>() -> Signal<R> where Value == ((A, B, C, D, E) -> R, A, B, C, D, E) {
        map { $0.0($0.1, $0.2, $0.3, $0.4, $0.5) }
    }
}

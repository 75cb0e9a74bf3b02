// Booleans and tuples reduced to one value: RACSignal+Operations' -not, -and, -or and
// RACStream's -reduceEach:, -reduceApply for 2- and 3-tuples. (The 4- to 6-tuple
// reduceEach/reduceApply overloads still live beside the static zip/combineLatest of the
// same arities, in the file that holds those.)

extension Signal where Value == Bool {
    /// Inverts each Boolean: RAC's `-not`.
    ///
    /// **RAC:** `-not`. **Thread:** events arrive on the source's thread. **Disposal:**
    /// disposes the source. **Terminates:** when the source terminates; errors pass through
    /// at once.
    public func not() -> Signal<Bool> { map { !$0 } }
}

extension Signal where Value == [Bool] {
    /// AND of every element of each array (at least one element): RAC's `-and`.
    ///
    /// **RAC:** `-and`. **Thread:** events arrive on the source's thread. **Disposal:**
    /// disposes the source. **Terminates:** when the source terminates; errors pass through
    /// at once.
    public func and() -> Signal<Bool> { map { $0.allSatisfy { $0 } } }

    /// OR of every element of each array: RAC's `-or`.
    ///
    /// **RAC:** `-or`. **Thread:** events arrive on the source's thread. **Disposal:**
    /// disposes the source. **Terminates:** when the source terminates; errors pass through
    /// at once.
    public func or() -> Signal<Bool> { map { $0.contains(true) } }
}

extension Signal {
    /// AND of each pair of Booleans: RAC's `-and` on 2-tuples.
    ///
    /// **RAC:** `-and`. **Thread:** events arrive on the source's thread. **Disposal:**
    /// disposes the source. **Terminates:** when the source terminates; errors pass through
    /// at once.
    public func and() -> Signal<Bool> where Value == (Bool, Bool) { map { $0.0 && $0.1 } }

    /// OR of each pair of Booleans: RAC's `-or` on 2-tuples.
    ///
    /// **RAC:** `-or`. **Thread:** events arrive on the source's thread. **Disposal:**
    /// disposes the source. **Terminates:** when the source terminates; errors pass through
    /// at once.
    public func or() -> Signal<Bool> where Value == (Bool, Bool) { map { $0.0 || $0.1 } }

    /// AND of each triple of Booleans.
    ///
    /// **RAC:** `-and`. **Thread:** events arrive on the source's thread. **Disposal:**
    /// disposes the source. **Terminates:** when the source terminates; errors pass through
    /// at once.
    public func and() -> Signal<Bool> where Value == (Bool, Bool, Bool) { map { $0.0 && $0.1 && $0.2 } }

    /// OR of each triple of Booleans.
    ///
    /// **RAC:** `-or`. **Thread:** events arrive on the source's thread. **Disposal:**
    /// disposes the source. **Terminates:** when the source terminates; errors pass through
    /// at once.
    public func or() -> Signal<Bool> where Value == (Bool, Bool, Bool) { map { $0.0 || $0.1 || $0.2 } }

    /// Calls the function in each tuple with the rest of the tuple: RAC's `-reduceApply`.
    ///
    /// **RAC:** `-reduceApply`. **Thread:** events arrive on the source's thread.
    /// **Disposal:** disposes the source. **Terminates:** when the source terminates;
    /// errors pass through at once.
    public func reduceApply<A, R>() -> Signal<R> where Value == ((A) -> R, A) { map { $0.0($0.1) } }

    /// Calls the function in each tuple with the rest of the tuple: RAC's `-reduceApply`.
    ///
    /// **RAC:** `-reduceApply`. **Thread:** events arrive on the source's thread.
    /// **Disposal:** disposes the source. **Terminates:** when the source terminates;
    /// errors pass through at once.
    public func reduceApply<A, B, R>() -> Signal<R> where Value == ((A, B) -> R, A, B) { map { $0.0($0.1, $0.2) } }

    /// Calls the function in each tuple with the rest of the tuple: RAC's `-reduceApply`.
    ///
    /// **RAC:** `-reduceApply`. **Thread:** events arrive on the source's thread.
    /// **Disposal:** disposes the source. **Terminates:** when the source terminates;
    /// errors pass through at once.
    public func reduceApply<A, B, C, R>() -> Signal<R> where Value == ((A, B, C) -> R, A, B, C) {
        map { $0.0($0.1, $0.2, $0.3) }
    }

    /// Calls `reduce` with the elements of each 2-tuple: RAC's `-reduceEach:`.
    ///
    /// **RAC:** `-reduceEach:`. **Thread:** events arrive on the source's thread.
    /// **Disposal:** disposes the source. **Terminates:** when the source terminates;
    /// errors pass through at once.
    public func reduceEach<A, B, R>(_ reduce: @escaping (A, B) -> R) -> Signal<R> where Value == (A, B) {
        map { reduce($0.0, $0.1) }
    }

    /// Calls `reduce` with the elements of each 3-tuple: RAC's `-reduceEach:`.
    ///
    /// **RAC:** `-reduceEach:`. **Thread:** events arrive on the source's thread.
    /// **Disposal:** disposes the source. **Terminates:** when the source terminates;
    /// errors pass through at once.
    public func reduceEach<A, B, C, R>(_ reduce: @escaping (A, B, C) -> R) -> Signal<R> where Value == (A, B, C) {
        map { reduce($0.0, $0.1, $0.2) }
    }
}

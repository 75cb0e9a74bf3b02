// Typed tuples for zip, combineLatest and reduceEach: native Swift tuples of mixed types,
// arities 2 to 6 (RAC's RACTuple, typed). Generated shape; each arity forwards to the
// type-erased core in Signal+Combining.swift and casts back, which is safe because the
// core keeps each source's values in its own slot.

extension Signal {

    /// Zips 2 signals into tuples of their n-th values: RAC's `+zip:` with typed tuples.
    /// Completes once any side has completed with nothing queued; errors are forwarded at once.
    public static func zip<A, B>(_ a: Signal<A>, _ b: Signal<B>) -> Signal<(A, B)> where Value == (A, B) {
        Signal<Any>.zipAny([a.map { v -> Any in v }, b.map { v -> Any in v }]).map { ($0[0] as! A, $0[1] as! B) }
    }

    /// The latest values of 2 signals as a tuple, once each has sent: RAC's
    /// `+combineLatest:` with typed tuples. Completes when all have completed.
    public static func combineLatest<A, B>(_ a: Signal<A>, _ b: Signal<B>) -> Signal<(A, B)> where Value == (A, B) {
        Signal<Any>.combineLatestAny([a.map { v -> Any in v }, b.map { v -> Any in v }]).map { ($0[0] as! A, $0[1] as! B) }
    }

    /// Zips 3 signals into tuples of their n-th values: RAC's `+zip:` with typed tuples.
    /// Completes once any side has completed with nothing queued; errors are forwarded at once.
    public static func zip<A, B, C>(_ a: Signal<A>, _ b: Signal<B>, _ c: Signal<C>) -> Signal<(A, B, C)> where Value == (A, B, C) {
        Signal<Any>.zipAny([a.map { v -> Any in v }, b.map { v -> Any in v }, c.map { v -> Any in v }]).map { ($0[0] as! A, $0[1] as! B, $0[2] as! C) }
    }

    /// The latest values of 3 signals as a tuple, once each has sent: RAC's
    /// `+combineLatest:` with typed tuples. Completes when all have completed.
    public static func combineLatest<A, B, C>(_ a: Signal<A>, _ b: Signal<B>, _ c: Signal<C>) -> Signal<(A, B, C)> where Value == (A, B, C) {
        Signal<Any>.combineLatestAny([a.map { v -> Any in v }, b.map { v -> Any in v }, c.map { v -> Any in v }]).map { ($0[0] as! A, $0[1] as! B, $0[2] as! C) }
    }

    /// Zips 4 signals into tuples of their n-th values: RAC's `+zip:` with typed tuples.
    /// Completes once any side has completed with nothing queued; errors are forwarded at once.
    public static func zip<A, B, C, D>(_ a: Signal<A>, _ b: Signal<B>, _ c: Signal<C>, _ d: Signal<D>) -> Signal<(A, B, C, D)> where Value == (A, B, C, D) {
        Signal<Any>.zipAny([a.map { v -> Any in v }, b.map { v -> Any in v }, c.map { v -> Any in v }, d.map { v -> Any in v }]).map { ($0[0] as! A, $0[1] as! B, $0[2] as! C, $0[3] as! D) }
    }

    /// The latest values of 4 signals as a tuple, once each has sent: RAC's
    /// `+combineLatest:` with typed tuples. Completes when all have completed.
    public static func combineLatest<A, B, C, D>(_ a: Signal<A>, _ b: Signal<B>, _ c: Signal<C>, _ d: Signal<D>) -> Signal<(A, B, C, D)> where Value == (A, B, C, D) {
        Signal<Any>.combineLatestAny([a.map { v -> Any in v }, b.map { v -> Any in v }, c.map { v -> Any in v }, d.map { v -> Any in v }]).map { ($0[0] as! A, $0[1] as! B, $0[2] as! C, $0[3] as! D) }
    }

    /// Calls `reduce` with the elements of each 4-tuple: RAC's `-reduceEach:`.
    public func reduceEach<A, B, C, D, R>(_ reduce: @escaping (A, B, C, D) -> R) -> Signal<R> where Value == (A, B, C, D) {
        map { reduce($0.0, $0.1, $0.2, $0.3) }
    }


    /// Zips 5 signals into tuples of their n-th values: RAC's `+zip:` with typed tuples.
    /// Completes once any side has completed with nothing queued; errors are forwarded at once.
    public static func zip<A, B, C, D, E>(_ a: Signal<A>, _ b: Signal<B>, _ c: Signal<C>, _ d: Signal<D>, _ e: Signal<E>) -> Signal<(A, B, C, D, E)> where Value == (A, B, C, D, E) {
        Signal<Any>.zipAny([a.map { v -> Any in v }, b.map { v -> Any in v }, c.map { v -> Any in v }, d.map { v -> Any in v }, e.map { v -> Any in v }]).map { ($0[0] as! A, $0[1] as! B, $0[2] as! C, $0[3] as! D, $0[4] as! E) }
    }

    /// The latest values of 5 signals as a tuple, once each has sent: RAC's
    /// `+combineLatest:` with typed tuples. Completes when all have completed.
    public static func combineLatest<A, B, C, D, E>(_ a: Signal<A>, _ b: Signal<B>, _ c: Signal<C>, _ d: Signal<D>, _ e: Signal<E>) -> Signal<(A, B, C, D, E)> where Value == (A, B, C, D, E) {
        Signal<Any>.combineLatestAny([a.map { v -> Any in v }, b.map { v -> Any in v }, c.map { v -> Any in v }, d.map { v -> Any in v }, e.map { v -> Any in v }]).map { ($0[0] as! A, $0[1] as! B, $0[2] as! C, $0[3] as! D, $0[4] as! E) }
    }

    /// Calls `reduce` with the elements of each 5-tuple: RAC's `-reduceEach:`.
    public func reduceEach<A, B, C, D, E, R>(_ reduce: @escaping (A, B, C, D, E) -> R) -> Signal<R> where Value == (A, B, C, D, E) {
        map { reduce($0.0, $0.1, $0.2, $0.3, $0.4) }
    }

    /// Calls the function in each tuple with the rest of the tuple: RAC's `-reduceApply`.
    public func reduceApply<A, B, C, D, R>() -> Signal<R> where Value == ((A, B, C, D) -> R, A, B, C, D) {
        map { $0.0($0.1, $0.2, $0.3, $0.4) }
    }

    /// Zips 6 signals into tuples of their n-th values: RAC's `+zip:` with typed tuples.
    /// Completes once any side has completed with nothing queued; errors are forwarded at once.
    public static func zip<A, B, C, D, E, F>(_ a: Signal<A>, _ b: Signal<B>, _ c: Signal<C>, _ d: Signal<D>, _ e: Signal<E>, _ f: Signal<F>) -> Signal<(A, B, C, D, E, F)> where Value == (A, B, C, D, E, F) {
        Signal<Any>.zipAny([a.map { v -> Any in v }, b.map { v -> Any in v }, c.map { v -> Any in v }, d.map { v -> Any in v }, e.map { v -> Any in v }, f.map { v -> Any in v }]).map { ($0[0] as! A, $0[1] as! B, $0[2] as! C, $0[3] as! D, $0[4] as! E, $0[5] as! F) }
    }

    /// The latest values of 6 signals as a tuple, once each has sent: RAC's
    /// `+combineLatest:` with typed tuples. Completes when all have completed.
    public static func combineLatest<A, B, C, D, E, F>(_ a: Signal<A>, _ b: Signal<B>, _ c: Signal<C>, _ d: Signal<D>, _ e: Signal<E>, _ f: Signal<F>) -> Signal<(A, B, C, D, E, F)> where Value == (A, B, C, D, E, F) {
        Signal<Any>.combineLatestAny([a.map { v -> Any in v }, b.map { v -> Any in v }, c.map { v -> Any in v }, d.map { v -> Any in v }, e.map { v -> Any in v }, f.map { v -> Any in v }]).map { ($0[0] as! A, $0[1] as! B, $0[2] as! C, $0[3] as! D, $0[4] as! E, $0[5] as! F) }
    }

    /// Calls `reduce` with the elements of each 6-tuple: RAC's `-reduceEach:`.
    public func reduceEach<A, B, C, D, E, F, R>(_ reduce: @escaping (A, B, C, D, E, F) -> R) -> Signal<R> where Value == (A, B, C, D, E, F) {
        map { reduce($0.0, $0.1, $0.2, $0.3, $0.4, $0.5) }
    }

    /// Calls the function in each tuple with the rest of the tuple: RAC's `-reduceApply`.
    public func reduceApply<A, B, C, D, E, R>() -> Signal<R> where Value == ((A, B, C, D, E) -> R, A, B, C, D, E) {
        map { $0.0($0.1, $0.2, $0.3, $0.4, $0.5) }
    }
}

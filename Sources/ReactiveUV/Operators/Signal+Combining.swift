// Combining several signals (RACSignal+Operations' merge, concat, zip, combineLatest,
// sample, takeUntil, then). Where several sources meet, a per-subscription lock serializes
// what goes downstream; the lock is re-entrant, so a downstream callback may send into one
// of the sources on the same thread.

extension Signal {
    /// Forwards the receiver, then subscribes to `next` when it completes: RAC's `-concat:`.
    /// An error from the receiver ends everything and `next` is never subscribed.
    ///
    /// `--1--|` + `--2--|` → `--1----2--|`
    @inlinable
    public func concat(_ next: Signal<Value>) -> Signal<Value> {
        let first = self
        return AnonymousSignal { observer, lifetime in
            let part = lifetime.child()
            first.attach({ event in
                switch event {
                case .completed:
                    lifetime.end(part)
                    if !lifetime.isDisposed { next.attach(observer, lifetime) }
                default: observer(event)
                }
            }, part)
        }
    }

    /// Concatenates signals one after another: RAC's `+concat:`. Empty → `empty`.
    public static func concat<S: Sequence>(_ signals: S) -> Signal<Value> where S.Element == Signal<Value> {
        signals.reduce(Signal<Value>.empty()) { $0.concat($1) }
    }

    /// Ignores the receiver's values; when it completes, calls `block` and subscribes to the
    /// signal it returns. An error ends it and `block` is never called: RAC's `-then:`.
    @inlinable
    public func then<U>(_ block: @escaping () -> Signal<U>) -> Signal<U> {
        let first = self
        return AnonymousSignal { observer, lifetime in
            let part = lifetime.child()
            first.attach({ event in
                switch event {
                case .next: break
                case .error(let e): observer(.error(e))
                case .completed:
                    lifetime.end(part)
                    if !lifetime.isDisposed { block().attach(observer, lifetime) }
                }
            }, part)
        }
    }

    /// Merges the receiver with `other`: RAC's `-merge:`.
    public func merge(_ other: Signal<Value>) -> Signal<Value> { Signal.merge([self, other]) }

    /// Subscribes to each signal in order and forwards all their values: RAC's `+merge:`.
    ///
    /// Completes after all have completed; the first error ends it and disposes the rest (a
    /// signal that fails synchronously prevents the later ones from being subscribed). An
    /// empty collection completes at once. Events are serialized.
    public static func merge<S: Sequence>(_ signals: S) -> Signal<Value> where S.Element == Signal<Value> {
        let list = Array(signals)
        return Signal<Signal<Value>>.fromArray(list).flatten()
    }

    /// Pairs the n-th values of both sides: RAC's `-zipWith:`.
    ///
    /// Completes as soon as one side has completed and has nothing queued; an error from
    /// either side is forwarded at once, even with queued values. Disposes both sides.
    @inlinable
    public func zip<U>(with other: Signal<U>) -> Signal<(Value, U)> {
        // Typed, not through the array core: two queues, no boxing per value.
        let left = self
        return AnonymousSignal { observer, lifetime in
            let state = Zip2State<Value, U>()
            left.attach({ event in
                if case .completed = event { return state.complete(left: true, observer: observer, lifetime: lifetime) }
                state.receive(event.map { .left($0) }, observer: observer, lifetime: lifetime)
            }, lifetime.child())
            if lifetime.isDisposed { return }
            other.attach({ event in
                if case .completed = event { return state.complete(left: false, observer: observer, lifetime: lifetime) }
                state.receive(event.map { .right($0) }, observer: observer, lifetime: lifetime)
            }, lifetime.child())
        }
    }

    /// Sends the latest values of both sides once both have sent, then on every value
    /// from either: RAC's `-combineLatestWith:`. Completes only when **both** complete.
    @inlinable
    public func combineLatest<U>(with other: Signal<U>) -> Signal<(Value, U)> {
        // Typed, not through the array core: no boxing per update on the common two-way case.
        let left = self
        return AnonymousSignal { observer, lifetime in
            let state = CombineLatest2State<Value, U>()
            left.attach({ event in
                state.receive(event.map { .left($0) }, observer: observer, lifetime: lifetime)
            }, lifetime.child())
            if lifetime.isDisposed { return }
            other.attach({ event in
                state.receive(event.map { .right($0) }, observer: observer, lifetime: lifetime)
            }, lifetime.child())
        }
    }

    /// On each value of `sampler`, sends the receiver's latest value (nothing before the
    /// receiver's first value; repeats when it is silent). Completes when **either** side
    /// completes; an error from either is forwarded: RAC's `-sample:`.
    public func sample<T>(_ sampler: Signal<T>) -> Signal<Value> {
        let source = self
        return AnonymousSignal { observer, lifetime in
            let state = SampleState<Value>()
            let finish: (Event<Value>) -> Void = { event in
                state.lock.lock()
                if state.done {
                    state.lock.unlock()
                    return
                }
                state.finishLocked(event, observer, lifetime)
            }
            source.attach({ event in
                switch event {
                case .next(let v):
                    state.lock.lock()
                    state.latest = v
                    state.lock.unlock()
                default: finish(event)
                }
            }, lifetime)
            if lifetime.isDisposed { return }
            sampler.attach({ event in
                switch event {
                case .next:
                    state.lock.lock()
                    if !state.done, let v = state.latest { observer(.next(v)) }
                    state.lock.unlock()
                case .error(let e): finish(.error(e))
                case .completed: finish(.completed)
                }
            }, lifetime)
        }
    }

    /// Forwards the receiver until `trigger` sends a value or completes, then completes and
    /// disposes both: RAC's `-takeUntil:`. The trigger is subscribed **first**, so a trigger
    /// that fires synchronously means the receiver is never subscribed; trigger errors are
    /// ignored.
    public func takeUntil<T>(_ trigger: Signal<T>) -> Signal<Value> {
        let source = self
        return AnonymousSignal { observer, lifetime in
            let state = SampleState<Value>()
            let triggerPart = lifetime.child()
            trigger.attach({ event in
                if case .error = event { return }
                state.lock.lock()
                if state.done {
                    state.lock.unlock()
                    return
                }
                state.finishLocked(.completed, observer, lifetime)
            }, triggerPart)
            if lifetime.isDisposed { return }
            source.attach({ event in
                state.lock.lock()
                if state.done {
                    state.lock.unlock()
                    return
                }
                if event.isTerminating { state.done = true }
                observer(event)
                state.lock.unlock()
                if event.isTerminating { lifetime.dispose() }
            }, lifetime)
        }
    }

    /// Forwards the receiver's values and error (but **not** its completion) until
    /// `replacement` sends any event; from then on only the replacement's events pass and
    /// the receiver is disposed: RAC's `-takeUntilReplacement:`.
    public func takeUntilReplacement(_ replacement: Signal<Value>) -> Signal<Value> {
        let source = self
        return AnonymousSignal { observer, lifetime in
            let state = SampleState<Value>()
            let sourcePart = CompoundDisposable()
            replacement.attach({ event in
                state.lock.lock()
                if !state.done {
                    state.done = true
                    state.lock.unlock()
                    sourcePart.dispose()
                    state.lock.lock()
                }
                observer(event)
                state.lock.unlock()
            }, lifetime)
            if lifetime.isDisposed || state.done { return }
            lifetime.add(sourcePart)
            source.attach({ event in
                state.lock.lock()
                defer { state.lock.unlock() }
                if state.done { return }
                if case .completed = event { return }
                observer(event)
            }, sourcePart)
        }
    }
}

extension Signal {
    /// A signal that sends the elements of `array` and completes (RACSequence's `signal`).
    @inlinable
    public static func fromArray(_ array: [Value]) -> Signal<Value> {
        AnonymousSignal { observer, lifetime in
            for v in array {
                if lifetime.isDisposed { return }
                observer(.next(v))
            }
            if !lifetime.isDisposed { observer(.completed) }
        }
    }

    /// Zips N signals of one type into arrays of their n-th values: RAC's `+zip:`. One
    /// signal gives 1-element arrays; an empty collection completes at once.
    public static func zip<S: Sequence>(_ signals: S) -> Signal<[Value]> where S.Element == Signal<Value> {
        Signal<Any>.zipAny(signals.map { $0.map { v -> Any in v } }).map { $0.map { $0 as! Value } }
    }

    /// ``zip(_:)`` then `reduce` over each array: RAC's `+zip:reduce:`.
    public static func zip<S: Sequence, U>(_ signals: S, reduce: @escaping ([Value]) -> U) -> Signal<U>
    where S.Element == Signal<Value> {
        zip(signals).map(reduce)
    }

    /// The latest value of every signal as an array, once all have sent, then on every
    /// value of any: RAC's `+combineLatest:`. Completes when **all** have completed (even one
    /// that never sent); an empty collection completes at once.
    public static func combineLatest<S: Sequence>(_ signals: S) -> Signal<[Value]> where S.Element == Signal<Value> {
        let list = Array(signals).map { $0.map { v -> Any in v } }
        return Signal<Any>.combineLatestAny(list).map { $0.map { $0 as! Value } }
    }

    /// ``combineLatest(_:)`` then `reduce`: RAC's `+combineLatest:reduce:`.
    public static func combineLatest<S: Sequence, U>(_ signals: S, reduce: @escaping ([Value]) -> U) -> Signal<U>
    where S.Element == Signal<Value> {
        combineLatest(signals).map(reduce)
    }
}

extension Signal where Value == Any {
    /// The type-erased core of every `zip`.
    static func zipAny(_ list: [Signal<Any>]) -> Signal<[Any]> {
        if list.isEmpty { return .empty() }
        return AnonymousSignal { observer, lifetime in
            let state = ZipState(count: list.count)
            for (index, signal) in list.enumerated() {
                if lifetime.isDisposed { return }
                // Each source gets its own part: a source that completes ends only its part.
                signal.attach({ state.receive($0, from: index, observer: observer, lifetime: lifetime) }, lifetime.child())
            }
        }
    }

    /// The type-erased core of every `combineLatest`.
    static func combineLatestAny(_ list: [Signal<Any>]) -> Signal<[Any]> {
        if list.isEmpty { return .empty() }
        return AnonymousSignal { observer, lifetime in
            let state = CombineLatestState(count: list.count)
            for (index, signal) in list.enumerated() {
                if lifetime.isDisposed { return }
                signal.attach({ event in
                    state.lock.lock()
                    if state.done {
                        state.lock.unlock()
                        return
                    }
                    switch event {
                    case .next(let v):
                        if state.values[index] == nil { state.missing -= 1 }
                        state.values[index] = v
                        if state.missing == 0 { observer(.next(state.values.map { $0! })) }
                        state.lock.unlock()
                    case .error(let e):
                        state.finishLocked(.error(e), observer, lifetime)
                    case .completed:
                        state.active -= 1
                        let finished = state.active == 0
                        if finished {
                            state.done = true
                            observer(.completed)
                        }
                        state.lock.unlock()
                        if finished { lifetime.dispose() }
                    }
                }, lifetime.child())
            }
        }
    }
}

/// State of `combineLatest`: the latest value of each source.
final class CombineLatestState: TerminableState, @unchecked Sendable {
    var values: [Any?]
    var missing: Int
    var active: Int

    init(count: Int) {
        values = Array(repeating: nil, count: count)
        missing = count
        active = count
        super.init()
    }
}

/// State of `sample`, `takeUntil` and `takeUntilReplacement`.
final class SampleState<Value>: TerminableState, @unchecked Sendable {
    var latest: Value?
}

/// State of `zip`: a queue per source, and which sources have completed.
final class ZipState: TerminableState, @unchecked Sendable {
    var queues: [[Any]]
    var completed: [Bool]

    init(count: Int) {
        queues = Array(repeating: [], count: count)
        completed = Array(repeating: false, count: count)
        super.init()
    }

    func receive(
        _ event: Event<Any>, from index: Int, observer: Sink<[Any]>, lifetime: CompoundDisposable
    ) {
        lock.lock()
        if done {
            lock.unlock()
            return
        }
        switch event {
        case .next(let v):
            queues[index].append(v)
            if queues.allSatisfy({ !$0.isEmpty }) {
                let tuple = queues.indices.map { queues[$0].removeFirst() }
                observer(.next(tuple))
            }
        case .error(let e):
            finishLocked(.error(e), observer, lifetime)
            return
        case .completed:
            completed[index] = true
        }
        // RAC's rule: complete once any side is complete and has nothing queued.
        if !done, queues.indices.contains(where: { completed[$0] && queues[$0].isEmpty }) {
            finishLocked(.completed, observer, lifetime)
            return
        }
        lock.unlock()
    }
}

/// A value from one side of a two-way `combineLatest` or `zip`.
@usableFromInline
enum Either<A, B> {
    case left(A)
    case right(B)
}

/// State of the two-way `combineLatest(with:)`: the latest value of each side.
@usableFromInline
final class CombineLatest2State<A, B>: TerminableState, @unchecked Sendable {
    @usableFromInline @exclusivity(unchecked) var left: A?
    @usableFromInline @exclusivity(unchecked) var right: B?
    @usableFromInline @exclusivity(unchecked) var active = 2

    @inlinable
    override init() { super.init() }

    @inlinable
    func receive(_ event: Event<Either<A, B>>, observer: Sink<(A, B)>, lifetime: CompoundDisposable) {
        lock.lock()
        if done {
            lock.unlock()
            return
        }
        switch event {
        case .next(.left(let a)):
            left = a
            if let b = right { observer(.next((a, b))) }
            lock.unlock()
        case .next(.right(let b)):
            right = b
            if let a = left { observer(.next((a, b))) }
            lock.unlock()
        case .error(let e):
            finishLocked(.error(e), observer, lifetime)
        case .completed:
            active -= 1
            let finished = active == 0
            if finished {
                done = true
                observer(.completed)
            }
            lock.unlock()
            if finished { lifetime.dispose() }
        }
    }
}

/// State of the two-way `zip(with:)`: a queue per side, and which sides have completed.
/// RAC's rule: it completes once a side has completed with nothing queued.
@usableFromInline
final class Zip2State<A, B>: TerminableState, @unchecked Sendable {
    @usableFromInline @exclusivity(unchecked) var lefts: [A] = []
    @usableFromInline @exclusivity(unchecked) var leftHead = 0
    @usableFromInline @exclusivity(unchecked) var rights: [B] = []
    @usableFromInline @exclusivity(unchecked) var rightHead = 0
    @usableFromInline @exclusivity(unchecked) var leftDone = false
    @usableFromInline @exclusivity(unchecked) var rightDone = false

    @inlinable
    override init() { super.init() }

    @inlinable
    func receive(_ event: Event<Either<A, B>>, observer: Sink<(A, B)>, lifetime: CompoundDisposable) {
        lock.lock()
        if done {
            lock.unlock()
            return
        }
        switch event {
        case .next(.left(let a)): lefts.append(a)
        case .next(.right(let b)): rights.append(b)
        case .error(let e):
            finishLocked(.error(e), observer, lifetime)
            return
        case .completed:
            break  // sides report completion through `complete(left:)`
        }
        if leftHead < lefts.count && rightHead < rights.count {
            let pair = (lefts[leftHead], rights[rightHead])
            leftHead += 1
            rightHead += 1
            if leftHead == lefts.count { lefts.removeAll(keepingCapacity: true); leftHead = 0 }
            if rightHead == rights.count { rights.removeAll(keepingCapacity: true); rightHead = 0 }
            observer(.next(pair))
        }
        finishIfDrained(observer: observer, lifetime: lifetime)
    }

    /// Marks a side complete (completion events carry no side, so each side reports its own).
    @inlinable
    func complete(left isLeft: Bool, observer: Sink<(A, B)>, lifetime: CompoundDisposable) {
        lock.lock()
        if done {
            lock.unlock()
            return
        }
        if isLeft { leftDone = true } else { rightDone = true }
        finishIfDrained(observer: observer, lifetime: lifetime)
    }

    /// Completes when a completed side has nothing queued; call with the lock held (unlocks).
    @inlinable
    func finishIfDrained(observer: Sink<(A, B)>, lifetime: CompoundDisposable) {
        let drained = (leftDone && leftHead == lefts.count) || (rightDone && rightHead == rights.count)
        if !done && drained {
            finishLocked(.completed, observer, lifetime)
            return
        }
        lock.unlock()
    }
}

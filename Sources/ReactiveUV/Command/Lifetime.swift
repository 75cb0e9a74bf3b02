/// Marks when something ends, as a signal: the Linux replacement for RAC's
/// `rac_willDeallocSignal` and `rac_deallocDisposable`.
///
/// Make one with ``make()``: keep the ``Token`` in the object whose lifetime it is (it ends
/// the lifetime in its `deinit`), and hand the ``Lifetime`` to whoever must stop with it:
/// `signal.takeUntil(lifetime)` completes when the token goes away.
public final class Lifetime: @unchecked Sendable {
    /// Completes (without a value) when the lifetime ends; late subscribers get completion at once.
    public let ended: Signal<Void>
    let subject: ReplaySubject<Void>
    /// Disposed when the lifetime ends (RAC's `rac_deallocDisposable`).
    public let disposables = CompoundDisposable()

    init() {
        subject = ReplaySubject(capacity: 0)
        ended = subject
    }

    /// Ends the lifetime of its ``Lifetime`` when deallocated (or on ``end()``).
    public final class Token: @unchecked Sendable {
        let lifetime: Lifetime

        init(_ lifetime: Lifetime) { self.lifetime = lifetime }

        /// Ends the lifetime now.
        public func end() { lifetime.end() }

        deinit { lifetime.end() }
    }

    /// A new lifetime and the token that ends it.
    public static func make() -> (lifetime: Lifetime, token: Token) {
        let lifetime = Lifetime()
        return (lifetime, Token(lifetime))
    }

    /// Whether the lifetime has ended.
    public var hasEnded: Bool { subject.hasTerminated }

    /// Runs `action` when the lifetime ends (at once if it already has).
    ///
    /// - Returns: a disposable that cancels the observation.
    @discardableResult
    public func observeEnded(_ action: @escaping () -> Void) -> Disposable {
        ended.subscribeCompleted(action)
    }

    /// Adds `disposable` to be disposed when the lifetime ends.
    public static func += (lifetime: Lifetime, disposable: Disposable?) {
        lifetime.disposables.add(disposable)
    }

    func end() {
        subject.sendCompleted()
        disposables.dispose()
    }
}

extension Signal {
    /// Forwards the receiver until `lifetime` ends, then completes and disposes it (RAC's
    /// `takeUntil:self.rac_willDeallocSignal`).
    @inlinable
    public func takeUntil(_ lifetime: Lifetime) -> Signal<Value> {
        takeUntil(lifetime.ended)
    }

    /// The same as ``takeUntil(_:)-(Lifetime)``, in ReactiveSwift's words.
    @inlinable
    public func take(during lifetime: Lifetime) -> Signal<Value> { takeUntil(lifetime.ended) }
}

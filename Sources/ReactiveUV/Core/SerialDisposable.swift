/// Holds one inner disposable that can be swapped: RAC's `RACSerialDisposable`.
///
/// RAC's rule, kept on purpose: **setting a new inner does not dispose the old one**
/// (``swapIn(_:)`` hands it back to you). Use ``replace(_:)`` to dispose the old inner.
/// After the serial disposable is disposed, any inner set is disposed at once and
/// `inner` stays `nil`. Disposing the inner by itself does not dispose the serial.
public final class SerialDisposable: Disposable, @unchecked Sendable {
    /// The current inner, guarded by the state word's spin bit.
    var current: Disposable?

    /// Creates a serial disposable, optionally holding `inner`.
    public init(_ inner: Disposable? = nil) {
        super.init()
        current = inner
    }

    /// Creates a serial disposable whose inner runs `action` when disposed: RAC's
    /// `-[RACSerialDisposable initWithBlock:]` (the inner is a ``Disposable`` of the block,
    /// so swapping a new inner in leaves the block unrun, as in RAC).
    ///
    /// ```swift
    /// let serial = SerialDisposable { print("cancelled") }
    /// ```
    ///
    /// - Parameter action: the first inner's cancellation work; runs at most once.
    public convenience override init(_ action: @escaping () -> Void) {
        self.init(Disposable(action))
    }

    /// The inner disposable. Setting it does **not** dispose the previous one (RAC's rule).
    public var inner: Disposable? {
        get {
            if lockState() {
                unlockState()
                return nil
            }
            let c = current
            unlockState()
            return c
        }
        set { _ = swapIn(newValue) }
    }

    /// Atomically sets a new inner and returns the old one **undisposed**. After disposal,
    /// disposes `newInner` at once and returns `nil`.
    ///
    /// - Parameter newInner: the new inner disposable.
    /// - Returns: the previous inner, still live, or `nil`.
    @discardableResult
    public func swapIn(_ newInner: Disposable?) -> Disposable? {
        if lockState() {
            unlockState()
            newInner?.dispose()
            return nil
        }
        let old = current
        current = newInner
        unlockState()
        return old
    }

    /// Sets a new inner and disposes the one it replaces (Rx's and ReactiveSwift's rule).
    ///
    /// - Parameter newInner: the new inner disposable.
    public func replace(_ newInner: Disposable?) {
        swapIn(newInner)?.dispose()
    }

    /// Disposes the current inner and clears it; later inners are disposed as they are set.
    public override func dispose() {
        if lockState() {
            unlockState()
            return
        }
        let old = current
        current = nil
        unlockState(markingDisposed: true)
        old?.dispose()
    }
}

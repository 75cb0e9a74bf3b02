/// Disposes the disposable it wraps when it is itself deallocated: RAC's `RACScopedDisposable`.
///
/// Keep one in a property to tie a subscription to an object's lifetime.
public final class ScopedDisposable: Disposable, @unchecked Sendable {
    /// The wrapped disposable.
    public let wrapped: Disposable

    /// Wraps `disposable`, to be disposed on deallocation (or on an explicit `dispose()`).
    public init(_ disposable: Disposable) {
        wrapped = disposable
        super.init()
    }

    /// A scoped disposable that runs `action` when disposed or deallocated: RAC's
    /// `+[RACScopedDisposable disposableWithBlock:]` (the wrapped disposable is a
    /// ``Disposable`` of the block).
    ///
    /// ```swift
    /// let scope = ScopedDisposable { print("out of scope") }
    /// ```
    ///
    /// - Parameter action: the cancellation work; runs at most once.
    public convenience override init(_ action: @escaping () -> Void) {
        self.init(Disposable(action))
    }

    /// Whether this or the wrapped disposable has been disposed.
    public override var isDisposed: Bool { super.isDisposed || wrapped.isDisposed }

    /// Disposes the wrapped disposable, once.
    public override func dispose() {
        if markDisposed() { wrapped.dispose() }
    }

    deinit { dispose() }
}

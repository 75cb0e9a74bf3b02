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

    /// Whether this or the wrapped disposable has been disposed.
    public override var isDisposed: Bool { super.isDisposed || wrapped.isDisposed }

    /// Disposes the wrapped disposable, once.
    public override func dispose() {
        if markDisposed() { wrapped.dispose() }
    }

    deinit { dispose() }
}

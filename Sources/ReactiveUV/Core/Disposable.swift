import CSystemShims

/// A resource or a piece of work that can be cancelled: RAC's `RACDisposable`.
///
/// `Disposable { ... }` runs its block on the first `dispose()` only; disposing again, from
/// any thread, does nothing. A plain disposable does **not** dispose itself when it is
/// deallocated (wrap it in ``ScopedDisposable`` for that). Subclasses (``CompoundDisposable``,
/// ``SerialDisposable``) share the same atomic state word.
open class Disposable: @unchecked Sendable {
    /// State bits: `disposedBit`, plus `lockBit` for subclasses that guard members with
    /// the same word (a short spin, since their critical sections are a few instructions).
    @usableFromInline let state: UnsafeAtomicInt
    /// The action to run once; read and cleared only by the thread that won `dispose()`.
    /// (`@exclusivity(unchecked)`: that rule already makes access exclusive, and the
    /// dynamic check would cost a thread-local lookup in every disposable's initializer.)
    @usableFromInline @exclusivity(unchecked) var action: (() -> Void)?

    @usableFromInline static var disposedBit: Int { 1 }
    @usableFromInline static var lockBit: Int { 2 }

    /// Creates a disposable that does nothing but remember that it was disposed.
    public init() {
        state = UnsafeAtomicInt(0)
        action = nil
    }

    /// For subclasses that keep their disposed state elsewhere and override ``isDisposed``
    /// and ``dispose()`` without using the state word: no cell is allocated (`state` is the
    /// shared placeholder, which nothing writes). Such a subclass must never be used as a
    /// subscription lifetime (`isDisposedBitSet` reads the word).
    init(stateKeptElsewhere: ()) {
        state = .placeholder
        action = nil
    }

    /// Creates a disposable that runs `action` the first time it is disposed.
    ///
    /// - Parameter action: the cancellation work; runs at most once, on the disposing thread.
    public init(_ action: @escaping () -> Void) {
        state = UnsafeAtomicInt(0)
        self.action = action
    }

    deinit { state.destroy() }

    /// Whether `dispose()` has been called (it may change concurrently).
    open var isDisposed: Bool { state.load() & Disposable.disposedBit != 0 }

    /// Runs the cancellation work once; later calls do nothing. Thread-safe.
    open func dispose() {
        if markDisposed() {
            let a = action
            action = nil
            a?()
        }
    }

    /// The disposed bit, read without a virtual call (for the per-event paths; subclasses
    /// that override `isDisposed` with other rules are never used as subscription lifetimes).
    @inlinable
    final var isDisposedBitSet: Bool { state.load(csys_acquire) & Disposable.disposedBit != 0 }

    /// Sets the disposed bit; true for the one caller that set it.
    @usableFromInline
    final func markDisposed() -> Bool {
        state.fetchOr(Disposable.disposedBit) & Disposable.disposedBit == 0
    }

    /// Takes the state word's spin bit (for subclasses' short critical sections); returns
    /// whether the object was already disposed at that moment.
    @usableFromInline
    final func lockState() -> Bool {
        var spins = 0
        while true {
            let s = state.fetchOr(Disposable.lockBit)
            if s & Disposable.lockBit == 0 { return s & Disposable.disposedBit != 0 }
            spins += 1
            if spins > 32 { csys_thread_yield() }
        }
    }

    /// Releases the spin bit, optionally setting the disposed bit at the same time.
    @usableFromInline
    final func unlockState(markingDisposed: Bool = false) {
        if markingDisposed {
            state.store(Disposable.disposedBit)
        } else {
            // Keep whatever disposed bit is there; clear only the lock bit.
            state.fetchAnd(~Disposable.lockBit)
        }
    }
}

extension Disposable {
    /// Wraps the receiver in a ``ScopedDisposable`` that disposes it on deallocation (RAC's
    /// `-asScopedDisposable`).
    public func asScopedDisposable() -> ScopedDisposable { ScopedDisposable(self) }
}

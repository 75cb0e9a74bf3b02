import CSystemShims

/// A resource or a piece of work that can be cancelled: RAC's `RACDisposable`.
///
/// `Disposable { ... }` runs its block on the first `dispose()` only; disposing again, from
/// any thread, does nothing. A plain disposable does **not** dispose itself when it is
/// deallocated (wrap it in ``ScopedDisposable`` for that). Subclasses (``CompoundDisposable``,
/// ``SerialDisposable``) share the same atomic state word.
open class Disposable: @unchecked Sendable {
    /// Three atomic words, stored in the object itself (see ``words``):
    /// 0. the state: `disposedBit`, plus `lockBit` for subclasses that guard members with
    ///    the same word (a short spin, since their critical sections are a few
    ///    instructions), plus bits of subclasses' own (`BlockSubscriber`'s `closedBit`);
    /// 1. where this disposable sits in the ``CompoundDisposable`` it was last added to (a
    ///    hint that makes `remove` O(1), checked by identity before it is used);
    /// 2. a word for a subclass (`BlockSubscriber`'s delivering thread).
    ///
    /// Why inline and not a separately allocated cell: a subscription is one of these
    /// objects, and a cell per object was a third of a subscribe cycle's allocations. It is
    /// the **first** stored property of this root class, so it starts where the object's
    /// stored properties start (Swift lays a root class's fields out in declaration order,
    /// after the object header); C's atomics point there through ``words``, and Swift code
    /// never reads or writes the property itself after `init` (swift-atomics'
    /// `ManagedAtomic` keeps its storage the same way). Objects never move, so the address
    /// is stable for the object's life.
    @usableFromInline final var storage: (csys_atomic_int, csys_atomic_int, csys_atomic_int)
    /// The action to run once; read and cleared only by the thread that won `dispose()`.
    /// (`@exclusivity(unchecked)`: that rule already makes access exclusive, and the
    /// dynamic check would cost a thread-local lookup in every disposable's initializer.)
    @usableFromInline @exclusivity(unchecked) var action: (() -> Void)?

    @usableFromInline static var disposedBit: Int { 1 }
    @usableFromInline static var lockBit: Int { 2 }

    /// The three atomic words of ``storage``.
    ///
    /// Right only while ``storage`` is the first stored property of this root class (see
    /// its comment): `DisposableLayoutTests` (Tests/ReactiveUVTests/Core/) fails when that
    /// assumption breaks, for this class and its subclasses, `BlockSubscriber` among them.
    @inlinable
    final var words: UnsafeMutablePointer<csys_atomic_int> {
        _getUnsafePointerToStoredProperties(self).assumingMemoryBound(to: csys_atomic_int.self)
    }

    /// The state word (word 0).
    @inlinable
    final var state: UnsafeAtomicInt { UnsafeAtomicInt(pointer: words) }

    /// Word 1: the member slot hint of ``CompoundDisposable``.
    @inlinable
    final var slotHint: UnsafeAtomicInt { UnsafeAtomicInt(pointer: words + 1) }

    /// Word 2, for a subclass's own use.
    @inlinable
    final var subclassWord: UnsafeAtomicInt { UnsafeAtomicInt(pointer: words + 2) }

    /// The initial words: nothing set, no slot.
    @inlinable
    static var initialStorage: (csys_atomic_int, csys_atomic_int, csys_atomic_int) {
        (csys_atomic_int(value: 0), csys_atomic_int(value: -1), csys_atomic_int(value: 0))
    }

    /// Creates a disposable that does nothing but remember that it was disposed.
    public init() {
        storage = Disposable.initialStorage
        action = nil
    }

    /// For subclasses that keep their disposed state elsewhere and override ``isDisposed``
    /// and ``dispose()`` without using the state word. (The word is inline now, so this is
    /// the plain initializer; it stays for the subclasses written against it.) Such a
    /// subclass must never be used as a subscription lifetime (`isDisposedBitSet` reads
    /// the word).
    init(stateKeptElsewhere: ()) {
        storage = Disposable.initialStorage
        action = nil
    }

    /// Creates a disposable that runs `action` the first time it is disposed.
    ///
    /// - Parameter action: the cancellation work; runs at most once, on the disposing thread.
    public init(_ action: @escaping () -> Void) {
        storage = Disposable.initialStorage
        self.action = action
    }

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

    /// Releases the spin bit, optionally setting the disposed bit at the same time (other
    /// bits, a subclass's, are kept).
    @usableFromInline
    final func unlockState(markingDisposed: Bool = false) {
        if markingDisposed {
            // One RMW: the lock bit (2) is known set and the disposed bit (1) known clear
            // (the caller's `lockState()` said so), so subtracting 1 clears the first and
            // sets the second without touching any other bit.
            state.fetchSub(Disposable.lockBit - Disposable.disposedBit)
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

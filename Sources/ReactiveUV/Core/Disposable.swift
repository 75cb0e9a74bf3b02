import CSystemShims
import Synchronization

/// A resource or a piece of work that can be cancelled: RAC's `RACDisposable`.
///
/// `Disposable { ... }` runs its block on the first `dispose()` only; disposing again, from
/// any thread, does nothing. A plain disposable does **not** dispose itself when it is
/// deallocated (wrap it in ``ScopedDisposable`` for that). Subclasses (``CompoundDisposable``,
/// ``SerialDisposable``) share the same atomic state word.
open class Disposable: @unchecked Sendable {
    /// Three atomic words, each an `Atomic<Int>` stored in the object itself:
    /// 0. ``state``: `disposedBit`, plus `lockBit` for subclasses that guard members with
    ///    the same word (a short spin, since their critical sections are a few
    ///    instructions), plus bits of subclasses' own (`BlockSubscriber`'s `closedBit`);
    /// 1. ``slotHint``: where this disposable sits in the ``CompoundDisposable`` it was last
    ///    added to (a hint that makes `remove` O(1), checked by identity before it is used);
    /// 2. ``subclassWord``: a word for a subclass (`BlockSubscriber`'s delivering thread).
    ///
    /// Why inline and not a separately allocated cell: a subscription is one of these
    /// objects, and a cell per object was a third of a subscribe cycle's allocations. Why
    /// the standard library's `Atomic` (Synchronization): it is storage made for atomics:
    /// a stored `let` of it has a stable address of its own by construction (it is never
    /// copied or moved, and every access goes through its address), so nothing depends on
    /// where the compiler lays the properties out, and its operations are the compiler's
    /// own atomic instructions, which ThreadSanitizer understands. (These words were once a
    /// tuple of C atomics reached through a pointer to the object's first stored property,
    /// right only as long as nobody reordered the properties.)
    @usableFromInline final let state = Atomic<Int>(0)
    /// Word 1: the member slot hint of ``CompoundDisposable`` (-1: none).
    @usableFromInline final let slotHint = Atomic<Int>(-1)
    /// Word 2, for a subclass's own use.
    @usableFromInline final let subclassWord = Atomic<Int>(0)
    /// The action to run once; read and cleared only by the thread that won `dispose()`.
    /// (`@exclusivity(unchecked)`: that rule already makes access exclusive, and the
    /// dynamic check would cost a thread-local lookup in every disposable's initializer.)
    @usableFromInline @exclusivity(unchecked) var action: (() -> Void)?

    @usableFromInline static var disposedBit: Int { 1 }
    @usableFromInline static var lockBit: Int { 2 }

    /// Creates a disposable that does nothing but remember that it was disposed.
    public init() {
        action = nil
    }

    /// For subclasses that keep their disposed state elsewhere and override ``isDisposed``
    /// and ``dispose()`` without using the state word. (The words are inline, so this is the
    /// plain initializer; it stays for the subclasses written against it.) Such a
    /// subclass must never be used as a subscription lifetime (`isDisposedBitSet` reads
    /// the word).
    init(stateKeptElsewhere: ()) {
        action = nil
    }

    /// Creates a disposable that runs `action` the first time it is disposed.
    ///
    /// - Parameter action: the cancellation work; runs at most once, on the disposing thread.
    public init(_ action: @escaping () -> Void) {
        self.action = action
    }

    /// Whether `dispose()` has been called (it may change concurrently).
    open var isDisposed: Bool { state.load(ordering: .acquiring) & Disposable.disposedBit != 0 }

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
    final var isDisposedBitSet: Bool { state.load(ordering: .acquiring) & Disposable.disposedBit != 0 }

    /// Sets the disposed bit; true for the one caller that set it.
    @usableFromInline
    final func markDisposed() -> Bool {
        state.bitwiseOr(Disposable.disposedBit, ordering: .acquiringAndReleasing).oldValue & Disposable.disposedBit == 0
    }

    /// Takes the state word's spin bit (for subclasses' short critical sections); returns
    /// whether the object was already disposed at that moment.
    @usableFromInline
    final func lockState() -> Bool {
        var spins = 0
        while true {
            let s = state.bitwiseOr(Disposable.lockBit, ordering: .acquiringAndReleasing).oldValue
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
            state.wrappingSubtract(Disposable.lockBit - Disposable.disposedBit, ordering: .acquiringAndReleasing)
        } else {
            // Keep whatever disposed bit is there; clear only the lock bit.
            state.bitwiseAnd(~Disposable.lockBit, ordering: .acquiringAndReleasing)
        }
    }
}

extension Disposable {
    /// Wraps the receiver in a ``ScopedDisposable`` that disposes it on deallocation (RAC's
    /// `-asScopedDisposable`).
    public func asScopedDisposable() -> ScopedDisposable { ScopedDisposable(self) }
}

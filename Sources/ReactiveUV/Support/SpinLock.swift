import CSystemShims
import Synchronization

/// A re-entrant lock built on one atomic word, for serializing sends where concurrency
/// enters a chain: a subject's roster (``Subject/Roster``), a `Signal.create` subscriber
/// (``Subscriber``), and the per-subscription state of merge-like operators
/// (`LockedState`).
///
/// Why not a pthread recursive mutex: the uncontended path here is one compare-exchange
/// and one store, with no call into libc, and sending a value is the hottest path we
/// have. Waiters spin briefly and then yield the processor, so a long callback costs a
/// waiter CPU time but never a deadlock. Re-entrant sends (a subscriber sending into its
/// own source from its callback) take the lock again on the same thread, as RAC 2's
/// `@synchronized` did.
///
/// Why inline: the lock is its two words themselves, `Atomic`s, held by its owner as a
/// stored `let`. An `Atomic` stored in a class has a stable address of its own inside the
/// object (it is never copied or moved, and every operation goes through that address),
/// so the owner pays no allocation for its lock and has nothing to free. The type is
/// noncopyable, so it can only be used in place (`owner.lock.lock()`): a closure or a
/// struct that needs the lock reaches it through the object that holds it. (There used to
/// be a second, copyable lock: a handle on two separately allocated cells, two allocations
/// per `Signal.create` subscription and per merge-like operator's subscription, freed by
/// a `destroy()` its owner had to call in `deinit`.)
///
/// The depth is an `Atomic` too, used only with relaxed loads and stores (plain moves on
/// x86-64 and arm64): only the owning thread touches it, so it needs no ordering, but a
/// plain `var` inside a `let` cannot change, and a `var` lock would make every `lock()`
/// a formal write access to the whole lock, the owner word other threads spin on included.
///
/// Orderings: taking the lock is an acquiring compare-exchange and releasing it a
/// releasing store of the owner word, so what one holder wrote is seen by the next.
@usableFromInline
struct RecursiveSpinLock: ~Copyable, Sendable {
    /// Owner thread token (`csys_thread_token`), or 0 when free.
    @usableFromInline let owner = Atomic<Int>(0)
    /// Re-entry depth, touched only by the owning thread.
    @usableFromInline let depth = Atomic<Int>(0)

    @inlinable
    init() {}

    /// Takes the lock, or takes it once more if this thread holds it already.
    @inlinable
    borrowing func lock() {
        let me = Int(bitPattern: csys_thread_token())
        if owner.load(ordering: .relaxed) == me {
            depth.store(depth.load(ordering: .relaxed) + 1, ordering: .relaxed)
            return
        }
        if !owner.compareExchange(expected: 0, desired: me, ordering: .acquiring).exchanged {
            lockSlow(me)
        }
        depth.store(1, ordering: .relaxed)
    }

    /// The contended path, out of line: spin, then yield between attempts. Never inlined:
    /// with `-cross-module-optimization` a client could inline it into every `lock()`, and
    /// the loop made `Subject.sendNext` too large to inline into the caller's sending loop.
    @usableFromInline @inline(never)
    borrowing func lockSlow(_ me: Int) {
        var spins = 0
        while true {
            if owner.load(ordering: .relaxed) == 0
                && owner.compareExchange(expected: 0, desired: me, ordering: .acquiring).exchanged {
                return
            }
            spins += 1
            if spins > 64 { csys_thread_yield() }
        }
    }

    /// Releases one hold; the last one frees the lock.
    @inlinable
    borrowing func unlock() {
        let d = depth.load(ordering: .relaxed) - 1
        depth.store(d, ordering: .relaxed)
        if d == 0 { owner.store(0, ordering: .releasing) }
    }

    /// True when the calling thread holds the lock.
    @inlinable
    var isHeldByCurrentThread: Bool {
        owner.load(ordering: .relaxed) == Int(bitPattern: csys_thread_token())
    }
}

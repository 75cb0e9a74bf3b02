import CSystemShims
import Synchronization

/// A re-entrant lock built on one atomic word, for serializing sends where concurrency
/// enters a chain (subjects, `Signal.create` subscribers, merge-like operators).
///
/// Why not a pthread recursive mutex: the uncontended path here is one compare-exchange
/// and one store, with no call into libc, and sending a value is the hottest path we
/// have. Waiters spin briefly and then yield the processor, so a long callback costs a
/// waiter CPU time but never a deadlock. Re-entrant sends (a subscriber sending into its
/// own source from its callback) take the lock again on the same thread, as RAC 2's
/// `@synchronized` did.
@usableFromInline
struct RecursiveSpinLock: @unchecked Sendable {
    /// Owner thread token (`csys_thread_token`), or 0 when free.
    @usableFromInline let owner: UnsafeAtomicInt
    /// Re-entry depth, touched only by the owning thread.
    @usableFromInline let depth: UnsafeMutablePointer<Int>

    @inlinable
    init() {
        owner = UnsafeAtomicInt(0)
        depth = .allocate(capacity: 1)
        depth.initialize(to: 0)
    }

    @inlinable
    func destroy() {
        owner.destroy()
        depth.deallocate()
    }

    @inlinable
    func lock() {
        let me = Int(bitPattern: csys_thread_token())
        if owner.load(csys_relaxed) == me {
            depth.pointee += 1
            return
        }
        if !owner.compareExchange(expected: 0, desired: me, csys_acquire) {
            lockSlow(me)
        }
        depth.pointee = 1
    }

    @usableFromInline
    func lockSlow(_ me: Int) {
        var spins = 0
        while true {
            if owner.load(csys_relaxed) == 0 && owner.compareExchange(expected: 0, desired: me, csys_acquire) {
                return
            }
            spins += 1
            if spins > 64 { csys_thread_yield() }
        }
    }

    @inlinable
    func unlock() {
        let d = depth.pointee - 1
        depth.pointee = d
        if d == 0 { owner.store(0, csys_release) }
    }

    /// True when the calling thread holds the lock.
    @inlinable
    var isHeldByCurrentThread: Bool { owner.load(csys_relaxed) == Int(bitPattern: csys_thread_token()) }
}

/// ``RecursiveSpinLock``'s lock with its two words stored in the object that uses it, for
/// an owner that holds it as a stored `let` (``Subject/Roster``): no allocation, nothing
/// to destroy.
///
/// Why a second lock type: ``RecursiveSpinLock`` is a copyable handle on two heap cells;
/// this one is the words themselves, `Atomic`s, which have a stable address of their own
/// inside the owner (they are never copied or moved), so the owner pays no allocation for
/// its lock. Noncopyable, so it can only be used in place. (`Subscriber` and `LockedState`
/// still hold a ``RecursiveSpinLock``; holding this one instead would save them its two
/// allocations, a change of its own, not made yet.)
///
/// The depth is an `Atomic` too, used only with relaxed loads and stores (plain moves on
/// x86-64 and arm64): only the owning thread touches it, so it needs no ordering, but a
/// plain `var` inside a `let` cannot change, and a `var` lock would make every `lock()`
/// a formal write access to the whole lock, the owner word other threads spin on included.
@usableFromInline
struct InlineRecursiveSpinLock: ~Copyable, Sendable {
    /// Owner thread token (`csys_thread_token`), or 0 when free.
    @usableFromInline let owner = Atomic<Int>(0)
    /// Re-entry depth, touched only by the owning thread.
    @usableFromInline let depth = Atomic<Int>(0)

    @inlinable
    init() {}

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

    @usableFromInline
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

import CSystemShims

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

    /// A lock over two words its owner keeps in its own storage and alive as long as the
    /// lock is used (``Subject/Roster`` does, as `Disposable` keeps its state inline): no
    /// allocation, and never `destroy()`ed. `owner` must start at 0.
    @inlinable
    init(owner: UnsafeMutablePointer<csys_atomic_int>, depth: UnsafeMutablePointer<Int>) {
        self.owner = UnsafeAtomicInt(pointer: owner)
        self.depth = depth
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

import CSystemShims

/// A pthread mutex from CSystemShims, plain or recursive. Heap storage (pthread objects
/// must not move); the owner calls `destroy()` once, in its `deinit`.
@usableFromInline
struct UnsafeLock: @unchecked Sendable {
    @usableFromInline let mutex: OpaquePointer

    /// Creates a lock; `recursive` lets the owning thread take it again (RAC's
    /// `@synchronized`), which re-entrant sends need.
    @inlinable
    init(recursive: Bool = false) { mutex = csys_mutex_create(recursive) }

    @inlinable
    func destroy() { csys_mutex_destroy(mutex) }

    @inlinable
    func lock() { csys_mutex_lock(mutex) }

    @inlinable
    func unlock() { csys_mutex_unlock(mutex) }

    @inlinable
    func withLock<R>(_ body: () throws -> R) rethrows -> R {
        csys_mutex_lock(mutex)
        defer { csys_mutex_unlock(mutex) }
        return try body()
    }
}

/// A condition variable paired with a plain mutex, for the blocking operators and for
/// threads that wait on a loop. Timed waits use the monotonic clock.
@usableFromInline
final class ConditionLock: @unchecked Sendable {
    @usableFromInline let mutex: OpaquePointer
    @usableFromInline let cond: OpaquePointer

    @usableFromInline
    init() {
        mutex = csys_mutex_create(false)
        cond = csys_cond_create()
    }

    deinit {
        csys_cond_destroy(cond)
        csys_mutex_destroy(mutex)
    }

    @usableFromInline func lock() { csys_mutex_lock(mutex) }
    @usableFromInline func unlock() { csys_mutex_unlock(mutex) }
    @usableFromInline func signal() { csys_cond_broadcast(cond) }
    @usableFromInline func wait() { csys_cond_wait(cond, mutex) }

    /// Waits at most `nanoseconds`; false when the time ran out.
    @usableFromInline func wait(nanoseconds: UInt64) -> Bool { csys_cond_timedwait(cond, mutex, nanoseconds) }
}

import CSystemShims

/// An atomic 64-bit integer whose storage lives on the heap (C points at it, so it must not
/// move). The owner calls `destroy()` exactly once, typically in its `deinit`.
///
/// A struct rather than a class so an object holding several atomics pays for no extra
/// reference counting; it is `@usableFromInline` so inlinable operator code can use it.
@usableFromInline
struct UnsafeAtomicInt: @unchecked Sendable {
    @usableFromInline let pointer: UnsafeMutablePointer<csys_atomic_int>

    @inlinable
    init(_ value: Int) {
        pointer = .allocate(capacity: 1)
        csys_atomic_int_init(pointer, Int64(value))
    }

    /// The process-wide placeholder cell (never written, never freed); see
    /// `Disposable.init(stateKeptElsewhere:)`.
    @inlinable
    static var placeholder: UnsafeAtomicInt { UnsafeAtomicInt(pointer: csys_atomic_int_placeholder()) }

    @inlinable
    init(pointer: UnsafeMutablePointer<csys_atomic_int>) { self.pointer = pointer }

    /// A cell alone on its cache line (64 bytes, 64-aligned), for counters one thread
    /// writes at a high rate while another thread writes a neighbouring one: without the
    /// padding, two 8-byte cells from consecutive allocations share a line and every write
    /// on one side steals it from the other (false sharing).
    init(_ value: Int, ownCacheLine: ()) {
        pointer = UnsafeMutableRawPointer.allocate(byteCount: 64, alignment: 64).bindMemory(to: csys_atomic_int.self, capacity: 1)
        csys_atomic_int_init(pointer, Int64(value))
    }

    /// Frees the cell (the placeholder is never freed).
    @inlinable
    func destroy() {
        if pointer != csys_atomic_int_placeholder() { pointer.deallocate() }
    }

    @inlinable
    func load(_ order: csys_memory_order = csys_acquire) -> Int {
        Int(csys_atomic_int_load(pointer, order))
    }

    @inlinable
    func store(_ value: Int, _ order: csys_memory_order = csys_release) {
        csys_atomic_int_store(pointer, Int64(value), order)
    }

    @inlinable
    @discardableResult
    func exchange(_ value: Int, _ order: csys_memory_order = csys_acq_rel) -> Int {
        Int(csys_atomic_int_exchange(pointer, Int64(value), order))
    }

    @inlinable
    @discardableResult
    func fetchAdd(_ delta: Int, _ order: csys_memory_order = csys_acq_rel) -> Int {
        Int(csys_atomic_int_fetch_add(pointer, Int64(delta), order))
    }

    @inlinable
    @discardableResult
    func fetchSub(_ delta: Int, _ order: csys_memory_order = csys_acq_rel) -> Int {
        Int(csys_atomic_int_fetch_sub(pointer, Int64(delta), order))
    }

    @inlinable
    @discardableResult
    func fetchOr(_ bits: Int, _ order: csys_memory_order = csys_acq_rel) -> Int {
        Int(csys_atomic_int_fetch_or(pointer, Int64(bits), order))
    }

    @inlinable
    @discardableResult
    func fetchAnd(_ bits: Int, _ order: csys_memory_order = csys_acq_rel) -> Int {
        Int(csys_atomic_int_fetch_and(pointer, Int64(bits), order))
    }

    /// Strong compare-exchange; returns whether it stored `desired`.
    @inlinable
    func compareExchange(expected: Int, desired: Int, _ order: csys_memory_order = csys_acq_rel) -> Bool {
        var e = Int64(expected)
        return csys_atomic_int_compare_exchange(pointer, &e, Int64(desired), order)
    }
}

/// An atomic flag that can be set once; `set()` tells whether this call was the one that set it.
@usableFromInline
struct UnsafeAtomicFlag: @unchecked Sendable {
    @usableFromInline let pointer: UnsafeMutablePointer<csys_atomic_bool>

    @inlinable
    init() {
        pointer = .allocate(capacity: 1)
        csys_atomic_bool_init(pointer, false)
    }

    @inlinable
    func destroy() { pointer.deallocate() }

    @inlinable
    var isSet: Bool { csys_atomic_bool_load(pointer, csys_acquire) }

    /// Sets the flag; true only for the first caller.
    @inlinable
    func set() -> Bool { !csys_atomic_bool_exchange(pointer, true, csys_acq_rel) }
}

/// An atomic integer owned by a class, for state captured by closures (the storage is
/// freed when the last closure holding it goes away).
@usableFromInline
final class AtomicCounter: @unchecked Sendable {
    @usableFromInline let atomic: UnsafeAtomicInt

    @inlinable
    init(_ value: Int = 0) { atomic = UnsafeAtomicInt(value) }

    deinit { atomic.destroy() }
}

import Glibc

/// The storage of an ``EventLoop``'s work queue: a growable buffer of ``LoopTask``s that
/// producers append to (under the loop's lock) and the loop thread drains by moving every
/// entry out.
///
/// Why not an `Array`: draining an array copies each entry out (a retain of the block's
/// context) and then clears the array (the matching release), and every append checks
/// uniqueness. Moving entries out of raw memory leaves exactly one retain per block (taken
/// when it is enqueued) and one release (when it has run). The buffer grows with
/// `realloc`, which for a big burst remaps pages instead of copying and re-faulting them
/// (tasks are a closure and a word: bitwise movable).
struct WorkQueue {
    // Thread-safety: none of its own; the EventLoop guards `pending` with its lock and
    // touches `batch` only on the loop thread.
    private var base: UnsafeMutablePointer<LoopTask>?
    private(set) var count = 0
    private var capacity = 0

    /// The capacity kept across drains; a burst that grew the buffer beyond it gives the
    /// memory back once drained.
    static let retainedCapacity = 4096

    var isEmpty: Bool { count == 0 }

    /// Appends `entry` (consumed), growing the buffer by doubling.
    @inline(__always)
    mutating func append(_ entry: consuming LoopTask) {
        if count == capacity { grow() }
        (base.unsafelyUnwrapped + count).initialize(to: entry)
        count += 1
    }

    private mutating func grow() {
        let newCapacity = max(64, capacity * 2)
        guard let raw = realloc(base, newCapacity * MemoryLayout<LoopTask>.stride) else {
            fatalError("ReactiveUV: out of memory growing an event loop's work queue")
        }
        base = raw.bindMemory(to: LoopTask.self, capacity: newCapacity)
        capacity = newCapacity
    }

    /// Hands every entry, in order, to `body` (which owns it), then leaves the queue empty.
    ///
    /// `body` must not touch this queue: the entries not yet handed out are still in it.
    @inline(__always)
    mutating func drain(_ body: (consuming LoopTask) -> Void) {
        guard let base else { return }
        let n = count
        for i in 0..<n { body((base + i).move()) }
        count = 0
        if capacity > WorkQueue.retainedCapacity {
            free(base)
            self.base = nil
            capacity = 0
        }
    }

    /// Frees the buffer and releases tasks never drained, with their contexts' references
    /// (only a loop that is going away without having run its queue has any).
    mutating func destroy() {
        guard let base else { return }
        for i in 0..<count { base[i].context.release() }
        base.deinitialize(count: count)
        free(base)
        self.base = nil
        count = 0
        capacity = 0
    }
}

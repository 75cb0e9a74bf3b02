import CLibUV
import CSystemShims
import Glibc

/// One entry of an ``EventLoop``'s work queue: a plain task and an opaque tag.
///
/// The loop knows nothing of the layers above it. A layer that queues tasks (the
/// scheduling layer) tags each with a ``LoopTaskContext`` of its own; while a tagged task
/// runs, the loop thread's context slot (``EventLoop/currentTaskContext``) holds the tag,
/// and that layer reads the slot to know on whose behalf code runs. Untagged work (from
/// ``EventLoop/execute(_:)``) runs with the slot as the loop thread has it outside any task.
///
/// An enum of one case rather than a struct: the drain takes a task apart with
/// `switch consume`, which moves the closure out; reading a struct's fields there made the
/// optimizer retain and release the closure's context around the call (two atomic
/// operations per task, ~25% of a scheduled block's cost on the benchmark machine).
enum LoopTask {
    /// The work, and its tag, owning a reference to its object when made by
    /// ``LoopTaskContext/retaining(_:)`` (given back when the task has run or is skipped).
    case task(() -> Void, LoopTaskContext)

    /// A task of `body` tagged with `context`.
    @inline(__always)
    init(body: @escaping () -> Void, context: LoopTaskContext) { self = .task(body, context) }

    /// The tag.
    @inline(__always)
    var context: LoopTaskContext {
        switch self { case .task(_, let context): return context }
    }
}

/// An opaque tag on a loop task: an object's address, with a flag saying whether the tag
/// owns a (+1) reference to it.
///
/// Packed into one word (bit 0 of an object address is always clear), so a task stays
/// three words and no per-task memory is read to decide whether to release.
struct LoopTaskContext: Equatable, @unchecked Sendable {
    // Thread-safety: a value; the reference it may own is given back exactly once, by
    // whoever consumes the task or disposable holding it.

    /// The address, with bit 0 set when a reference is owned.
    let bits: UInt

    /// No tag: the task runs with the context slot as the loop has it outside any task.
    static let none = LoopTaskContext(bits: 0)

    @inline(__always)
    private init(bits: UInt) { self.bits = bits }

    /// A tag that keeps `object` alive until ``release()``.
    @inline(__always)
    static func retaining<Object: AnyObject>(_ object: Object) -> LoopTaskContext {
        LoopTaskContext(bits: UInt(bitPattern: RetainedReference.retain(object)) | 1)
    }

    /// A tag that does not keep `object` alive: only for objects that live for the whole
    /// process (it saves two atomic reference-count updates per task).
    @inline(__always)
    static func borrowing<Object: AnyObject>(_ object: Object) -> LoopTaskContext {
        LoopTaskContext(bits: UInt(bitPattern: Unmanaged.passUnretained(object).toOpaque()))
    }

    /// The object's address as the context slot holds it (`nil` for ``none``).
    @inline(__always)
    var pointer: UnsafeMutableRawPointer? { UnsafeMutableRawPointer(bitPattern: bits & ~1) }

    /// The tagged object, unretained (the caller vouches for its type and that the tag is
    /// not ``none``).
    @inline(__always)
    func object<Object: AnyObject>(as _: Object.Type) -> Unmanaged<Object> {
        Unmanaged<Object>.fromOpaque(UnsafeRawPointer(bitPattern: bits & ~1).unsafelyUnwrapped)
    }

    /// Gives back the reference a ``retaining(_:)`` tag owns; nothing for other tags. Call
    /// it exactly once per tag made.
    @inline(__always)
    func release() {
        if bits & 1 != 0 { RetainedReference.release(UnsafeRawPointer(bitPattern: bits & ~1).unsafelyUnwrapped) }
    }
}

extension EventLoop {
    /// The thread-local slot a tagged task's context is in while it runs (see
    /// ``LoopTask``). Layers above may set it themselves around their own callbacks (and
    /// must restore it); the loop switches it only between tasks with different tags.
    static let taskContextKey: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    /// The calling thread's task context: the tag of the task running, or what a layer
    /// above set (see ``taskContextKey``), or `nil`.
    static var currentTaskContext: UnsafeMutableRawPointer? {
        @inline(__always) get { pthread_getspecific(taskContextKey) }
        @inline(__always) set { pthread_setspecific(taskContextKey, newValue) }
    }
}

extension EventLoop {
    /// Whether work handed in by ``execute(_:)`` (including scheduled blocks and timers
    /// started from other threads) is waiting and has not started yet. Safe from any
    /// thread.
    var hasQueuedWork: Bool {
        // `startedCount` first: both only grow and started ≤ enqueued at every moment, so
        // an `enqueuedCount` read afterwards is at least the started count read before.
        let started = startedCount.load()
        return enqueuedCount.load() > started
    }

    // MARK: - Handing work in

    /// Runs `work` on the loop's thread, after the work already queued. Safe from any thread.
    ///
    /// Always enqueues, even when called on the loop's thread (like `dispatch_async`).
    /// Work from one thread runs in the order it was handed in. The queue is drained in
    /// batches by one `uv_async_t` callback; a long burst yields to IO polling now and then.
    /// After ``close()`` began, `work` is dropped without running.
    ///
    /// - Parameter work: the work; it runs once, on the loop's thread.
    public func execute(_ work: @escaping @Sendable () -> Void) {
        enqueue(LoopTask(body: work, context: .none))
    }

    /// Appends a task to the queue and wakes the loop if it is the first since the last
    /// drain. Safe from any thread.
    ///
    /// This is the whole cost of scheduling a block from the caller's side: one uncontended
    /// mutex, an array append, a counter store, and a `uv_async_send` per batch.
    ///
    /// The task owns its context's reference (if any) from here on: when the loop is
    /// closed (`nil` returned) it is given back at once.
    ///
    /// - Returns: the entry's position (1 for the first entry the loop ever accepted, then
    ///   2, 3, ...; the drain counts entries the same way), or `nil` when ``close()`` began
    ///   and the entry was dropped.
    @discardableResult
    @inline(__always)
    func enqueue(_ entry: consuming LoopTask) -> Int? {
        queueLock.lock()
        guard accepting else {
            queueLock.unlock()
            entry.context.release()
            return nil
        }
        // Counted before the entry is visible to the loop thread (both under the lock the
        // drain takes), so `hasQueuedWork` never reports empty while the entry waits.
        let position = enqueuedCount.load(csys_relaxed) &+ 1
        enqueuedCount.store(position, csys_release)
        let wasEmpty = pending.isEmpty
        pending.append(entry)
        // Only the first item after a drain needs a wake-up; later ones ride along. The
        // send happens under the lock so close() (which clears `accepting` under it) never
        // closes the handle while a sender is still using it.
        if wasEmpty { uv_async_send(asyncHandle) }
        queueLock.unlock()
        return position
    }

    /// Makes the drain skip the task at `position` if it has not started. Safe from any
    /// thread, with `queueLock` held; called once per disposal of a queued task.
    ///
    /// Cancelling must cost the drain nothing while nobody cancels, so the drain takes no
    /// lock per entry: it reads `cancellations` (the number of recorded positions), and only
    /// when that is nonzero looks the position up under the lock. A disposal that happens
    /// before the drain reaches the entry (on the loop thread, or on another thread that
    /// then synchronized with it) has raised `cancellations` before that read, so the block
    /// is skipped; a disposal racing with the start of the block may or may not stop it,
    /// as with any scheduler. Such a race can record a position the drain has already
    /// passed; `takeCancellation` drops those, so records never pile up.
    func cancelEntryLocked(at position: Int) {
        // Already started (or run): nothing to cancel.
        if startedCount.load() >= position { return }
        // Positions arrive nearly in order: insert from the back.
        var index = cancelledPositions.count
        while index > 0 && cancelledPositions[index - 1] > position { index -= 1 }
        if index > 0 && cancelledPositions[index - 1] == position { return }
        cancelledPositions.insert(position, at: index)
        cancellations.store(cancelledPositions.count)
    }

    /// Whether the entry at `position` (now starting) was cancelled; forgets its record and
    /// those of entries already passed. Loop thread, only when `cancellations` is nonzero.
    func takeCancellation(at position: Int) -> Bool {
        queueLock.lock()
        defer { queueLock.unlock() }
        let cancelled = cancelledPositions.contains(position)
        dropCancellationsLocked(through: position)
        return cancelled
    }

    /// Forgets the records of entries at positions up to `position` (reached or passed),
    /// keeping `cancellations` equal to what is left.
    private func dropCancellationsLocked(through position: Int) {
        var passed = 0
        while passed < cancelledPositions.count && cancelledPositions[passed] <= position { passed += 1 }
        if passed > 0 { cancelledPositions.removeFirst(passed) }
        cancellations.store(cancelledPositions.count)
    }

    /// Wakes the loop without queueing work, so a ``run(until:timeout:)`` re-checks its
    /// condition. Call it after changing, from another thread, something such a condition
    /// reads. Safe from any thread.
    func wakeUp() {
        queueLock.withLock {
            if accepting { uv_async_send(asyncHandle) }
        }
    }

    /// The async handle's callback: runs queued work in batches.
    ///
    /// The context slot (``currentTaskContext``) is switched only when the next task's tag
    /// differs from the previous one's (a burst of tasks with one tag sets the thread-local
    /// once) and is restored before returning.
    func drainQueue() {
        callbackDepth += 1
        let outside = EventLoop.currentTaskContext
        var current = outside
        var started = startedCount.load(csys_relaxed)
        defer {
            if current != outside { EventLoop.currentTaskContext = outside }
            // Records left by disposals that raced with their task's start.
            if cancellations.load() != 0 {
                queueLock.withLock { dropCancellationsLocked(through: started) }
            }
            callbackDepth -= 1
        }
        // One batch per wake-up: work queued while it runs waits for the next one, which
        // its producer has sent (the first entry after a swap always sends). So a long
        // burst yields to IO polling between batches, and a drain that keeps pace with a
        // producer on another thread does not re-take the lock for a few entries at a time
        // (that contention made cross-thread scheduling ~30% slower).
        queueLock.lock()
        swap(&pending, &batch)
        queueLock.unlock()
        batch.drain { task in
            started &+= 1
            startedCount.store(started, csys_release)
            switch consume task {
            case .task(let body, let context):
                defer { context.release() }
                // Only tagged tasks can be cancelled (see `cancelEntryLocked`).
                if context.bits != 0 && cancellations.load(csys_acquire) != 0 && takeCancellation(at: started) {
                    return
                }
                let slot = context.pointer ?? outside
                if current != slot {
                    EventLoop.currentTaskContext = slot
                    current = slot
                }
                body()
            }
        }
    }
}

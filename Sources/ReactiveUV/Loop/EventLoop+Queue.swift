import CLibUV
import CSystemShims
import Glibc

/// One entry of an ``EventLoop``'s work queue.
///
/// Two kinds share the one queue so that work handed in by ``EventLoop/execute(_:)`` and
/// blocks scheduled on the loop's schedulers run in the order they were handed in.
enum QueueEntry {
    /// Work from ``EventLoop/execute(_:)``: runs as is, with ``Scheduler/current`` as the
    /// loop thread has it outside any scheduler.
    case work(EventLoop.Work)
    /// A block from ``Scheduler/schedule(_:)`` on a loop scheduler: skipped when disposed
    /// before it starts, run with ``Scheduler/current`` set to its scheduler (held by the
    /// entry as `LoopScheduler.retainedForQueue()` returned it).
    case block(() -> Void, Unmanaged<LoopScheduler>)
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
        enqueue(.work(work))
    }

    /// Appends an entry to the queue and wakes the loop if it is the first since the last
    /// drain. Safe from any thread.
    ///
    /// This is the whole cost of scheduling a block from the caller's side: one uncontended
    /// mutex, an array append, a counter store, and a `uv_async_send` per batch.
    ///
    /// - Returns: the entry's position (1 for the first entry the loop ever accepted, then
    ///   2, 3, ...; the drain counts entries the same way), or `nil` when ``close()`` began
    ///   and the entry was dropped.
    @discardableResult
    @inline(__always)
    func enqueue(_ entry: QueueEntry) -> Int? {
        queueLock.lock()
        guard accepting else {
            queueLock.unlock()
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

    /// Makes the drain skip the block at `position` if it has not started. Safe from any
    /// thread, with `queueLock` held; called once per disposed ``ScheduledBlock``.
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
    /// ``Scheduler/current`` is switched only when the next entry's scheduler differs from
    /// the previous one (a burst of blocks for one scheduler sets the thread-local once) and
    /// is restored before returning.
    func drainQueue() {
        callbackDepth += 1
        let outside = pthread_getspecific(Scheduler.currentKey)
        var current = outside
        var started = startedCount.load(csys_relaxed)
        defer {
            if current != outside { pthread_setspecific(Scheduler.currentKey, outside) }
            // Records left by disposals that raced with their block's start.
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
        batch.drain { entry in
            started &+= 1
            switch consume entry {
            case .work(let work):
                startedCount.store(started, csys_release)
                if current != outside {
                    pthread_setspecific(Scheduler.currentKey, outside)
                    current = outside
                }
                work()
            case .block(let block, let scheduler):
                startedCount.store(started, csys_release)
                defer { LoopScheduler.releaseFromQueue(scheduler) }
                if cancellations.load(csys_acquire) != 0 && takeCancellation(at: started) { return }
                let pointer = UnsafeMutableRawPointer(scheduler.toOpaque())
                if current != pointer {
                    pthread_setspecific(Scheduler.currentKey, pointer)
                    current = pointer
                }
                block()
            }
        }
    }
}

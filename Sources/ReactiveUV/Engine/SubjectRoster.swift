import CSystemShims
import Synchronization

extension Subject {
    /// A subject's subscribers and the lock that serializes its sends: the part of a
    /// subject its subscriptions need to leave it.
    ///
    /// Why apart from the subject: a subscription's ``Removal`` must reach the subscriber
    /// list for as long as the list exists, without keeping the subject alive. Through a
    /// weak reference to the subject that cost every subject a side table, and an object
    /// with a side table pays a slow runtime call for every retain and release — a send
    /// through an array of subjects, or through a stored property, retains the subject
    /// (a third of the time of `merge` in the benchmarks). A removal holds the roster
    /// strongly instead; the subject empties it when it goes (``detachAll()``), which also
    /// breaks the roster → entry → lifetime → removal → roster cycle. Its lock's two words
    /// are stored in it (``lock``, `Atomic`s), so a subject is two allocations (itself and
    /// its roster) and its lock none.
    ///
    /// A ``LockedState``, whose `lock` serializes sends and guards everything else here and
    /// the subject's latched terminal event (its words, `Atomic`s, live in this object: no
    /// allocation for the lock). So a subscription whose lifetime is a ``BlockSubscriber``
    /// registers the roster as that subscriber's serializer (``Subject/attach(_:_:)``): a
    /// value the subject sends through operators (`subject.map(f).subscribeNext`) reaches
    /// the subscriber with its lock held, and is announced with plain stores instead of a
    /// locked exchange, as a value sent to it directly is.
    @usableFromInline
    final class Roster: LockedState, @unchecked Sendable {
        // Unchecked exclusivity: every access happens under `lock`, and the dynamic check
        // would cost more than the send itself.
        /// Subscribers in subscription order; a departed one leaves a hole (`hole`, whose
        /// lifetime is disposed, so sends skip it) until there are as many holes as subscribers.
        /// Changed only between ``willChangeEntries()`` and ``didChangeEntries()``.
        @usableFromInline @exclusivity(unchecked) final var entries: ContiguousArray<Slot> = []
        /// Where a send reads the list: the start and length of `entries`' buffer, set by
        /// every change (``didChangeEntries()``). A send reads the buffer through these,
        /// without a reference of its own: a copy of the array (what keeps the list a send
        /// walks intact when a callback subscribes or leaves, since the change then copies
        /// on write) cost a retain and a release of the buffer per send, two locked
        /// instructions, a third of the time of a send to one subscriber. Instead a change
        /// made while a send reads the buffer first **retires** it (keeps a reference in
        /// `retired`), so the change copies on write and the send goes on over the old
        /// list, as before; the outermost send lets the retired lists go.
        @usableFromInline @exclusivity(unchecked) final var sendBase: UnsafePointer<Slot>?
        @usableFromInline @exclusivity(unchecked) final var sendCount = 0
        /// Sends under way (nested on the thread that holds the lock, when a callback sends).
        @usableFromInline @exclusivity(unchecked) final var sendDepth = 0
        /// Whether a send under way may be reading the current buffer (then a change
        /// retires it first). Cleared when it is retired and when the outermost send ends.
        @usableFromInline @exclusivity(unchecked) final var bufferInUse = false
        /// Lists replaced while a send was reading them, released when the outermost send ends.
        @usableFromInline @exclusivity(unchecked) final var retired: ContiguousArray<ContiguousArray<Slot>> = []
        @usableFromInline @exclusivity(unchecked) final var holes = 0
        /// The shared placeholder of departed entries, made at the first departure.
        @usableFromInline @exclusivity(unchecked) final var hole: Entry?

        /// ``removeEntry(_:)`` as a closure formed where the roster is made: a subject
        /// created in a caller's module (``Subject/init()`` is inlinable) gets a specialized
        /// copy, which a removal, disposed through the generic `dispose()` of its class,
        /// calls without the runtime metadata lookups of generic array code. Captures
        /// nothing (the roster is passed in), so forming it allocates nothing.
        @usableFromInline let remove: (Roster, Removal) -> Void

        @inlinable
        override init() {
            remove = { roster, removal in roster.removeEntry(removal) }
            super.init()
        }

        /// Call before changing `entries` (with the lock held): if a send may be reading
        /// the current buffer, keep it for that send, so that the change copies on write.
        @inlinable
        final func willChangeEntries() {
            if bufferInUse {
                retired.append(entries)
                bufferInUse = false
            }
        }

        /// Call after changing `entries` (with the lock held): where sends read it now.
        @inlinable
        final func didChangeEntries() {
            entries.withUnsafeBufferPointer { buffer in
                sendBase = buffer.baseAddress
                sendCount = buffer.count
            }
        }

        /// Appends a subscriber's slot; call with the lock held.
        @inlinable
        final func append(_ slot: Slot) {
            willChangeEntries()
            entries.append(slot)
            didChangeEntries()
        }

        /// Starts a send (lock held): returns the list to walk, marked as being read.
        @inlinable @inline(__always)
        final func beginSend() -> UnsafeBufferPointer<Slot> {
            sendDepth += 1
            bufferInUse = true
            return UnsafeBufferPointer(start: sendBase, count: sendCount)
        }

        /// Runs `body` on `list`. Why the walk of a send is a closure: written out in
        /// `sendNext` (or in a function of its own), the optimizer retained each
        /// subscriber's callback around its call, a retain and a release per delivery (twice
        /// the time of a fan-out); in a closure that captures the event, it does not.
        @inlinable @inline(__always)
        static func walk(_ list: UnsafeBufferPointer<Slot>, _ body: (UnsafeBufferPointer<Slot>) -> Void) {
            body(list)
        }

        /// Ends a send (lock held). The outermost one returns the lists retired while it
        /// ran, for the caller to release after unlocking (releasing a subscriber's sink may
        /// run code that takes other locks); `nil` when there are none (the usual case).
        @inlinable @inline(__always)
        final func endSend() -> ContiguousArray<ContiguousArray<Slot>>? {
            sendDepth -= 1
            if sendDepth != 0 { return nil }
            bufferInUse = false
            if retired.isEmpty { return nil }
            return takeRetired()
        }

        /// Empties `retired` (lock held), returning what it held.
        @usableFromInline
        final func takeRetired() -> ContiguousArray<ContiguousArray<Slot>> {
            let taken = retired
            retired = ContiguousArray()
            return taken
        }

        /// Takes every entry out (a termination, or the subject going away); call with the
        /// lock held. The caller drops them, ideally after unlocking.
        final func takeEntries() -> ContiguousArray<Slot> {
            willChangeEntries()
            let taken = entries
            // `ContiguousArray()`, not `[]`: the literal goes through a variadic array,
            // a runtime metadata lookup in this unspecialized code.
            entries = ContiguousArray()
            holes = 0
            didChangeEntries()
            return taken
        }

        /// The subject is going away: its subscribers are let go (their sinks and what they
        /// capture), outside the lock, since releasing a sink may run code (a
        /// `ScopedDisposable`'s deinit, say) that takes other locks. Usually there is
        /// nothing left (every subscription ended first), and then nothing but the lock is
        /// touched.
        final func detachAll() {
            lock.lock()
            if entries.isEmpty && hole == nil {
                lock.unlock()
                return
            }
            let taken = takeEntries()
            let placeholder = hole
            hole = nil
            lock.unlock()
            // Released here, after the unlock, not at their last use above. (Not with
            // `withExtendedLifetime`, whose generic closure costs runtime metadata lookups
            // in this unspecialized code.) Pinned by `SubjectLateReleaseTests` (a sink whose
            // release has another thread take this lock).
            _fixLifetime(taken)
            _fixLifetime(placeholder)
        }

        /// Returns once no send is under way on another thread (takes the lock and gives it
        /// back): how a ``BlockSubscriber`` disposed from another thread waits for a delivery
        /// it cannot see announced (see `BlockSubscriber.receiveUnderSourceLock(_:)`).
        @usableFromInline
        final func waitForSends() {
            lock.lock()
            lock.unlock()
        }

        /// Removes a departed subscriber in O(1): its slot becomes a hole; trailing holes are
        /// dropped, and all holes are squeezed out (moving the slots along) once they
        /// are as many as the subscribers, so the array stays within twice the live count.
        @inlinable
        final func removeEntry(_ removal: Removal) {
            lock.lock()
            defer { lock.unlock() }
            let i = removal.slot
            // After a termination (or the subject's end) the entries are gone: nothing to remove.
            guard i < entries.count, entries[i].entry.removal === removal else { return }
            willChangeEntries()
            defer { didChangeEntries() }
            if i == entries.count - 1 {
                entries.removeLast()
                while let last = entries.last, last.entry === hole {
                    entries.removeLast()
                    holes -= 1
                }
                return
            }
            if hole == nil { hole = Entry(sink: { _ in }, lifetime: Roster.departed, removal: removal) }
            entries[i] = Slot(entry: hole!, subscriber: nil)
            holes += 1
            if holes * 2 >= entries.count {
                var kept = 0
                for j in entries.indices where entries[j].entry !== hole {
                    entries[j].entry.removal.slot = kept
                    entries[kept] = entries[j]
                    kept += 1
                }
                entries.removeLast(entries.count - kept)
                holes = 0
            }
        }

        /// The lifetime of a hole: disposed, so a send skips it.
        @inlinable
        static var departed: CompoundDisposable {
            let d = CompoundDisposable()
            d.dispose()
            return d
        }
    }
}

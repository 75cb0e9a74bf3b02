import CSystemShims
import Synchronization

/// A disposable made of others: RAC's `RACCompoundDisposable`.
///
/// Disposing it disposes every member, in the order they were added (outside its lock, so
/// a member may touch the compound while being disposed). Adding to a compound that is
/// already disposed disposes the addition at once. A subscription's lifetime is a
/// compound: sources add what they must cancel, and a terminal event or `dispose()` tears
/// it all down.
///
/// Removal is O(1): the members are a bag in insertion order where a removed member leaves
/// a hole (`nil`), and each member remembers its slot (the hint in its own `slotHint` word,
/// checked by identity before use, so a member added to several compounds is still found,
/// by a scan, in the ones whose hint it does not carry). Holes are squeezed out when they
/// outnumber the members, so the bag stays within twice its live size: a subject with
/// 10,000 subscribers coming and going pays a constant cost per departure, not a scan.
open class CompoundDisposable: Disposable, @unchecked Sendable {
    /// Members in insertion order, `nil` where one was removed; guarded by the state word's
    /// spin bit.
    @usableFromInline @exclusivity(unchecked) final var members: ContiguousArray<Disposable?> = []
    /// How many of `members` are holes.
    @usableFromInline @exclusivity(unchecked) final var holes = 0

    /// Creates an empty compound.
    public override init() { super.init() }

    /// Called by an operator whose state holds its lock around every value it sends on
    /// (`combineLatest`), or by a subject (its roster's lock, held around every send), when
    /// this compound is its subscription's lifetime, before it subscribes to its sources
    /// (before the subject connects the subscriber). A ``BlockSubscriber`` takes the hint: a value delivered
    /// by a thread that holds `state.lock` skips its locked announcement, because its
    /// `dispose()` then waits for that lock (see `BlockSubscriber.serializer`). Any other
    /// compound ignores it.
    ///
    /// - Returns: `false` when the subscription is already closed (being disposed): the
    ///   operator then subscribes to nothing.
    @usableFromInline
    func serializeDeliveries(under state: LockedState) -> Bool { true }

    /// Creates a compound holding `disposables`.
    public init(_ disposables: [Disposable]) {
        super.init()
        for d in disposables { add(d) }
    }

    /// Creates a compound whose first member runs `action` on disposal.
    public override init(_ action: @escaping () -> Void) {
        super.init()
        add(Disposable(action))
    }

    /// Adds a member. `nil` or an already disposed member is ignored; if the compound is
    /// already disposed, `disposable` is disposed immediately instead.
    ///
    /// - Parameter disposable: the member to add.
    open func add(_ disposable: Disposable?) {
        guard let disposable, disposable !== self else { return }
        if disposable.isDisposed { return }
        if lockState() {
            unlockState()
            disposable.dispose()
            return
        }
        disposable.slotHint.store(members.count, ordering: .relaxed)
        members.append(disposable)
        unlockState()
    }

    /// Removes a member without disposing it; does nothing if it is absent or the compound
    /// is disposed. O(1) when `disposable` was last added to this compound; otherwise a
    /// scan from the newest member.
    ///
    /// - Parameter disposable: the member to remove (compared by identity).
    open func remove(_ disposable: Disposable) {
        if lockState() {
            unlockState()
            return
        }
        let hint = disposable.slotHint.load(ordering: .relaxed)
        if hint >= 0 && hint < members.count && members[hint] === disposable {
            removeLocked(at: hint)
        } else if let i = members.lastIndex(where: { $0 === disposable }) {
            removeLocked(at: i)
        }
        unlockState()
    }

    /// Leaves a hole at `index`, and squeezes the holes out once they outnumber the members
    /// (amortized O(1): each squeeze moves at most as many members as holes it removes).
    /// Call with the lock held.
    @usableFromInline
    final func removeLocked(at index: Int) {
        if index == members.count - 1 {
            members.removeLast()
        } else {
            members[index] = nil
            holes += 1
        }
        if holes > 16 && holes * 2 > members.count {
            var kept = 0
            for i in members.indices {
                guard let m = members[i] else { continue }
                // Move the hint along only if it is ours (a member of several compounds
                // carries the slot of the last one it was added to).
                if m.slotHint.load(ordering: .relaxed) == i { m.slotHint.store(kept, ordering: .relaxed) }
                members[kept] = m
                kept += 1
            }
            members.removeLast(members.count - kept)
            holes = 0
        }
    }

    /// Disposes every member, once.
    open override func dispose() {
        // The disposed bit is never cleared: seen set, there is nothing to do, and a second
        // `dispose()` (a subscription that already terminated, disposed by its owner) costs
        // a load instead of two locked instructions.
        if isDisposedBitSet { return }
        // One locked instruction, not a lock and an unlock: the disposed bit goes on first.
        // From then on `add` and `remove`, which take the spin bit and see the disposed
        // bit, leave `members` alone; so once a holder of the spin bit from before has let
        // go (its release pairs with this wait's acquire), the members are ours alone.
        if !markDisposed() { return }
        disposeMembers()
    }

    /// The second half of ``dispose()``, for the one caller that set the disposed bit:
    /// waits for a holder of the spin bit from before to let go, then disposes every member.
    @usableFromInline
    final func disposeMembers() {
        var spins = 0
        while state.load(ordering: .acquiring) & Disposable.lockBit != 0 {
            spins += 1
            if spins > 32 { csys_thread_yield() }
        }
        let taken = members
        members = []
        holes = 0
        for d in taken { d?.dispose() }
    }

    /// Adds `rhs` to `lhs` (see ``add(_:)``).
    public static func += (lhs: CompoundDisposable, rhs: Disposable?) { lhs.add(rhs) }
}

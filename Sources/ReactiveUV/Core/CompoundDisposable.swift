/// A disposable made of others: RAC's `RACCompoundDisposable`.
///
/// Disposing it disposes every member (outside its lock, so a member may touch the
/// compound while being disposed). Adding to a compound that is already disposed disposes
/// the addition at once. A subscription's lifetime is a compound: sources add what they
/// must cancel, and a terminal event or `dispose()` tears it all down.
open class CompoundDisposable: Disposable, @unchecked Sendable {
    /// Members, guarded by the state word's spin bit.
    @usableFromInline @exclusivity(unchecked) final var members: [Disposable] = []

    /// Creates an empty compound.
    public override init() { super.init() }

    /// Creates a compound holding `disposables`.
    public init(_ disposables: [Disposable]) {
        super.init()
        members = disposables
    }

    /// Creates a compound whose first member runs `action` on disposal.
    public override init(_ action: @escaping () -> Void) {
        super.init()
        members = [Disposable(action)]
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
        members.append(disposable)
        unlockState()
    }

    /// Removes a member without disposing it; does nothing if it is absent or the compound
    /// is disposed.
    ///
    /// - Parameter disposable: the member to remove (compared by identity).
    open func remove(_ disposable: Disposable) {
        if lockState() {
            unlockState()
            return
        }
        if let i = members.lastIndex(where: { $0 === disposable }) {
            members.remove(at: i)
        }
        unlockState()
    }

    /// Disposes every member, once.
    open override func dispose() {
        if lockState() {
            unlockState()
            return
        }
        let taken = members
        members = []
        unlockState(markingDisposed: true)
        for d in taken { d.dispose() }
    }

    /// Adds `rhs` to `lhs` (see ``add(_:)``).
    public static func += (lhs: CompoundDisposable, rhs: Disposable?) { lhs.add(rhs) }
}

/// A hot signal you send into by hand: RAC's `RACSubject`.
///
/// Values go to the subscribers present at the moment of the send; there is no replay.
/// Sends from several threads are serialized (re-entrantly: a subscriber may send into the
/// subject from its own callback). A subject is also a ``SubscriberProtocol``: subscribed to
/// several signals, the first terminal event from any of them terminates it and disposes
/// its other subscriptions.
///
/// ReactiveUV parts from RAC 2 on purpose: once terminated, a subject **replays its terminal
/// event** to late subscribers (RAC 2 sent them nothing, so they waited forever).
public class Subject<Value>: Signal<Value>, SubscriberProtocol, @unchecked Sendable {
    /// One subscriber: its sink and its subscription's lifetime (checked before each send).
    /// A class so a send can call through a guaranteed reference without retaining it.
    @usableFromInline
    final class Entry {
        @usableFromInline let sink: Sink<Value>
        @usableFromInline let lifetime: CompoundDisposable
        /// Removes this entry when the subscription ends; knows the entry's slot.
        @usableFromInline let removal: Removal

        @usableFromInline
        init(sink: @escaping Sink<Value>, lifetime: CompoundDisposable, removal: Removal) {
            self.sink = sink
            self.lifetime = lifetime
            self.removal = removal
        }
    }

    /// A place in the send list: the entry, and for a subscriber of
    /// `subscribe(next:error:completed:)` that subscriber itself, so a send goes from the
    /// list straight to its `receiveUnderSourceLock` (inlined into the send loop), without
    /// reading the entry or calling the forwarding closure (one dependent load and one
    /// call less per delivery of a fan-out). The entry's lifetime holds the subscriber.
    @usableFromInline
    struct Slot {
        @usableFromInline let entry: Entry
        @usableFromInline let subscriber: Unmanaged<BlockSubscriber<Value>>?

        @inlinable
        init(entry: Entry, subscriber: BlockSubscriber<Value>?) {
            self.entry = entry
            self.subscriber = subscriber.map { Unmanaged.passUnretained($0) }
        }

        /// Sends `event` to the subscriber at `slot` unless its subscription has ended.
        /// Through a pointer into the list, so neither the slot nor what it names is
        /// copied (a copy of the slot would retain and release its entry per delivery).
        ///
        /// Both calls go through guaranteed references, without a retain: **the list
        /// being walked holds the entry** (and the entry's lifetime the subscriber) for the
        /// whole call, even when the callee makes the roster let go of it. A subscriber
        /// that ends its own or any other subscription mid-delivery, subscribes, or
        /// terminates the subject changes the roster's list only after retiring the one
        /// being walked (`Roster.willChangeEntries`), and the outermost send releases the
        /// retired lists after it unlocks. Pinned by `SubjectUnretainedSendTests`.
        @inlinable @inline(__always)
        static func send(_ event: Event<Value>, to slot: UnsafePointer<Slot>) {
            if let subscriber = slot.pointee.subscriber {
                subscriber._withUnsafeGuaranteedRef { $0.receiveUnderSourceLock(event) }
            } else {
                Unmanaged.passUnretained(slot.pointee.entry)._withUnsafeGuaranteedRef { entry in
                    if !entry.lifetime.isDisposedBitSet { entry.sink(event) }
                }
            }
        }
    }

    /// The member a subscription's lifetime holds to leave the subject: O(1), through the
    /// slot it keeps (moved along when holes are squeezed out). It holds the subject's
    /// ``Roster`` (its subscribers and lock), not the subject and not the entry, so neither
    /// a subject nor a subscriber is kept alive by the other; and no weak reference to the
    /// subject, which would give it a side table and make every retain and release of it
    /// (a send through an array of subjects, a stored property) a slow runtime call.
    @usableFromInline
    final class Removal: Disposable, @unchecked Sendable {
        @usableFromInline let roster: Roster
        /// The entry's index in the roster's `entries`; guarded by the roster's lock.
        @usableFromInline @exclusivity(unchecked) var slot: Int

        @usableFromInline
        init(roster: Roster, slot: Int) {
            self.roster = roster
            self.slot = slot
            super.init()
        }

        override func dispose() {
            if markDisposed() { roster.remove(roster, self) }
        }
    }

    /// The subscribers and the lock that serializes sends and guards everything below.
    @usableFromInline let roster = Roster()
    // Unchecked exclusivity: every access happens under the lock, and the dynamic check
    // would cost more than the send itself.
    /// The latched terminal event.
    @usableFromInline @exclusivity(unchecked) final var terminal: Event<Value>?
    /// Whether a subclass remembers sent values (`willSendNext` must be called); plain
    /// subjects skip that call on the hot path.
    @usableFromInline let remembersValues: Bool
    /// Subscriptions of this subject to other signals (it used as a subscriber).
    @usableFromInline let subscriptions = CompoundDisposable()

    /// How this subject connects a subscriber (an operator's `observer`, or the forwarding
    /// closure of `subscribe(next:error:completed:)` with its `BlockSubscriber`), as a
    /// closure formed where the subject is made.
    ///
    /// Why a closure: ``attach(_:_:)`` and ``attach(subscriber:observer:)`` are reached
    /// through the class's vtable, whose entries are the library's generic copies, which
    /// look the types of the entry, slot and removal up in the runtime's metadata cache at
    /// every subscription (a quarter of the time of 10,000 subscribers coming and going,
    /// and of `switchToLatest` over fresh subjects). A subject made in a caller's module
    /// (``init()`` is inlinable) forms this closure there, specialized, and the generic
    /// entries only call it. Captures nothing, so forming it allocates nothing.
    @usableFromInline
    let connect: (Subject<Value>, @escaping Sink<Value>, CompoundDisposable, BlockSubscriber<Value>?) -> Void

    /// Creates a subject with no subscribers.
    ///
    /// Inlinable so that a caller's module makes its roster with the concrete type's
    /// metadata at hand (the generic initializer looks `Subject<Value>.Roster` up in the
    /// runtime's cache at every subject made) and forms `connect` specialized.
    @inlinable
    public override init() {
        remembersValues = false
        connect = { subject, observer, lifetime, subscriber in
            subject.attachLive(observer, lifetime, subscriber: subscriber)
        }
        super.init()
    }

    /// For subclasses that remember values (replay, behavior).
    @usableFromInline
    init(remembersValues: Bool) {
        self.remembersValues = remembersValues
        connect = { subject, observer, lifetime, subscriber in
            subject.attach(observer, lifetime, subscriber: subscriber)
        }
        super.init()
    }

    // The roster outlives the subject while subscriptions hold it (their removals); what
    // it holds goes now, as it went with the subject when the roster was part of it.
    deinit { roster.detachAll() }

    /// Connects an operator's observer. When `lifetime` is the subscription's
    /// ``BlockSubscriber`` (the stages between them pass it up), the roster becomes that
    /// subscriber's serializer first: every value this subject sends is sent with the
    /// roster's lock held, so the subscriber takes one sent through `map`, `filter` or
    /// `scan` as it takes one sent to it directly, with plain stores, and its `dispose()`
    /// from another thread waits for that lock instead (the pipeline row: one locked
    /// instruction per value fewer; Benchmarks/README.md, issue #35). A value reaching the
    /// subscriber by any other way, on a thread not holding the lock, still takes the
    /// locked handshake. When the subscription is already closed nothing is connected.
    @usableFromInline
    override func attach(_ observer: @escaping Sink<Value>, _ lifetime: CompoundDisposable) {
        guard lifetime.serializeDeliveries(under: roster) else { return }
        connect(self, observer, lifetime, nil)
    }

    @usableFromInline
    override func attach(subscriber: BlockSubscriber<Value>, observer: @escaping Sink<Value>) {
        connect(self, observer, subscriber, subscriber)
    }

    /// Connects a subscriber; subclasses that replay override this one. `subscriber`:
    /// `lifetime` itself when it is the `BlockSubscriber` that `observer` forwards to (the
    /// send loop then calls it directly: see ``Slot``), else `nil`.
    @usableFromInline
    func attach(_ observer: @escaping Sink<Value>, _ lifetime: CompoundDisposable, subscriber: BlockSubscriber<Value>?) {
        attachLive(observer, lifetime, subscriber: subscriber)
    }

    /// The plain subject's ``attach(_:_:subscriber:)``: the latched terminal event, or a
    /// new entry.
    @inlinable
    final func attachLive(_ observer: @escaping Sink<Value>, _ lifetime: CompoundDisposable, subscriber: BlockSubscriber<Value>?) {
        roster.lock.lock()
        if let terminal {
            roster.lock.unlock()
            observer(terminal)
            return
        }
        let entry = addEntry(observer, lifetime, subscriber: subscriber)
        roster.lock.unlock()
        registerRemoval(entry, lifetime)
    }

    /// Adds a subscriber; call with the lock held.
    @inlinable
    final func addEntry(
        _ observer: @escaping Sink<Value>, _ lifetime: CompoundDisposable, subscriber: BlockSubscriber<Value>?
    ) -> Entry {
        let removal = Removal(roster: roster, slot: roster.entries.count)
        let entry = Entry(sink: observer, lifetime: lifetime, removal: removal)
        subscriber?.sourceRemoval = removal
        roster.append(Slot(entry: entry, subscriber: subscriber))
        return entry
    }

    /// Makes disposing `lifetime` remove the subscriber (the removal holds the roster, not
    /// the subject, so a subscription never keeps a subject alive).
    @inlinable
    final func registerRemoval(_ entry: Entry, _ lifetime: CompoundDisposable) {
        lifetime.add(entry.removal)
    }

    /// Sends a value to every current subscriber.
    ///
    /// `final` and inlinable so a caller's module runs a specialized copy (the per-event
    /// path of a subject-driven pipeline).
    @inlinable
    public final func sendNext(_ value: Value) {
        let roster = self.roster
        roster.lock.lock()
        if terminal == nil {
            if remembersValues { willSendNext(value) }
            // The list is read in place, without a reference of its own: a callback that
            // subscribes or leaves re-entrantly retires this buffer first (see
            // `Roster.sendBase`), so the walk goes on over the list as it was. Entries are
            // called through guaranteed references: the buffer holds them.
            let event = Event<Value>.next(value)
            Roster.walk(roster.beginSend()) { list in
                guard let first = list.baseAddress else { return }
                for i in 0..<list.count { Slot.send(event, to: first + i) }
            }
            if let retired = roster.endSend() {
                roster.lock.unlock()
                // Released here, after the unlock, not at its last use above: releasing a
                // sink may run code (a deinit, a disposal) that takes this lock on another
                // thread or sends into this subject. Pinned by `SubjectLateReleaseTests`.
                _fixLifetime(retired)
                return
            }
        }
        roster.lock.unlock()
    }

    /// Fails every current subscriber and latches the error for late ones.
    public final func sendError(_ error: any Error) { terminate(.error(error)) }

    /// Completes every current subscriber and latches completion for late ones.
    public final func sendCompleted() { terminate(.completed) }

    final func terminate(_ event: Event<Value>) {
        roster.lock.lock()
        if terminal != nil {
            roster.lock.unlock()
            return
        }
        terminal = event
        let current = roster.takeEntries()
        for slot in current where !slot.entry.lifetime.isDisposed { slot.entry.sink(event) }
        roster.lock.unlock()
        subscriptions.dispose()
    }

    /// Hook for subclasses that remember values (replay, behavior); called with the lock held.
    @usableFromInline
    func willSendNext(_ value: Value) {}

    /// Keeps the disposable of a subscription of this subject to a signal.
    public final func didSubscribe(with disposable: Disposable) {
        subscriptions.add(disposable)
        // A subscription that ends on its own leaves the set, so a long-lived subject
        // subscribed to many signals does not grow (RAC's `didSubscribeWithDisposable:`).
        if let compound = disposable as? CompoundDisposable {
            // Weakly the compound of subscriptions, not the subject: a weak reference to the
            // subject would give it a side table (every retain and release of it slow).
            compound.add(Disposable { [weak subscriptions, unowned compound] in subscriptions?.remove(compound) })
        }
    }

    /// Whether the subject has sent a terminal event.
    public var hasTerminated: Bool {
        roster.lock.lock()
        defer { roster.lock.unlock() }
        return terminal != nil
    }
}

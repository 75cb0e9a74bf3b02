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
        @usableFromInline let id: Int
        @usableFromInline let sink: Sink<Value>
        @usableFromInline let lifetime: CompoundDisposable

        @usableFromInline
        init(id: Int, sink: @escaping Sink<Value>, lifetime: CompoundDisposable) {
            self.id = id
            self.sink = sink
            self.lifetime = lifetime
        }
    }

    /// Serializes sends and guards everything below.
    @usableFromInline let lock = RecursiveSpinLock()
    // Unchecked exclusivity: every access happens under `lock`, and the dynamic check
    // would cost more than the send itself.
    @usableFromInline @exclusivity(unchecked) final var entries: ContiguousArray<Entry> = []
    @usableFromInline @exclusivity(unchecked) final var nextID = 0
    /// The latched terminal event.
    @usableFromInline @exclusivity(unchecked) final var terminal: Event<Value>?
    /// Whether a subclass remembers sent values (`willSendNext` must be called); plain
    /// subjects skip that call on the hot path.
    @usableFromInline let remembersValues: Bool
    /// Subscriptions of this subject to other signals (it used as a subscriber).
    let subscriptions = CompoundDisposable()

    /// Creates a subject with no subscribers.
    public override init() {
        remembersValues = false
        super.init()
    }

    /// For subclasses that remember values (replay, behavior).
    @usableFromInline
    init(remembersValues: Bool) {
        self.remembersValues = remembersValues
        super.init()
    }

    deinit { lock.destroy() }

    @usableFromInline
    override func attach(_ observer: @escaping Sink<Value>, _ lifetime: CompoundDisposable) {
        lock.lock()
        if let terminal {
            lock.unlock()
            observer(terminal)
            return
        }
        let id = addEntry(observer, lifetime)
        lock.unlock()
        registerRemoval(id, lifetime)
    }

    /// Adds a subscriber; call with the lock held.
    @usableFromInline
    final func addEntry(_ observer: @escaping Sink<Value>, _ lifetime: CompoundDisposable) -> Int {
        nextID += 1
        entries.append(Entry(id: nextID, sink: observer, lifetime: lifetime))
        return nextID
    }

    /// Makes disposing `lifetime` remove the subscriber (the subject is held weakly, so a
    /// subscription never keeps a subject alive).
    @usableFromInline
    final func registerRemoval(_ id: Int, _ lifetime: CompoundDisposable) {
        lifetime.add(Disposable { [weak self] in self?.removeEntry(id) })
    }

    final func removeEntry(_ id: Int) {
        lock.lock()
        if let i = entries.firstIndex(where: { $0.id == id }) { entries.remove(at: i) }
        lock.unlock()
    }

    /// Sends a value to every current subscriber.
    ///
    /// `final` and inlinable so a caller's module runs a specialized copy (the per-event
    /// path of a subject-driven pipeline).
    @inlinable
    public final func sendNext(_ value: Value) {
        lock.lock()
        if terminal == nil {
            if remembersValues { willSendNext(value) }
            // The local copy keeps the array alive even if a callback subscribes or
            // unsubscribes re-entrantly (that mutation copies on write). Entries are called
            // through guaranteed references: the array holds them, so no retain per call.
            let current = entries
            let event = Event<Value>.next(value)
            current.withUnsafeBufferPointer { buffer in
                for i in 0..<buffer.count {
                    Unmanaged.passUnretained(buffer[i])._withUnsafeGuaranteedRef { entry in
                        if !entry.lifetime.isDisposedBitSet { entry.sink(event) }
                    }
                }
            }
        }
        lock.unlock()
    }

    /// Fails every current subscriber and latches the error for late ones.
    public final func sendError(_ error: any Error) { terminate(.error(error)) }

    /// Completes every current subscriber and latches completion for late ones.
    public final func sendCompleted() { terminate(.completed) }

    final func terminate(_ event: Event<Value>) {
        lock.lock()
        if terminal != nil {
            lock.unlock()
            return
        }
        terminal = event
        let current = entries
        entries = []
        for entry in current where !entry.lifetime.isDisposed { entry.sink(event) }
        lock.unlock()
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
            compound.add(Disposable { [weak self, unowned compound] in self?.subscriptions.remove(compound) })
        }
    }

    /// Whether the subject has sent a terminal event.
    public var hasTerminated: Bool {
        lock.lock()
        defer { lock.unlock() }
        return terminal != nil
    }
}

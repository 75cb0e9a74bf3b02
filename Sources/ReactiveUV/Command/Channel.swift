/// A two-way binding: RAC's `RACChannel`. A value sent **to** one terminal reaches the
/// subscribers of the **other**.
///
/// Subscribers of ``following`` get the latest value sent to ``leading`` at once (replay
/// of one); subscribers of ``leading`` get only future values. An error or completion sent
/// to either terminal reaches the subscribers of both, and is replayed to later ones.
public final class Channel<Value>: @unchecked Sendable {
    /// The terminal that is usually bound to a model.
    public let leading: Terminal
    /// The terminal that is usually bound to a view or a consumer.
    public let following: Terminal
    let termination: Disposable

    /// Creates a channel.
    public init() {
        let leadingValues = ReplaySubject<Value>(capacity: 0)
        let followingValues = ReplaySubject<Value>(capacity: 1)
        leading = Terminal(values: leadingValues, other: followingValues)
        following = Terminal(values: followingValues, other: leadingValues)
        // Terminal events sent into one side reach both sides.
        // Forwarded through unowned references: subscribing each subject to the other (as
        // RACChannel does) makes the two subjects hold each other, so a channel that never
        // terminated was never freed (LeakSanitizer, `make sanitize`). Unowned is safe: each
        // terminal holds both subjects, and nothing can send into a subject without a
        // terminal (a signal subscribed to a terminal holds it), so whenever a forwarding
        // closure runs, both subjects are alive. Not weak: a weak reference gives a subject
        // a side table for good, and then every retain and release of it (each value sent
        // through the channel) is a slow runtime call.
        let c = CompoundDisposable()
        c.add(leadingValues.ignoreValues().subscribe(
            error: { [unowned followingValues] in followingValues.sendError($0) },
            completed: { [unowned followingValues] in followingValues.sendCompleted() }))
        c.add(followingValues.ignoreValues().subscribe(
            error: { [unowned leadingValues] in leadingValues.sendError($0) },
            completed: { [unowned leadingValues] in leadingValues.sendCompleted() }))
        termination = c
    }

    /// One end of a ``Channel``: a signal of the values sent to the other end, and a
    /// subscriber whose values go to the other end: RAC's `RACChannelTerminal`.
    public final class Terminal: Signal<Value>, SubscriberProtocol, @unchecked Sendable {
        @usableFromInline let values: Subject<Value>
        @usableFromInline let other: Subject<Value>

        init(values: Subject<Value>, other: Subject<Value>) {
            self.values = values
            self.other = other
            super.init()
        }

        @usableFromInline
        override func attach(_ observer: @escaping Sink<Value>, _ lifetime: CompoundDisposable) {
            values.attach(observer, lifetime)
        }

        /// Sends a value to the other terminal's subscribers.
        @inlinable public func sendNext(_ value: Value) { other.sendNext(value) }
        /// Ends both terminals with an error.
        @inlinable public func sendError(_ error: any Error) { other.sendError(error) }
        /// Completes both terminals.
        @inlinable public func sendCompleted() { other.sendCompleted() }
        /// Keeps a subscription of this terminal to a signal.
        public func didSubscribe(with disposable: Disposable) { other.didSubscribe(with: disposable) }
    }
}

extension MutableProperty {
    /// A channel terminal for this property (RAC's `RACChannelTo` / `RACKVOChannel`):
    /// subscribers get the current value, then changes; values sent to it set the property.
    public func channelTerminal() -> Channel<Value>.Terminal {
        let channel = Channel<Value>()
        // RAC's RACKVOChannel rule: a value written from the channel ignores the *next*
        // update of the property (its own echo) and no other, so a correction another
        // observer makes while the write is under way still reaches the channel.
        let ignoreNextUpdate = Cell(false)
        channel.leading.sendNext(value)
        let toChannel = changes.filter { _ in
            if ignoreNextUpdate.value {
                ignoreNextUpdate.value = false
                return false
            }
            return true
        }.subscribe(channel.leading)
        // Sets the property through its subject, captured strongly (as `bind(to:)` does):
        // a weak reference to the property would give it a side table, and its `deinit`
        // disposes this subscription (in `channels`), which drops the closure.
        let subject = self.subject
        let fromChannel = channel.leading.subscribeNext { v in
            ignoreNextUpdate.value = true
            subject.sendNext(v)
            ignoreNextUpdate.value = false
        }
        channels.add(toChannel)
        channels.add(fromChannel)
        return channel.following
    }
}

import ReactiveUV

/// Where a client is in its life: the one place its lifecycle is kept (``ClientFeed/state``).
///
/// ```
///  accept ─► authenticating ──admitted (identity, AUTH)──► following(filter, paused)
///                │                                          │   ▲
///                │                                          └───┘ GREP: filter
///                │                                                PAUSE/RESUME, SINCE: paused
///                │ refused, no AUTH in time            QUIT, idle, shutdown │
///                └────────────────► draining(reason) ◄──────────────────────┘
///                                        │ queued bytes written, transport shut down
///   from any state:                      ▼ (or the drain's deadline passed)
///   read ended, write failed, ──────► closed(reason)
///   too slow, not reading replies
/// ```
///
/// - `authenticating`: every client starts here. It is sent replies but no line. A client
///   whose connection says who it is (a TLS certificate, a Unix peer's uid) or when no
///   token is asked for is admitted at once, before its first command is read.
/// - `following`: it takes the lines its filter (`nil`: every line) and access allow,
///   unless paused (`PAUSE`, or a hub's own replay for `SINCE`): then it skips them.
/// - `draining`: its service is over (it is logged as ended with the reason); no line, reply
///   or notice is queued any more, what is queued is written, then its side of the
///   connection is shut down.
/// - `closed`: nothing more is written; the fan-out let it go and the transport is closed.
///
/// Leaving `authenticating` or `following` is the client's end for everyone else: the
/// session stops reading, releases the filter, and the server forgets it (``ClientFeed/ended``).
enum ClientState: Equatable {
    case authenticating
    case following(filter: PatternID?, paused: Bool)
    case draining(reason: String)
    case closed(reason: String)

    /// Whether it is being served: its commands are handled and replies queued for it.
    var isServed: Bool {
        switch self {
        case .authenticating, .following: true
        case .draining, .closed: false
        }
    }

    /// Whether lines sealed now are queued for it (following, not paused).
    var takesLines: Bool {
        if case .following(_, paused: false) = self { true } else { false }
    }

    /// Its filter while following (`nil`: every line, or not following).
    var filter: PatternID? {
        if case .following(let filter, _) = self { filter } else { nil }
    }

    var isDraining: Bool {
        if case .draining = self { true } else { false }
    }

    var isClosed: Bool {
        if case .closed = self { true } else { false }
    }
}

/// How a client's service ended: said once, when it leaves `authenticating` or `following`.
struct ClientEnd {
    /// Why (`client closed`, `BYE`, `too slow: …`), as the log says it.
    let reason: String
    /// The filter it had, for its owner to release.
    let filter: PatternID?
}

/// One client as the ``LineFanOut`` serves it: its lifecycle (``state``, every transition
/// below and nowhere else) and the fan-out's bookkeeping for it (which block it has been
/// written up to, what waits to be written, whether a write is in flight).
///
/// The session (commands) and the fan-out (writes) both ask the feed for a transition and
/// read ``state``; neither sets it. Each transition first lets the fan-out take the lines
/// sealed so far under the old state (``LineFanOut/catchUp(_:)``), then tells it what
/// changed (``LineFanOut/clientChanged(_:from:)``), so a `PAUSE` or a `GREP` applies from the
/// next line on, and a client's end is said once (``ended``) however it came.
///
/// A feed holds no log lines of its own while it keeps up: the lines it has not been
/// written yet are the fan-out's shared blocks from `nextSequence` on. Only replies (and
/// the lines before a reply, so the reply keeps its place among them) are copied into
/// `outbox`.
final class ClientFeed {
    // Main loop only.
    let transport: ClientTransport
    /// The fan-out serving it (it outlives every feed: the server holds it).
    unowned let fanOut: LineFanOut
    /// Where the client is in its life (``ClientState`` draws it).
    private(set) var state: ClientState = .authenticating
    /// The sources this client may read (`--access-file`), from its admission; `nil`: every source.
    private(set) var access: SourceAccess?
    /// Its filter while following (`nil`: every line).
    var filter: PatternID? { state.filter }

    // The fan-out's bookkeeping (LineFanOut reads and writes these; the lifecycle is above).
    /// The first block not yet written to (or skipped for) this client.
    var nextSequence: Int
    /// Bytes to write before the next blocks' lines: lines already taken from blocks, then
    /// replies and notices.
    var outbox: [UInt8] = []
    /// How many log lines `outbox` holds.
    var outboxLines = 0
    /// How many of `outbox`'s bytes are the fan-out's own notices (`DROPPED`, `HEARTBEAT`):
    /// they have an allowance of their own (``LineFanOut/notice(_:_:)``).
    var noticeBytes = 0
    /// Bytes of the lines it takes from blocks `pendingFrom ..< pendingThrough`: what waits
    /// for it in the shared blocks, counted once per block (the fan-out's batching rule).
    var pendingFrom = 0
    var pendingThrough = 0
    var pendingBytes = 0
    /// A write is in flight; nothing more is written until it completes.
    var writing = false
    /// In the fan-out's list of feeds to visit soon.
    var queued = false
    /// Lines written (handed to the transport) and lines dropped because the client fell
    /// behind by more than the queue limit.
    var linesSent = 0
    var linesDropped = 0
    /// When something was last written (or a heartbeat queued).
    var lastOutput: SchedulerTime
    /// Runs once a write completes with little waiting (``LineFanOut/whenRoom(_:_:)``).
    var onRoom: (() -> Void)?

    private let endedSubject = ReplaySubject<ClientEnd>(capacity: 1)
    private let closedSubject = Subject<Void>()
    /// The transport's shutdown once a drain has written everything.
    private var shuttingDown: Disposable?

    init(transport: ClientTransport, fanOut: LineFanOut, nextSequence: Int) {
        self.transport = transport
        self.fanOut = fanOut
        self.nextSequence = nextSequence
        lastOutput = Scheduler.main.now
    }

    /// Sends one value, the moment the client leaves `authenticating` or `following` (its
    /// end, with the reason and the filter to release), then completes; replayed to a late
    /// subscriber.
    var ended: Signal<ClientEnd> { endedSubject }

    /// Completes once the client is `closed`; at once for a subscriber that comes later.
    var closed: Signal<Void> { closedSubject }

    // MARK: Transitions (the only writes to `state`)

    /// `authenticating` → `following` every line, unpaused, reading what `access` allows.
    ///
    /// - Parameter access: the sources it may read (`nil`: every source).
    func admit(access: SourceAccess?) {
        guard case .authenticating = state else { return }
        self.access = access
        enter(.following(filter: nil, paused: false))
    }

    /// `following`: skips the lines sealed from now on (`true`) or takes them again.
    ///
    /// - Parameter paused: whether to skip lines.
    func setPaused(_ paused: Bool) {
        guard case .following(let filter, _) = state else { return }
        enter(.following(filter: filter, paused: paused))
    }

    /// `following`: takes the lines sealed from now on through `filter` (`nil`: every line).
    ///
    /// - Parameter filter: the compiled pattern.
    /// - Returns: whether it switched: then the caller releases the filter it replaced;
    ///   `false` when it no longer follows, and the caller releases `filter` itself.
    func setFilter(_ filter: PatternID?) -> Bool {
        guard case .following(_, let paused) = state else { return false }
        enter(.following(filter: filter, paused: paused))
        return true
    }

    /// Ends its service gracefully: what is queued (the goodbye last) is written, then its
    /// side of the connection is shut down and it is closed. Bound the wait with ``closed``.
    ///
    /// - Parameter reason: why, for the log.
    func drain(_ reason: String) {
        guard state.isServed else { return }
        enter(.draining(reason: reason))
    }

    /// The fan-out wrote everything a draining client had queued: its transport is shut
    /// down, then it is closed.
    func drained() {
        guard case .draining(let reason) = state, shuttingDown == nil else { return }
        shuttingDown = transport.shutdown().catchTo(.empty())
            .subscribe(completed: { [weak self] in self?.close(reason) })
    }

    /// Closes it at once, from any state: nothing more is written; the transport is closed.
    ///
    /// - Parameter reason: why, for the log (when it was still served).
    func close(_ reason: String) {
        guard !state.isClosed else { return }
        enter(.closed(reason: reason))
    }

    /// The one way `state` changes: the fan-out takes what was sealed under the old state
    /// (which may end a client too far behind: then that end stands), the state changes, the
    /// end is said if this is it, and the fan-out follows the change.
    private func enter(_ next: ClientState) {
        if !next.isClosed {
            fanOut.catchUp(self)
            guard !state.isClosed else { return }
        }
        let previous = state
        state = next
        if previous.isServed && !next.isServed {
            endedSubject.sendNext(ClientEnd(reason: Self.reason(next), filter: previous.filter))
            endedSubject.sendCompleted()
        }
        fanOut.clientChanged(self, from: previous)
        if next.isClosed {
            onRoom = nil  // (it may hold the replay that holds the session)
            shuttingDown?.dispose()
            transport.close()
            closedSubject.sendCompleted()
        }
    }

    private static func reason(_ state: ClientState) -> String {
        switch state {
        case .draining(let reason), .closed(let reason): reason
        case .authenticating, .following: ""
        }
    }
}

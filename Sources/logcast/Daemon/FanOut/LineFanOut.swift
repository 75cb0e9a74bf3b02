import ReactiveUV

/// Every line logcast serves passes through here, once: formatted into a shared block,
/// scanned once by the filter set for all clients, then written to each client.
///
/// ```
/// sources ──ingest──► builder ──seal (once per loop turn)──► LineBlock ──scan (one pass)
///   (files, LINE,                                              │
///    syslog, NATS…)                                            ▼
///                        blocks (shared, freed when every feed has passed them)
///                                                              │ pump: a bounded slice
///                                                              ▼ of feeds per loop turn
///                            ClientFeed ──one write per turn──► ClientTransport (TCP, TLS…)
/// ```
///
/// **The path of one line, in the order of this file** (then the clients' side: adding
/// one, following its transitions, its replies, notices and a hub's replay):
/// 1. A source hands it in on the main loop: ``ingest(prefix:chunk:)`` (a chunk of whole
///    lines: `FileSource` through `LogcastServer.startFile`, `NatsHub`) or
///    ``ingest(prefix:line:)`` (`SyslogSource`, a forwarder's `LINE`, `MultilineAssembler`).
/// 2. `LineBlockBuilder` (LineBlock.swift) copies `prefix + line + \n` into the open block;
///    ``seal()`` closes it into a `LineBlock` once per loop turn (sooner past `sealSize`).
/// 3. `FilterSet.scan` (FilterSet.swift) marks every line's matching patterns, one pass for
///    all filtered clients; `onSeal` shows the block to `AlertEngine`.
/// 4. ``pump()`` visits the feeds with replies waiting, then a round over every feed, a
///    bounded slice per loop turn; ``visit(_:now:flushAt:)`` asks the feed's `ClientState`
///    (ClientFeed.swift) whether it takes lines, and ``mayWait(_:now:flushAt:)`` whether its
///    bytes may wait for more.
/// 5. `LineBlock.append(for:access:to:)` gathers the lines its filter and access take from
///    each block it has not passed, behind its replies (``gather(_:into:)``), or hands the
///    block's own array to a client taking every line.
/// 6. ``write(_:_:lines:)`` hands the bytes to the feed's `ClientTransport`
///    (`StreamConnection` for TCP and Unix sockets, `TLSConnection`), or the blocks
///    themselves to a `BlockClientTransport` (`WebViewTransport`, which frames only the
///    newest lines, a few times a second);
///    until it completes that feed is not written again, and past ``queueLimit`` behind it
///    loses lines (``enforceLimit(_:)``).
///
/// Replies (``reply(_:_:)``), the fan-out's notices (``notice(_:_:)``) and a hub's replay
/// (``replay(_:prefix:chunk:)``) join at step 5, in the feed's `outbox`.
///
/// **The seams.** Any source of lines calls the two `ingest` methods on the main loop; any
/// kind of connection is served through a ``ClientTransport``. A client's lifecycle is its
/// feed's (``ClientState``): the fan-out asks it and asks it for transitions (a failed write,
/// a client too slow), and follows each one (``clientChanged(_:from:)``).
///
/// **Bounded work per turn.** Sealing and scanning cost once per line. Writing is done by
/// ``pump()``, which visits at most ``maxVisitsPerTurn`` feeds (and stops early past
/// ``maxPumpSeconds``) and schedules itself again for the rest, so with ten thousand
/// clients the loop still reads commands, accepts and answers `STATS` between slices.
///
/// **Fewer, larger writes under load.** While lines stream in (blocks sealed back to
/// back), a client with less than ``minBatchBytes`` waiting is left to gather more, for at
/// most ``maxBatchDelay``; a quiet stream is written at once, and replies never wait.
///
/// **One copy however many clients.** A block's bytes are shared: a client taking every
/// line is written the block's own array; a filtered client's write gathers its matched
/// lines into one new array (its bytes, no one else's). A client whose write has not
/// completed (its socket is full) is not written again; it falls behind in blocks, which
/// are kept once for all, and past `queueLimit` bytes behind it loses the lines it missed
/// (counted as lines, reported with `DROPPED n`) or, with `--slow-client disconnect`, its
/// connection.
final class LineFanOut {
    // Main loop only.
    let stats: Stats
    let queueLimit: Int
    let disconnectSlowClients: Bool
    /// The filter set blocks are scanned with (``FilterCompiler`` installs it).
    var filters: FilterSet?
    /// Sees every block as it is sealed, after the clients' scan (`--alert`: AlertEngine).
    var onSeal: ((LineBlock) -> Void)?

    private var builder = LineBlockBuilder()
    /// Blocks some feed still needs: `blocks[i].sequence == firstSequence + i`.
    private var blocks: [LineBlock] = []
    private var firstSequence = 0
    /// The sequence the next sealed block gets.
    private(set) var nextSequence = 0
    /// Bytes in every block sealed so far.
    private var totalBytes = 0

    private(set) var feeds: [ClientFeed] = []
    private var feedIndex: [ObjectIdentifier: Int] = [:]
    private var filteredFeeds = 0
    /// Feeds to visit before the round: replies waiting, a write just completed.
    private var ready: [ClientFeed] = []
    /// The round over every feed after new blocks: where it is, how many feeds remain.
    private var cursor = 0
    private var roundRemaining = 0
    private var pumpScheduled = false

    private var roundTimerScheduled = false
    private var lastRound = SchedulerTime.monotonicNow
    /// Blocks are being sealed back to back (less than ``busyGap`` apart): lines stream in,
    /// and a client's small write may wait for more (see ``mayWait(_:now:)``).
    private var batching = false
    /// A round that writes the batches still waiting is scheduled.
    private var flushScheduled = false

    static let maxVisitsPerTurn = 512
    /// The largest chunk a replay hands in at once: one stored message (--batch-bytes is
    /// at most 1 MiB).
    static let maxReplayChunk = 1 << 20
    static let minRoundInterval = 0.001
    static let maxPumpSeconds = 0.004
    /// While lines stream in, a client is written once this many bytes wait for it...
    static let minBatchBytes = 32 << 10
    /// ...or once its oldest waiting line has waited this long (seconds).
    static let maxBatchDelay = 0.025
    /// Seals closer together than this (seconds) mean lines are streaming in (lines that
    /// come further apart are written at once).
    static let busyGap = 0.01
    /// The bytes a client's outbox may hold in the fan-out's own notices (`DROPPED`,
    /// `HEARTBEAT`), on top of its queue limit (``notice(_:_:)``): about twenty of them.
    static let noticeAllowance = 256

    init(stats: Stats, queueLimit: Int, disconnectSlowClients: Bool) {
        self.stats = stats
        self.queueLimit = queueLimit
        self.disconnectSlowClients = disconnectSlowClients
    }

    // MARK: Sources, sealing and the scan (steps 1 to 3)

    /// Adds the whole lines of `chunk` (each ending in `\n`), each to be sent as
    /// `prefix + line`.
    func ingest(prefix: [UInt8], chunk: [UInt8]) {
        guard !chunk.isEmpty else { return }
        builder.append(prefix: prefix, chunk: chunk)
        didIngest()
    }

    /// Adds one line (without its `\n`).
    func ingest(prefix: [UInt8], line: some Collection<UInt8>) {
        builder.append(prefix: prefix, line: line)
        didIngest()
    }

    private func didIngest() {
        if builder.bytes.count >= LineBlockBuilder.sealSize { seal() }
        scheduleRound()
    }

    /// Schedules the pump for new lines, at most once per ``minRoundInterval``: while lines
    /// stream in, a round waits up to that long so its block holds more lines and each
    /// client gets fewer, larger writes (a 1% client's write is otherwise a few lines, and
    /// the write, not the filter, is the cost). A quiet stream is pumped at once.
    private func scheduleRound() {
        guard !pumpScheduled && !roundTimerScheduled else { return }
        let since = lastRound.distance(to: SchedulerTime.monotonicNow)
        if since >= Self.minRoundInterval {
            schedulePump()
            return
        }
        roundTimerScheduled = true
        _ = Scheduler.main.afterDelay(Self.minRoundInterval - since) { [weak self] in
            guard let self else { return }
            self.roundTimerScheduled = false
            self.schedulePump()
        }
    }

    /// Turns what was ingested into the next block: counted, scanned once for every
    /// filtered client, and kept while some feed needs it.
    private func seal() {
        guard !builder.isEmpty else { return }
        let now = SchedulerTime.monotonicNow
        batching = lastRound.distance(to: now) < Self.busyGap
        lastRound = now
        let block = builder.seal(sequence: nextSequence, at: now)
        block.streamStart = totalBytes
        totalBytes += block.bytes.count
        nextSequence += 1
        stats.linesRead += block.lineCount
        if filteredFeeds > 0, let filters { scan(block, with: filters) }
        onSeal?(block)
        if feeds.isEmpty {
            firstSequence = nextSequence
            return
        }
        if blocks.isEmpty { firstSequence = block.sequence }
        blocks.append(block)
        roundRemaining = feeds.count
    }

    /// Scans `block` with `filters`, counting a scan shared with the helper thread.
    private func scan(_ block: LineBlock, with filters: FilterSet) {
        let start = SchedulerTime.monotonicNow
        if filters.scan(block) { stats.splitScans += 1 }
        stats.scans += 1
        stats.scanNanoseconds += UInt64(max(0, start.distance(to: SchedulerTime.monotonicNow)) * 1e9)
    }

    // MARK: Writing (steps 4 to 6)

    private func markReady(_ feed: ClientFeed) {
        guard !feed.queued, !feed.state.isClosed else { return }
        feed.queued = true
        ready.append(feed)
        schedulePump()
    }

    private func schedulePump() {
        guard !pumpScheduled else { return }
        pumpScheduled = true
        Scheduler.main.schedule { [weak self] in self?.pump() }
    }

    /// One slice of the fan-out: the ready feeds, then the round's next feeds, within the
    /// turn's budget; schedules itself again when work remains.
    func pump() {
        pumpScheduled = false
        seal()
        let started = SchedulerTime.monotonicNow
        var flushAt: SchedulerTime?
        var visits = 0
        func overBudget() -> Bool {
            visits += 1
            if visits >= Self.maxVisitsPerTurn { return true }
            return visits % 64 == 0 && started.distance(to: SchedulerTime.monotonicNow) > Self.maxPumpSeconds
        }
        var readyHead = 0
        while readyHead < ready.count {
            let feed = ready[readyHead]
            readyHead += 1
            feed.queued = false
            visit(feed, now: started, flushAt: &flushAt)
            if overBudget() { break }
        }
        ready.removeFirst(readyHead)
        while roundRemaining > 0 && !feeds.isEmpty && visits < Self.maxVisitsPerTurn {
            if cursor >= feeds.count { cursor = 0 }
            let feed = feeds[cursor]
            cursor += 1
            roundRemaining -= 1
            visit(feed, now: started, flushAt: &flushAt)
            if overBudget() { break }
        }
        if roundRemaining <= 0 { releaseBlocks() }
        if !ready.isEmpty || roundRemaining > 0 { schedulePump() }
        if let flushAt { scheduleFlush(at: flushAt) }
    }

    /// A round over every feed at `deadline`, for the batches left waiting (when lines stop
    /// streaming in, no seal starts one).
    private func scheduleFlush(at deadline: SchedulerTime) {
        guard !flushScheduled else { return }
        flushScheduled = true
        let delay = max(0, SchedulerTime.monotonicNow.distance(to: deadline))
        _ = Scheduler.main.afterDelay(delay) { [weak self] in
            guard let self else { return }
            self.flushScheduled = false
            self.roundRemaining = self.feeds.count
            self.schedulePump()
        }
    }

    /// Writes what `feed` has waiting, in one write, unless a write is in flight.
    private func visit(_ feed: ClientFeed, now: SchedulerTime, flushAt: inout SchedulerTime?) {
        let state = feed.state
        guard !state.isClosed else { return }
        // A client that takes no lines now (paused, authenticating, draining) skips them
        // (and holds no block back).
        if !state.takesLines { feed.nextSequence = nextSequence }
        if feed.writing {
            enforceLimit(feed)
            return
        }
        if !state.isDraining && mayWait(feed, now: now, flushAt: &flushAt) { return }
        if let taker = feed.transport as? BlockClientTransport {
            // The web view: the blocks themselves, no line copied (BlockClientTransport).
            let taken = blocks[(feed.nextSequence - firstSequence)..<(nextSequence - firstSequence)]
            var fromBlocks = 0
            for block in taken { fromBlocks += block.count(for: feed.filter, access: feed.access) }
            let lines = feed.outboxLines + fromBlocks
            let outbox = feed.outbox
            feed.nextSequence = nextSequence
            feed.outbox = []
            feed.outboxLines = 0
            feed.noticeBytes = 0
            guard !outbox.isEmpty || lines > 0 else {
                if state.isDraining { feed.drained() }
                return
            }
            write(feed, taker.write(outbox: outbox, blocks: fromBlocks > 0 ? taken : [], filter: feed.filter, access: feed.access),
                  lines: lines)
            return
        }
        var lines = feed.outboxLines
        var bytes: [UInt8]
        if nextSequence - feed.nextSequence == 1 && feed.outbox.isEmpty && feed.filter == nil && feed.access == nil {
            // Everything from one block: the block's own array, no copy.
            let block = block(feed.nextSequence)
            bytes = block.bytes
            lines = block.lineCount
        } else {
            bytes = feed.outbox
            // One allocation for the whole write when its size is known (see mayWait).
            if feed.pendingFrom == feed.nextSequence && feed.pendingThrough == nextSequence {
                bytes.reserveCapacity(bytes.count + feed.pendingBytes)
            }
            lines += gather(feed, into: &bytes)
        }
        feed.nextSequence = nextSequence
        feed.outbox = []
        feed.outboxLines = 0
        feed.noticeBytes = 0
        guard !bytes.isEmpty else {
            if state.isDraining { feed.drained() }
            return
        }
        write(feed, feed.transport.write(bytes), lines: lines)
    }

    /// Whether `feed`'s lines may wait for more: only while lines stream in, with no reply
    /// waiting, less than ``minBatchBytes`` waiting and the oldest of it sealed less than
    /// ``maxBatchDelay`` ago. A client taking 1% of the lines would otherwise be written a
    /// few lines every millisecond, and each `write` (a syscall, a TCP segment, a wake-up of
    /// the reader) costs more than finding those lines; batches make the writes 10-20×
    /// fewer at the price of at most ``maxBatchDelay`` of latency, and only under load.
    /// `flushAt` gets the earliest time a waiting batch must be written.
    private func mayWait(_ feed: ClientFeed, now: SchedulerTime, flushAt: inout SchedulerTime?) -> Bool {
        guard batching, feed.outbox.isEmpty, feed.nextSequence < nextSequence else { return false }
        if feed.pendingFrom != feed.nextSequence || feed.pendingThrough < feed.nextSequence {
            feed.pendingFrom = feed.nextSequence
            feed.pendingThrough = feed.nextSequence
            feed.pendingBytes = 0
        }
        for sequence in feed.pendingThrough..<nextSequence {
            feed.pendingBytes += block(sequence).byteCount(for: feed.filter, access: feed.access)
        }
        feed.pendingThrough = nextSequence
        guard feed.pendingBytes < Self.minBatchBytes else { return false }
        let deadline = block(feed.nextSequence).sealedAt.advanced(by: Self.maxBatchDelay)
        guard now < deadline else { return false }
        if flushAt.map({ deadline < $0 }) ?? true { flushAt = deadline }
        return true
    }

    /// Appends the lines `feed` takes from every block it has not passed to `bytes`.
    ///
    /// - Returns: how many lines.
    private func gather(_ feed: ClientFeed, into bytes: inout [UInt8]) -> Int {
        var lines = 0
        for sequence in feed.nextSequence..<nextSequence {
            lines += block(sequence).append(for: feed.filter, access: feed.access, to: &bytes)
        }
        return lines
    }

    /// The kept block with `sequence` (some feed has not passed it).
    private func block(_ sequence: Int) -> LineBlock { blocks[sequence - firstSequence] }

    /// Runs `writing` (the feed's transport writing its bytes or blocks); when it completes,
    /// the feed is visited again if more waits for it (or its drain ends), and a replay
    /// waiting for room goes on.
    private func write(_ feed: ClientFeed, _ writing: Signal<Void>, lines: Int) {
        feed.writing = true
        feed.linesSent += lines
        stats.linesSent += lines
        feed.lastOutput = Scheduler.main.now
        _ = writing.subscribe(
            error: { [weak feed] error in
                guard let feed else { return }
                feed.writing = false
                feed.close("write failed: \(error)")
            },
            completed: { [weak self, weak feed] in
                guard let self, let feed else { return }
                feed.writing = false
                if feed.state.isDraining && feed.outbox.isEmpty {
                    feed.drained()
                } else if !feed.outbox.isEmpty || feed.nextSequence < self.nextSequence {
                    self.markReady(feed)
                }
                if let onRoom = feed.onRoom, feed.outbox.count - feed.noticeBytes <= self.queueLimit / 2 {
                    feed.onRoom = nil
                    onRoom()
                }
            })
    }

    /// A client whose previous write is still in flight: past the queue limit behind (its
    /// notices aside), it loses the lines it missed (counted) or its connection. Only a
    /// client that takes lines: a paused one skips them at its next visit, and they were
    /// counted as lost (a `STATS` client that had paused itself inflated `lines_dropped`
    /// whenever a block was sealed while its reply was being written).
    private func enforceLimit(_ feed: ClientFeed) {
        guard feed.nextSequence < nextSequence, feed.state.takesLines else { return }
        let behind = totalBytes - block(feed.nextSequence).streamStart + feed.outbox.count - feed.noticeBytes
        guard behind > queueLimit else { return }
        if disconnectSlowClients {
            feed.close("too slow: \(behind) bytes behind (limit \(queueLimit))")
            return
        }
        var lost = 0
        for sequence in feed.nextSequence..<nextSequence { lost += block(sequence).count(for: feed.filter, access: feed.access) }
        feed.nextSequence = nextSequence
        feed.linesDropped += lost
        stats.linesDropped += lost
    }

    /// Frees the blocks every feed has passed.
    private func releaseBlocks() {
        var oldest = nextSequence
        for feed in feeds where feed.nextSequence < oldest { oldest = feed.nextSequence }
        let passed = oldest - firstSequence
        guard passed > 0 else { return }
        blocks.removeFirst(min(passed, blocks.count))
        firstSequence = oldest
    }

    // MARK: Clients: joining, transitions, replies, notices, replays

    /// A new client: it gets the lines sealed from now on, once admitted.
    ///
    /// - Parameter transport: its connection.
    /// - Returns: its feed, `authenticating`.
    func add(_ transport: ClientTransport) -> ClientFeed {
        seal()
        let feed = ClientFeed(transport: transport, fanOut: self, nextSequence: nextSequence)
        feedIndex[ObjectIdentifier(feed)] = feeds.count
        feeds.append(feed)
        return feed
    }

    /// Follows a transition `feed` made (``ClientFeed`` calls it after changing its state):
    /// counts filtered clients, starts writing out a drain, lets a closed client go.
    ///
    /// - Parameters:
    ///   - feed: the client.
    ///   - previous: the state it left.
    func clientChanged(_ feed: ClientFeed, from previous: ClientState) {
        if (previous.filter == nil) != (feed.filter == nil) { filteredFeeds += feed.filter == nil ? -1 : 1 }
        switch feed.state {
        case .draining:
            if !feed.writing && feed.outbox.isEmpty { feed.drained() } else { markReady(feed) }
        case .closed:
            remove(feed)
        case .authenticating, .following:
            break
        }
    }

    /// The client is gone: nothing more is written to it.
    private func remove(_ feed: ClientFeed) {
        guard let index = feedIndex.removeValue(forKey: ObjectIdentifier(feed)) else { return }
        let last = feeds.removeLast()
        if index < feeds.count {
            feeds[index] = last
            feedIndex[ObjectIdentifier(last)] = index
        }
        if feeds.isEmpty {
            blocks.removeAll()
            firstSequence = nextSequence
            roundRemaining = 0
        }
    }

    /// Queues `text` (a reply line, `\n` added) after every line sealed before it.
    ///
    /// Replies count against the same queue limit as lines: a client that sends commands
    /// (`HELP`, `STATS`, anything answered) and never reads the answers would otherwise grow
    /// its outbox without bound (a megabyte of `HELP`s is a few hundred megabytes of
    /// replies). A reply cannot be dropped as a line is (a forwarder waits for its
    /// `OK SYNC`), so past the limit the connection ends, whatever the slow-client policy:
    /// the client's memory stays within the limit plus one reply. While a hub's replay
    /// waits for room (``whenRoom(_:_:)``) its outbox may hold the limit of stored lines
    /// plus the stored message that crossed it (at most ``maxReplayChunk``), so replies
    /// get a second limit's worth on top of both. The fan-out's own notices are not
    /// counted here (``notice(_:_:)``).
    ///
    /// - Parameters:
    ///   - feed: the client (served: a draining or closed client is sent nothing more).
    ///   - text: the reply, without its line feed.
    func reply(_ feed: ClientFeed, _ text: String) {
        guard feed.state.isServed, enqueue(feed, text) else { return }
        let limit = feed.onRoom == nil ? queueLimit : 2 * queueLimit + Self.maxReplayChunk
        let queued = feed.outbox.count - feed.noticeBytes
        if queued > limit {
            // Its bytes are no longer kept: the session ends without writing them.
            feed.outbox = []
            feed.outboxLines = 0
            feed.noticeBytes = 0
            feed.close("not reading its replies: \(queued) bytes queued (limit \(queueLimit))")
            return
        }
        markReady(feed)
    }

    /// Queues a notice of the fan-out's own (`DROPPED n`, `HEARTBEAT t`, `\n` added) for
    /// `feed`, after every line sealed before it, if its allowance has room.
    ///
    /// Why notices are not replies: a client whose socket is full is sent them without
    /// asking, every tick while it stalls (`DROPPED` as it loses lines, `HEARTBEAT` as
    /// nothing reaches it). Counted as replies, they pushed a client a few bytes under the
    /// limit over it and ended it as "not reading its replies", and a long stall ended
    /// every stalled client that way. They do not count against the queue limit (nor in
    /// how far behind it is): they have ``noticeAllowance`` bytes of their own while unwritten,
    /// and a notice that does not fit is not queued (the caller says it again later:
    /// `DROPPED` counts every line lost so far, and a client with bytes waiting is not idle).
    ///
    /// - Parameters:
    ///   - feed: the client (served).
    ///   - text: the notice, without its line feed.
    /// - Returns: whether it was queued.
    @discardableResult
    func notice(_ feed: ClientFeed, _ text: String) -> Bool {
        guard feed.state.isServed, feed.noticeBytes + text.utf8.count + 1 <= Self.noticeAllowance,
              enqueue(feed, text) else { return false }
        feed.noticeBytes += text.utf8.count + 1
        markReady(feed)
        return true
    }

    /// Appends `text` and a line feed to `feed`'s outbox, after the lines sealed so far;
    /// whether it did (catching up may have ended a client too far behind).
    private func enqueue(_ feed: ClientFeed, _ text: String) -> Bool {
        catchUp(feed)
        guard feed.state.isServed else { return false }
        feed.outbox.append(contentsOf: text.utf8)
        feed.outbox.append(10)
        return true
    }

    /// Queues for `feed` alone the lines of `chunk` (each prefixed with `prefix`) that its
    /// filter takes: stored lines a hub replays to one client (`SINCE`), filtered and
    /// counted as the shared lines are.
    ///
    /// Why here and not as replies: a replay replaces the client's share of the fan-out
    /// (its feed is paused meanwhile), so its `GREP` must go on applying.
    ///
    /// Replayed lines are never dropped, whatever the slow-client policy: they are stored,
    /// so the replay can wait for the client instead. Returns `false` once more than the
    /// queue limit waits for `feed`; the caller then holds the replay back until
    /// ``whenRoom(_:_:)`` says the client caught up (what arrives meanwhile is still queued).
    @discardableResult
    func replay(_ feed: ClientFeed, prefix: [UInt8], chunk: [UInt8]) -> Bool {
        guard feed.state.isServed else { return true }
        var builder = LineBlockBuilder()
        builder.append(prefix: prefix, chunk: chunk)
        guard !builder.isEmpty else { return true }
        let block = builder.seal(sequence: 0)
        if let pattern = feed.filter {
            // The set in force holds every live client's pattern (a client switches to a
            // pattern only once a set with it is installed).
            guard let filters, filters.patterns.contains(pattern) else { return true }
            scan(block, with: filters)
        }
        catchUp(feed)
        guard feed.state.isServed else { return true }
        feed.outboxLines += block.append(for: feed.filter, access: feed.access, to: &feed.outbox)
        markReady(feed)
        return feed.outbox.count - feed.noticeBytes <= queueLimit
    }

    /// Runs `action` once, when a write to `feed` completes with at most half the queue
    /// limit still waiting for it (replaces an action not yet run).
    func whenRoom(_ feed: ClientFeed, _ action: @escaping () -> Void) {
        feed.onRoom = action
    }

    /// Moves the lines sealed so far that `feed` takes into its outbox (not following, or
    /// paused: skips them), so what is queued next, or the state it enters next, comes after
    /// them. A client whose socket is full is held to the queue limit first, so replies
    /// asked for while it does not read cannot pile its lines up in the outbox.
    ///
    /// - Parameter feed: the client (a transition of its own calls this first).
    func catchUp(_ feed: ClientFeed) {
        seal()
        if feed.writing { enforceLimit(feed) }
        guard feed.nextSequence < nextSequence, !feed.state.isClosed else { return }
        if feed.state.takesLines { feed.outboxLines += gather(feed, into: &feed.outbox) }
        feed.nextSequence = nextSequence
    }

    /// Bytes held in blocks (for STATS).
    var heldBytes: Int { blocks.reduce(0) { $0 + $1.bytes.count } }
}

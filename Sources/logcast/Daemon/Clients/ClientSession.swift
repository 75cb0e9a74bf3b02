import Logging
import ReactiveUV

/// One connected client: its commands in, its feed of lines and replies out.
///
/// ```
/// transport.reads → clientLines → parse → handle      (GREP, PAUSE, STATS, …)
/// GREP p → FilterCompiler.request(p) → (compiled off the loop) → feed.setFilter
/// lines and replies ← LineFanOut (one write per turn; the feed's order)
/// ```
/// Its lifecycle is its feed's (``ClientState`` in ClientFeed.swift draws it): the session
/// asks the feed for transitions (admitted, paused, ended) and reads its state, and the
/// feed says once when the client's service ended, whoever ended it (``ClientFeed/ended``):
/// only then does the session stop reading, release its filter and leave the server.
///
/// The server's one tick visits every session for heartbeats, drop reports and the idle
/// cut-off (no timer per client: ten thousand idle clients cost no timers). Everything
/// runs on the main loop, so the session's plain fields need no lock.
final class ClientSession: @unchecked Sendable {
    let transport: ClientTransport
    let feed: ClientFeed
    let server: LogcastServer
    var config: LogcastConfig { server.config }
    var logger: Logger { server.logger }
    var reading: Disposable?
    var lastInput: SchedulerTime
    var reportedDrops = 0
    /// The feed's end, watched from the start.
    private var watchingEnd: Disposable?
    /// A graceful end's deadline, kept until the feed is closed.
    private var finishing: Disposable?
    /// Called once when the session is over.
    let onEnd: (ClientSession) -> Void
    /// Who the client is (`token`, `cert:<subject>`, `uid:<n>`, `anonymous`); `nil` until
    /// it is admitted (ClientSession+Auth.swift).
    var identity: String?

    /// Whether its service is over (draining or closed).
    var ended: Bool { !feed.state.isServed }

    init(transport: ClientTransport, server: LogcastServer, onEnd: @escaping (ClientSession) -> Void) {
        self.transport = transport
        self.server = server
        self.onEnd = onEnd
        feed = server.fanOut.add(transport)
        lastInput = Scheduler.main.now
        watchingEnd = feed.ended.subscribeNext { [weak self] end in self?.didEnd(end) }
    }

    /// Starts reading commands.
    func start() {
        reading = transport.reads
            .clientLines(maxLength: config.maxCommandLength)
            .subscribe(
                next: { [weak self] in self?.handle($0) },
                error: { [weak self] error in self?.end(reason: "read failed: \(error)") },
                completed: { [weak self] in self?.end(reason: "client closed") })
    }

    func handle(_ input: ClientLine) {
        guard !ended else { return }
        lastInput = Scheduler.main.now
        if feed.state == .authenticating {
            authenticate(input)
            return
        }
        guard case .line(let text) = input else {
            reply("ERR \(ProtocolError.lineTooLong(config.maxCommandLength))")
            return
        }
        switch ClientCommand.parse(text) {
        case .failure(.empty): return
        case .failure(let error): reply("ERR \(error)")
        case .success(.grep(let pattern)): grep(pattern)
        case .success(.pause):
            feed.setPaused(true)
            reply("OK PAUSE")
        case .success(.resume):
            feed.setPaused(false)
            reply("OK RESUME")
        case .success(.stats):
            // A client restricted to some sources sees its own counters only: the daemon's
            // would tell it how busy the files it may not read are.
            if feed.access != nil {
                reply("STATS lines_sent=\(feed.linesSent) lines_dropped=\(feed.linesDropped) identity=\(identity ?? "-")")
            } else {
                reply(String(server.statsLine().dropLast()))
            }
        case .success(.auth):
            reply(server.security.token == nil || identity != "token"
                ? "ERR AUTH is not asked for here (you are \(identity ?? "-"))" : "ERR already authenticated")
        case .success(.help):
            for line in ClientCommand.helpText { reply("HELP \(line)") }
            reply("OK HELP")
        case .success(.quit): quit(message: "BYE")
        case .success(.line(let file, let text)):
            // A restricted client could otherwise put lines under a file's name it may not read.
            guard feed.access == nil else {
                reply("ERR LINE needs access to every source")
                return
            }
            config.inject(TaggedLine(file: file, text: text))
        // Commands are handled in arrival order and injection is synchronous, so this reply
        // tells a forwarder that every LINE it sent before the SYNC is in our stream.
        case .success(.sync(let token)): reply("OK SYNC \(token)")
        case .success(.since(let argument)):
            if let since = server.since { since(self, argument) } else { reply("ERR SINCE needs a hub (logcast --from nats://…)") }
        }
    }

    /// Asks for the pattern; this client keeps its old filter until the new one is compiled.
    func grep(_ pattern: String) {
        if pattern.isEmpty {
            switchFilter(to: nil)
            reply("OK GREP ")
            return
        }
        let compiler = server.compiler
        compiler.request(pattern) { [weak self] result in
            guard let self else {
                if case .success(let id) = result { compiler.release(id) }
                return
            }
            switch result {
            case .success(let id):
                if self.switchFilter(to: id) { self.reply("OK GREP \(pattern)") }
            case .failure(let refusal):
                self.reply(refusal.reply)
            }
        }
    }

    /// Switches the feed to `id`, releasing the filter it replaces (or `id`, when the
    /// client is no longer served); whether it switched.
    @discardableResult
    private func switchFilter(to id: PatternID?) -> Bool {
        let old = feed.filter
        guard feed.setFilter(id) else {
            if let id { server.compiler.release(id) }
            return false
        }
        if let old { server.compiler.release(old) }
        return true
    }

    /// Heartbeats to quiet clients, drop reports, idle cut-off (from the server's tick).
    func tick(_ now: SchedulerTime) {
        guard !ended else { return }
        if feed.state == .authenticating && lastInput.distance(to: now) >= ClientSession.authTimeout {
            refuse("no AUTH within \(Int(ClientSession.authTimeout))s", reply: "ERR authentication required: send AUTH <token> first")
            return
        }
        // Notices, not replies: they do not count against its queue limit (LineFanOut.notice).
        if feed.linesDropped > reportedDrops && server.fanOut.notice(feed, "DROPPED \(feed.linesDropped)") {
            reportedDrops = feed.linesDropped
        }
        if config.idleTimeout > 0 && lastInput.distance(to: now) >= config.idleTimeout
            && feed.lastOutput.distance(to: now) >= config.idleTimeout {
            quit(message: "BYE idle for \(Int(config.idleTimeout))s")
            return
        }
        if config.heartbeat > 0 && feed.lastOutput.distance(to: now) >= config.heartbeat {
            feed.lastOutput = now
            server.fanOut.notice(feed, "HEARTBEAT \(Int(server.stats.started.distance(to: now)))")
        }
    }

    func reply(_ line: String) {
        server.fanOut.reply(feed, line)
    }

    /// Says `message`, then flushes what is queued and closes.
    func quit(message: String) {
        guard !ended else { return }
        reply(message)
        end(reason: message, graceful: true)
    }

    /// Ends the session for the daemon's shutdown as `QUIT` does, with `BYE shutting down`.
    /// Returns a signal that completes once the connection is closed (the server bounds how
    /// long it waits for every client together). The session counts as ended from here on,
    /// so the close we cause is not logged as the client's.
    func closeForShutdown() -> Signal<Void> {
        guard !ended else { return .empty() }
        quit(message: "BYE shutting down")
        return feed.closed
    }

    /// Ends the session: `graceful` lets queued bytes flush first (bounded: a client that
    /// stopped reading cannot keep its connection forever), otherwise it is closed at once.
    func end(reason: String, graceful: Bool = false) {
        guard !ended else { return }
        guard graceful else {
            feed.close(reason)
            return
        }
        feed.drain(reason)
        let feed = self.feed
        finishing = feed.closed.timeout(5, on: Scheduler.main).subscribe(error: { _ in feed.close(reason) })
    }

    /// The client's service is over, however it ended (the feed says it once): stop reading,
    /// release its filter, leave the server.
    private func didEnd(_ end: ClientEnd) {
        logger.info("client \(transport) ended: \(end.reason)")
        reading?.dispose()
        if let filter = end.filter { server.compiler.release(filter) }
        onEnd(self)
    }
}

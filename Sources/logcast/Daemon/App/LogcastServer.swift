import Glibc
import Logging
import ReactiveUV

/// The daemon: sources feed one fan-out, clients are served from it.
///
/// ```
/// sources:  FILE₁.tailChunks, FILE₂.tailChunks, …   ─┐
///           LINE from forwarding logcasts            ├─► LineFanOut ─► ClientFeed ─► client
///           (syslog, NATS: same two ingest calls)   ─┘   (blocks scanned once by the
///                                                          FilterCompiler's FilterSet)
/// TCP.listen(host:port) → accept(transport) → ClientSession  (another transport: accept it)
/// FILE chunks → Forwarder (when --forward)
/// one tick: heartbeats, DROPPED reports, idle cut-off, running out of descriptors
/// SIGINT/SIGTERM → stop accepting, drain every client, exit 0
/// ```
final class LogcastServer: @unchecked Sendable {
    // Main loop only.
    var config: LogcastConfig
    let stats = Stats()
    let logger: Logger
    let fanOut: LineFanOut
    let compiler: FilterCompiler
    var sessions: [ObjectIdentifier: ClientSession] = [:]
    let running = CompoundDisposable()
    var listening: Disposable?
    var forwarder: Forwarder?
    var stopping = false
    var finished = false
    /// Runs before a fatal exit (removes the demo log).
    var beforeFatalExit: () -> Void = {}
    /// Sources still able to produce lines; with none left logcast exits.
    var liveSources = 0
    /// `SINCE` handling and session ends, set by a NATS hub (NatsHub); nil without `--from`.
    var since: ((ClientSession, String) -> Void)?
    var sessionEnded: ((ClientSession) -> Void)?
    /// The hub's `STATS` fields (NatsHub.fields), with `--from`.
    var hubFields: (() -> String)?
    /// Out of descriptors at the last tick (said once per episode).
    var outOfDescriptors = false
    /// The syslog listeners (--syslog-udp/--syslog-tcp), if any: SyslogSource.swift.
    var syslog: SyslogSource?
    /// TLS handshake counters when serving over TLS (--tls-cert): TLSClients.swift.
    var tlsStats: TLSStats?
    /// Authentication and authorization (SecurityOptions): ClientSession+Auth.swift.
    var security = SecurityPolicy()
    /// The Unix socket listener (--listen-unix), if any: UnixClients.swift.
    var unixListening: Disposable?
    /// Plain mode's kept positions (`--state-dir` without `--publish`), opened at start.
    var positions: PlainPositions?
    /// With kept positions, the files wait for the first client (PlainPositions says why).
    var filesWaitingForAClient: [String] = []
    /// The client listener's address once it is bound (`/readyz`).
    var bound: SocketAddress?
    /// `--alert`s (AlertOptions.swift), if any.
    var alerts: AlertEngine?
    /// FILE patterns (GlobSources.swift), started with the files.
    var globs: [GlobFollower] = []
    /// With kept positions, the patterns wait for the first client too.
    var globsWaitingForAClient = false
    /// `--multiline-start`/`--multiline-file` (MultilineOptions.swift), if any.
    var multiline: MultilineRules?
    /// `--journal` (JournalOptions.swift), if any: with kept positions, started by the first client.
    var journal: JournalSource?

    init(config: LogcastConfig, logger: Logger) {
        self.config = config
        self.logger = logger
        fanOut = LineFanOut(stats: stats, queueLimit: config.queueLimit, disconnectSlowClients: config.slowClient == .disconnect)
        compiler = FilterCompiler(timeLimit: config.compileTimeLimit, maxPatternLength: config.maxPatternLength)
        let fanOut = self.fanOut
        compiler.onInstall = { fanOut.filters = $0 }
        self.config.inject = { line in fanOut.ingest(prefix: Array((line.file + ": ").utf8), line: line.text.utf8) }
    }

    /// The `STATS` reply.
    func statsLine() -> String {
        var line = stats.line(now: Scheduler.main.now, patterns: compiler.current?.patterns.count ?? 0, compiles: compiler.compiles)
        var extra = (syslog?.stats.fields ?? "") + (tlsStats?.fields ?? "") + (hubFields?() ?? "")
        extra += alerts?.statsFields ?? ""
        extra += multiline?.counters.statsFields ?? ""
        extra += journal?.counters.statsFields ?? ""
        if !extra.isEmpty { line.insert(contentsOf: extra, at: line.index(before: line.endIndex)) }
        return line
    }

    /// Starts the sources and the listener; `onListening` gets the bound address.
    func start(forward: (host: String, port: Int, buffer: Int)?, onListening given: @escaping (SocketAddress) -> Void) {
        let onListening: (SocketAddress) -> Void = { [weak self] address in
            self?.bound = address
            given(address)
        }
        // First, so that a SIGTERM sent as soon as "listening" is printed is already handled
        // (a drain and exit 0, not the default action's death by signal).
        for signum in [SIGINT, SIGTERM] {
            running += UnixSignal.signal(signum).take(1).subscribeNext { [weak self] n in
                self?.logger.info("signal \(n): shutting down")
                self?.shutdown()
            }
        }
        if let forward {
            let forwarder = Forwarder(host: forward.host, port: forward.port, capacity: forward.buffer, stats: stats, logger: logger)
            self.forwarder = forwarder
            forwarder.start()
        }
        if positions != nil {
            filesWaitingForAClient = config.files
            liveSources += config.files.count
            globsWaitingForAClient = !globs.isEmpty
        } else {
            for path in config.files { startFile(path) }
            startGlobs()
        }

        if let certificate = config.tlsCertificate, let key = config.tlsKey {
            let tlsStats = TLSStats()
            self.tlsStats = tlsStats
            listening = listenTLS(
                certificate: certificate, key: key, clientCA: config.tlsClientCA, tlsStats: tlsStats, onListening: onListening)
        } else {
            listening = SystemdSockets.shared.tcpListen(.listen, host: config.host, port: config.port, backlog: 4096, onListening: onListening)
                .subscribe(
                    next: { [weak self] connection in self?.accept(connection) },
                    error: { [weak self] error in
                        guard let self else { return }
                        self.fail("cannot listen on \(self.config.host):\(self.config.port): \(error)")
                    })
        }

        running += Signal.interval(config.tickInterval, on: Scheduler.main).subscribeNext { [weak self] now in self?.tick(now) }
    }

    /// Follows one FILE into the fan-out (and the forwarder).
    ///
    /// A pattern's file (GlobFollower) starts where the pattern says, sees the follow's
    /// notices, and ends on its own (`ended`) instead of as a FILE does; its follow is the
    /// pattern's to dispose of.
    @discardableResult
    func startFile(
        _ path: String, from start: TailStart = .end, onNotice: ((TailNotice) -> Void)? = nil,
        ended: ((String) -> Void)? = nil
    ) -> Disposable {
        let prefix = Array((path + ": ").utf8)
        let fanOut = self.fanOut
        let forwarder = self.forwarder
        let counters = stats.counters(for: path)
        let source = FileSource(path: path) { [logger] notice in
            counters.noticed(notice)
            // Rotation, truncation, appearing and disappearing are the file's normal life:
            // notice level; bytes that could not be read are a loss: a warning.
            if case .lost = notice { logger.warning("\(notice)") } else { logger.notice("\(notice)") }
            onNotice?(notice)
        }
        if positions == nil && ended == nil { liveSources += 1 }
        // With a start pattern, lines reach the fan-out as events (MultilineAssembler.swift).
        let events = multiline?.assembler(for: path) { fanOut.ingest(prefix: prefix, line: $0) }
        let follow = source.start(
            from: start, checkpoints: positions?.store,
            deliver: { chunk in
                counters.delivered(chunk)
                if let events { events.feed(chunk) } else { fanOut.ingest(prefix: prefix, chunk: chunk) }
                if let forwarder { Self.forEachLine(chunk) { forwarder.send(TaggedLine(file: path, text: $0)) } }
            },
            failed: { [weak self] error in
                if let ended { ended("\(error)") } else { self?.sourceEnded("\(path): \(error)") }
            })
        if ended == nil { running += follow }
        return follow
    }

    /// A source can produce no more lines; when none is left there is nothing to serve.
    func sourceEnded(_ reason: String) {
        logger.error("\(reason); no longer followed")
        liveSources -= 1
        if liveSources == 0 && !stopping { fail("no usable file remains (\(reason))") }
    }

    static func forEachLine(_ chunk: [UInt8], _ body: (String) -> Void) {
        var start = 0
        for (i, byte) in chunk.enumerated() where byte == 10 {
            body(String(decoding: chunk[start..<i], as: UTF8.self))
            start = i + 1
        }
        if start < chunk.count { body(String(decoding: chunk[start...], as: UTF8.self)) }
    }

    /// Serves one client over `transport` (a TCP connection, or any other transport).
    ///
    /// - Parameters:
    ///   - transport: the connection.
    ///   - identity: who the connection proved the client is (a verified certificate's
    ///     subject, a Unix peer's uid), with how; `nil`: a token is asked for if one is
    ///     configured, else the client is `anonymous`.
    func accept(_ transport: ClientTransport, identity: (name: String, how: String)? = nil) {
        guard !stopping else {
            transport.close()
            return
        }
        stats.clients += 1
        logger.debug("client \(transport) connected")
        let session = ClientSession(transport: transport, server: self) { [weak self] ended in
            guard let self else { return }
            self.sessionEnded?(ended)
            if self.sessions.removeValue(forKey: ObjectIdentifier(ended)) != nil { self.stats.clients -= 1 }
        }
        sessions[ObjectIdentifier(session)] = session
        // Who it is is settled before its first command is read: a TLS connection's reads
        // may deliver what the client sent with its handshake as soon as they are subscribed.
        if let identity {
            guard session.admit(identity.name, how: identity.how) else { return }
        } else if security.token != nil {
            session.awaitToken()
        } else {
            guard session.admit("anonymous", how: "no authentication asked for") else { return }
        }
        session.start()
    }

    /// A client was admitted: with kept positions, the files start now (the first time),
    /// after the client's feed exists and is unpaused, so what was written while logcast
    /// was down (read first) reaches it.
    func clientAdmitted() {
        journal?.start()
        guard !filesWaitingForAClient.isEmpty || globsWaitingForAClient, let positions else { return }
        for path in filesWaitingForAClient { startFile(path) }
        filesWaitingForAClient = []
        if globsWaitingForAClient {
            globsWaitingForAClient = false
            startGlobs()
        }
        positions.start()
    }

    func tick(_ now: SchedulerTime) {
        for session in Array(sessions.values) { session.tick(now) }
        checkDescriptors()
    }

    /// Says (once per episode) when the process has no descriptor left for a new client:
    /// the listener then refuses connections while the clients it has are served.
    func checkDescriptors() {
        let probe = dup(2)
        if probe >= 0 {
            close(probe)
            if outOfDescriptors {
                outOfDescriptors = false
                logger.notice("descriptors available again; accepting clients")
            }
            return
        }
        guard errno == EMFILE || errno == ENFILE, !outOfDescriptors else { return }
        outOfDescriptors = true
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        let message = "out of file descriptors with \(stats.clients) clients (RLIMIT_NOFILE \(limit.rlim_cur)): new connections are refused until clients leave; raise the limit (ulimit -n, systemd LimitNOFILE=)"
        logger.error("\(message)")
    }

    /// Stops accepting, flushes what each client has queued, closes, and finishes.
    func shutdown() {
        guard !stopping else { return }
        stopping = true
        // The listeners stay open until the drains end: disposing one closes every
        // connection it accepted at once, which cut each client off before its BYE (and
        // was logged as "client closed"). Meanwhile `accept` closes newcomers.
        forwarder?.stop()
        // A compile in flight must not hold the exit (its watchdog timer kept the loop
        // alive for up to --grep-timeout).
        compiler.stop()
        // Events still waiting for their next line go out before the drain.
        multiline?.stop()
        // Each client is told BYE after what is queued for it, as QUIT does.
        let drains = Array(sessions.values).map { $0.closeForShutdown() }
        // Bounded: a client that never reads cannot hold the exit past the deadline.
        running += Signal.merge(drains).then { Signal<Void>.empty() }
            .timeout(0.8, on: Scheduler.main)
            .subscribe(error: { [weak self] _ in self?.finish() }, completed: { [weak self] in self?.finish() })
    }

    func finish() {
        listening?.dispose()
        unixListening?.dispose()
        running.dispose()
        positions?.stop()
        finished = true
    }

    /// A fatal error: said once on standard error, then exit 1.
    func fail(_ message: String) {
        Output.err("logcast: error: \(message)\n")
        beforeFatalExit()
        exit(1)
    }
}

import Glibc
import Logging
import ReactiveUV

/// The daemon: tails the files, serves their lines, forwards them upstream.
///
/// ```
/// tails   = merge(FILE₁.tail.tag(FILE₁), FILE₂.tail.tag(FILE₂), …)
/// lines   = merge(tails, injected).publish()          ← one shared stream, hot
/// TCP.listen(host:port) → each connection → ClientSession(lines)
/// tails → Forwarder (when --forward)
/// SIGINT/SIGTERM → stop accepting, drain every client, exit 0
/// ```
final class LogcastServer: @unchecked Sendable {
    // Main loop only.
    var config: LogcastConfig
    let stats = Stats()
    let logger: Logger
    let injected = Subject<TaggedLine>()
    var sessions: [ObjectIdentifier: ClientSession] = [:]
    let running = CompoundDisposable()
    var listening: Disposable?
    var forwarder: Forwarder?
    var stopping = false
    var finished = false

    init(config: LogcastConfig, logger: Logger) {
        self.config = config
        self.logger = logger
        let injected = self.injected
        self.config.inject = { injected.sendNext($0) }
    }

    /// Starts tailing and listening; `onListening` gets the bound address.
    func start(forward: (host: String, port: Int, buffer: Int)?, onListening: @escaping (SocketAddress) -> Void) {
        let tails = config.files.map { path in
            File.tail(path, from: .end)
                .map { TaggedLine(file: path, text: $0) }
                .catch { [logger] error in
                    logger.error("tail \(path): \(error)")
                    return Signal.never()
                }
        }
        let local = Signal.merge(tails).publish()
        let lines = Signal.merge([local.signal, injected]).doNext { [stats] _ in stats.linesRead += 1 }.publish()

        if let forward {
            let forwarder = Forwarder(host: forward.host, port: forward.port, capacity: forward.buffer, stats: stats, logger: logger)
            self.forwarder = forwarder
            running += local.signal.subscribeNext { forwarder.send($0) }
            forwarder.start()
        }

        listening = TCP.listen(host: config.host, port: config.port, onListening: onListening)
            .subscribe(
                next: { [weak self] connection in self?.accept(connection, lines: lines.signal) },
                error: { [weak self] error in self?.fail("cannot listen on \(self?.config.host ?? ""):\(self?.config.port ?? 0): \(error)") })
        running += lines.connect()
        running += local.connect()

        for signum in [SIGINT, SIGTERM] {
            running += UnixSignal.signal(signum).take(1).subscribeNext { [weak self] n in
                self?.logger.info("signal \(n): shutting down")
                self?.shutdown()
            }
        }
    }

    func accept(_ connection: TCPConnection, lines: Signal<TaggedLine>) {
        guard !stopping else {
            connection.close()
            return
        }
        stats.clients += 1
        logger.info("client \(connection) connected")
        let session = ClientSession(connection: connection, config: config, stats: stats, logger: logger) { [weak self] ended in
            guard let self else { return }
            if self.sessions.removeValue(forKey: ObjectIdentifier(ended)) != nil { self.stats.clients -= 1 }
        }
        sessions[ObjectIdentifier(session)] = session
        session.start(lines: lines)
    }

    /// Stops accepting, flushes what each client has queued, closes, and finishes.
    func shutdown() {
        guard !stopping else { return }
        stopping = true
        listening?.dispose()
        forwarder?.stop()
        let drains = sessions.values.map { session -> Signal<Void> in
            session.flushes.sendNext(())
            session.subscriptions.dispose()
            return session.drain()
        }
        // Bounded: a client that never reads cannot hold the exit past the deadline.
        running += Signal.merge(drains).then { Signal<Void>.empty() }
            .timeout(0.8, on: Scheduler.main)
            .subscribe(error: { [weak self] _ in self?.finish() }, completed: { [weak self] in self?.finish() })
    }

    func finish() {
        running.dispose()
        finished = true
    }

    func fail(_ message: String) {
        logger.critical("\(message)")
        Output.err("logcast: \(message)\n")
        exit(1)
    }
}

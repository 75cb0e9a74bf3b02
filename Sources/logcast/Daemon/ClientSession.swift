import Logging
import ReactiveUV

/// One connected client, written as signal pipelines.
///
/// ```
/// commands = connection.reads → clientLines → parse
/// filters  = commands.grep → compile            (a BehaviorSubject, starting with "all")
/// output   = filters.map { f in lines.filter(f) }.switchToLatest()   ← the live filter
///            .filter { !paused }
/// replies  = STATS / ERR / HEARTBEAT / DROPPED / BYE lines
/// connection.send(merge(replies, output))       ← one ordered byte stream, bounded queue
/// ```
/// Everything runs on the main loop, so the session's plain fields need no lock.
final class ClientSession: @unchecked Sendable {
    let connection: TCPConnection
    let config: LogcastConfig
    let stats: Stats
    let logger: Logger
    let filters = BehaviorSubject(value: LineFilter.all)
    let replies = Subject<String>()
    /// Sends what the output has coalesced but not yet written (see `coalescedPerLoopTurn`).
    let flushes = Subject<Void>()
    let subscriptions = CompoundDisposable()
    var paused = false
    var lastInput: SchedulerTime
    var lastOutput: SchedulerTime
    var reportedDrops = 0
    var ended = false
    /// The graceful close in progress, kept alive until it finishes.
    var finishing: Disposable?
    /// Called once when the session is over.
    let onEnd: (ClientSession) -> Void

    init(connection: TCPConnection, config: LogcastConfig, stats: Stats, logger: Logger, onEnd: @escaping (ClientSession) -> Void) {
        self.connection = connection
        self.config = config
        self.stats = stats
        self.logger = logger
        self.onEnd = onEnd
        lastInput = Scheduler.main.now
        lastOutput = lastInput
    }

    /// Starts the pipelines over the shared stream of log `lines`.
    func start(lines: Signal<TaggedLine>) {
        connection.backpressure = config.slowClient == .disconnect ? .disconnect : .dropAndCount
        connection.highWaterMark = config.queueLimit

        let output: Signal<String> = filters
            .map { filter in lines.filter { filter.matches($0) } }
            .switchToLatest()
            .filter { [unowned self] _ in !paused }
            .map { [unowned self] line in
                stats.linesSent += 1
                lastOutput = Scheduler.main.now
                return line.wireFormat
            }

        let bytes = Signal.merge([replies, output]).map { Array($0.utf8) }.coalescedPerLoopTurn(flushes: flushes)
        subscriptions += connection.send(bytes).subscribe(
            error: { [weak self] error in self?.end(reason: "write failed: \(error)") })

        subscriptions += connection.reads
            .clientLines(maxLength: config.maxCommandLength)
            .subscribe(
                next: { [weak self] in self?.handle($0) },
                error: { [weak self] error in self?.end(reason: "read failed: \(error)") },
                completed: { [weak self] in self?.end(reason: "client closed") })

        subscriptions += Signal.interval(config.tickInterval, on: Scheduler.main)
            .subscribeNext { [weak self] now in self?.tick(now) }
    }

    func handle(_ input: ClientLine) {
        lastInput = Scheduler.main.now
        guard case .line(let text) = input else {
            reply("ERR \(ProtocolError.lineTooLong(config.maxCommandLength))")
            return
        }
        switch ClientCommand.parse(text) {
        case .failure(.empty): return
        case .failure(let error): reply("ERR \(error)")
        case .success(.grep(let pattern)):
            switch LineFilter.compile(pattern) {
            case .success(let filter):
                filters.sendNext(filter)
                reply("OK GREP \(pattern)")
            case .failure(let error): reply("ERR \(error)")
            }
        case .success(.pause):
            paused = true
            reply("OK PAUSE")
        case .success(.resume):
            paused = false
            reply("OK RESUME")
        case .success(.stats): reply(String(stats.line(now: Scheduler.main.now).dropLast()))
        case .success(.quit): quit(message: "BYE")
        case .success(.line(let file, let text)): config.inject(TaggedLine(file: file, text: text))
        // Commands are handled in arrival order and injection is synchronous, so this reply
        // tells a forwarder that every LINE it sent before the SYNC is in our stream.
        case .success(.sync(let token)): reply("OK SYNC \(token)")
        }
    }

    /// Heartbeats to quiet clients, drop reports, idle cut-off.
    func tick(_ now: SchedulerTime) {
        let dropped = connection.droppedWrites
        if dropped > reportedDrops {
            stats.linesDropped += dropped - reportedDrops
            reportedDrops = dropped
            reply("DROPPED \(dropped)")
        }
        if config.idleTimeout > 0 && lastInput.distance(to: now) >= config.idleTimeout
            && lastOutput.distance(to: now) >= config.idleTimeout {
            quit(message: "BYE idle for \(Int(config.idleTimeout))s")
            return
        }
        if config.heartbeat > 0 && lastOutput.distance(to: now) >= config.heartbeat {
            lastOutput = now
            reply("HEARTBEAT \(Int(stats.started.distance(to: now)))")
        }
    }

    func reply(_ line: String) {
        lastOutput = Scheduler.main.now
        replies.sendNext(line + "\n")
    }

    /// Says `message`, then flushes what is queued and closes.
    func quit(message: String) {
        guard !ended else { return }
        reply(message)
        flushes.sendNext(())
        end(reason: message, graceful: true)
    }

    /// Flushes what is queued and closes (the daemon's shutdown): stops reading and
    /// filtering, lets the queued bytes drain, then half-closes and closes.
    func drain() -> Signal<Void> {
        let connection = self.connection
        return connection.shutdown().catchTo(.empty()).on(terminated: { connection.close() })
    }

    /// Ends the session: stops its pipelines; `graceful` lets queued bytes flush first.
    func end(reason: String, graceful: Bool = false) {
        guard !ended else { return }
        ended = true
        logger.info("client \(connection) ended: \(reason)")
        // Disposing `send` keeps the bytes already queued; the drain flushes them.
        subscriptions.dispose()
        if graceful {
            finishing = drain().subscribe()
        } else {
            connection.close()
        }
        onEnd(self)
    }
}

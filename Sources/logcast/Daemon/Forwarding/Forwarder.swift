import Logging
import ReactiveUV

/// Sends every local line to an upstream logcast (`--forward HOST:PORT`) as `LINE` commands.
///
/// The connection is a signal pipeline: `TCP.connect` retried with exponential backoff, and
/// repeated when an established connection closes. Lines wait in a bounded buffer and
/// leave it only when the upstream has **acknowledged** them: after a burst of `LINE`s the
/// forwarder sends `SYNC <n>` (n counts every line ever released or sent), and the upstream
/// answers `OK SYNC <n>` once it has handled everything before it. A completed write is not
/// enough: when the upstream exits, the kernel still accepts writes into the dead
/// connection until the reset comes back, and lines written then would be lost. Lines not
/// acknowledged when a connection ends are sent again on the next one (at least once; the
/// upstream that could have handled them twice is the one that went away). When the buffer
/// is full the oldest line is dropped and counted.
final class Forwarder: @unchecked Sendable {
    // Main loop only.
    let host: String
    let port: Int
    let capacity: Int
    let stats: Stats
    let logger: Logger
    var buffer: [String] = []
    var head = 0
    /// How many lines left the buffer for good (acknowledged or dropped): the number of
    /// `buffer[head]` in the sequence of all lines, which `SYNC` tokens count in.
    var released = 0
    /// Lines from `head` on that have been written to the current connection, unacknowledged.
    var inFlight = 0
    var connection: TCPConnection?
    var dropped = 0
    /// A `SYNC` is due at the end of this loop turn (one per burst, not one per line).
    var syncScheduled = false
    let subscriptions = CompoundDisposable()

    init(host: String, port: Int, capacity: Int, stats: Stats, logger: Logger) {
        self.host = host
        self.port = port
        self.capacity = max(1, capacity)
        self.stats = stats
        self.logger = logger
    }

    /// Starts connecting (and reconnecting) to the upstream.
    func start() {
        // An empty line every second while connected (the upstream ignores it): a write is
        // what makes a dead connection fail at once (EPIPE or a reset) when the upstream's
        // end of stream did not reach us, so held lines never wait on a silent socket.
        subscriptions += Signal.interval(1, on: Scheduler.main).subscribeNext { [weak self] _ in
            guard let self, let connection = self.connection else { return }
            connection.write("\n").subscribe(error: { [weak self, weak connection] error in
                guard let self, let connection, self.connection === connection else { return }
                self.logger.warning("forward connection failed: \(error); \(self.pending) line(s) held")
                self.connection = nil
                self.inFlight = 0
                connection.close()
            })
        }
        subscriptions += TCP.connect(host: host, port: port)
            .doError { [logger, host, port] error in
                logger.warning("forward to \(host):\(port): \(error); retrying")
            }
            .retry(maxRetries: Int.max, initialDelay: 0.05, multiplier: 2, maxDelay: 2, on: Scheduler.main)
            .concat(Signal.empty().delay(0.05, on: Scheduler.main))
            .repeat()
            .subscribeNext { [weak self] in self?.connected($0) }
    }

    func stop() { subscriptions.dispose() }

    /// How many lines wait for the upstream.
    var pending: Int { buffer.count - head }

    func send(_ line: TaggedLine) {
        if pending >= capacity {
            head += 1
            released += 1
            dropped += 1
            if inFlight > 0 { inFlight -= 1 }
        }
        buffer.append("LINE \(line.file)\t\(line.text)\n")
        compact()
        pump()
    }

    func connected(_ connection: TCPConnection) {
        logger.info("forwarding to \(connection) from \(connection.localAddress.map { "\($0)" } ?? "?")")
        self.connection = connection
        inFlight = 0
        // To the upstream we are a client: PAUSE keeps its own lines from streaming back.
        connection.write("PAUSE\n").subscribe(error: { _ in })
        // The upstream answers SYNCs (and PAUSE); its end of stream or a reset also shows
        // here, so a closed upstream is noticed as soon as possible.
        let lost: (String) -> Void = { [weak self, weak connection, logger] reason in
            logger.debug("forward connection event: \(reason)")
            guard let self, let connection, self.connection === connection else { return }
            self.logger.warning("forward connection \(reason); \(self.pending) line(s) held")
            self.connection = nil
            self.inFlight = 0
            connection.close()
        }
        subscriptions.whileRunning(
            connection.lines(maxLength: 1 << 20),
            next: { [weak self, weak connection] reply in
                guard let self, let connection, self.connection === connection else { return }
                self.received(reply)
            },
            error: { lost("failed: \($0)") }, completed: { lost("closed by the upstream") })
        subscriptions.whileRunning(connection.closed, error: { _ in lost("closed") }, completed: { lost("closed") })
        pump()
    }

    /// Hands every held line not yet in flight to the connection, and asks for an
    /// acknowledgement once this loop turn's burst is written.
    func pump() {
        guard let connection else { return }
        guard inFlight < pending else { return }
        while inFlight < pending {
            let line = buffer[head + inFlight]
            inFlight += 1
            connection.write(line).subscribe(error: { [logger] error in
                logger.debug("forward write failed: \(error)")
            })
        }
        if !syncScheduled {
            syncScheduled = true
            Scheduler.main.schedule { [weak self] in self?.sendSync() }
        }
    }

    /// Asks the upstream to acknowledge every line written so far.
    func sendSync() {
        syncScheduled = false
        guard let connection, inFlight > 0 else { return }
        connection.write("SYNC \(released + inFlight)\n").subscribe(error: { _ in })
    }

    /// A line from the upstream: `OK SYNC <n>` releases the lines before the n-th.
    func received(_ reply: String) {
        guard reply.hasPrefix("OK SYNC "), let token = Int(reply.dropFirst(8)) else { return }
        let acknowledged = min(token - released, inFlight)
        guard acknowledged > 0 else { return }
        head += acknowledged
        released += acknowledged
        inFlight -= acknowledged
        stats.forwarded += acknowledged
        compact()
    }

    func compact() {
        if head > 1024 && head * 2 > buffer.count {
            buffer.removeFirst(head)
            head = 0
        }
    }
}

import Logging
import ReactiveUV

/// Sends every local line to an upstream logcast (`--forward HOST:PORT`) as `LINE` commands.
///
/// The connection is a signal pipeline: `TCP.connect` retried with exponential backoff, and
/// repeated when an established connection closes. Lines wait in a bounded buffer and
/// leave it only when their write has completed, so a line held while the upstream is away
/// (or restarting) is sent once it is back; when the buffer is full the oldest line is
/// dropped and counted.
final class Forwarder: @unchecked Sendable {
    // Main loop only.
    let host: String
    let port: Int
    let capacity: Int
    let stats: Stats
    let logger: Logger
    var buffer: [String] = []
    var head = 0
    /// Lines from `head` on that have been handed to the current connection.
    var inFlight = 0
    var connection: TCPConnection?
    var dropped = 0
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
            dropped += 1
            if inFlight > 0 { inFlight -= 1 }
        }
        buffer.append("LINE \(line.file)\t\(line.text)\n")
        compact()
        pump()
    }

    func connected(_ connection: TCPConnection) {
        logger.info("forwarding to \(connection)")
        self.connection = connection
        inFlight = 0
        // The upstream never talks back, but reading is how a closed upstream shows: its end
        // of stream (a restart) or a reset arrives here at once, before lines are written
        // into a dead socket and counted as sent.
        let lost: (String) -> Void = { [weak self, weak connection, logger] reason in
            logger.debug("forward connection event: \(reason)")
            guard let self, let connection, self.connection === connection else { return }
            self.logger.warning("forward connection \(reason); \(self.pending) line(s) held")
            self.connection = nil
            self.inFlight = 0
            connection.close()
        }
        subscriptions += connection.reads.subscribe(
            error: { lost("failed: \($0)") }, completed: { lost("closed by the upstream") })
        subscriptions += connection.closed.subscribe(error: { _ in lost("closed") }, completed: { lost("closed") })
        pump()
    }

    /// Hands every held line not yet in flight to the connection.
    func pump() {
        guard let connection else { return }
        while inFlight < pending {
            let line = buffer[head + inFlight]
            inFlight += 1
            connection.write(line).subscribe(error: { [logger] error in
                logger.debug("forward write failed: \(error)")
            }, completed: { [weak self, weak connection] in
                guard let self, self.connection === connection, self.inFlight > 0 else { return }
                self.head += 1
                self.inFlight -= 1
                self.stats.forwarded += 1
                self.compact()
            })
        }
    }

    func compact() {
        if head > 1024 && head * 2 > buffer.count {
            buffer.removeFirst(head)
            head = 0
        }
    }
}

import Logging
import ReactiveUV
import ReactiveUVHTTP
import ReactiveUVHTTPS

/// Why the alerts cannot start (a pattern Hyperscan refuses): said once, then exit 1.
struct AlertStartError: Error {
    let message: String
}

/// Every `--alert`'s pattern in one Hyperscan database, matched against each block of lines
/// the fan-out seals; a match becomes an event for that alert's ``AlertSender``.
///
/// ```
/// LineFanOut.seal ──onSeal──► scan (one pass, every alert) ──► AlertSender per alert
///                                                              rate limit → queue → batch
///                                                              → HTTPClient POST (one in flight)
/// ```
///
/// The same engine as `GREP` (``FilterSet``), compiled once at start: an alert's pattern
/// never changes, so nothing is compiled while lines flow. The scan writes its matches into
/// the block (``LineBlock/matches``), which the clients' filters also use, so the clients'
/// matches are put back right after: the alert scan runs once the fan-out's own scan is done
/// and before any client reads the block.
final class AlertEngine: @unchecked Sendable {
    // Main loop only.
    let filters: FilterSet
    /// By pattern id: the id of an alert's pattern is its place in `senders`.
    let senders: [AlertSender]
    /// One client for every alert: keep-alive connections pooled per receiver.
    let client: HTTPClient
    /// Ends the senders' timers and requests and closes the pooled connections (so the
    /// last `run()` of the loop is not kept waiting by a keep-alive connection).
    let lifetime: Disposable

    private init(filters: FilterSet, senders: [AlertSender], client: HTTPClient) {
        self.filters = filters
        self.senders = senders
        self.client = client
        lifetime = Disposable {
            for sender in senders { sender.stop() }
            client.close()
        }
    }

    /// Checks each pattern alone (so an error names its alert), then compiles them all into
    /// one database. Blocks: runs at start, before the loop.
    ///
    /// - Parameters:
    ///   - specs: the alerts, in command-line order.
    ///   - settings: batching, queueing, rate and retry settings.
    ///   - logger: where refused batches and failing receivers are logged.
    /// - Returns: the engine, or why a pattern was refused.
    static func make(_ specs: [AlertSpec], settings: AlertSettings, logger: Logger) -> Result<AlertEngine, AlertStartError> {
        for spec in specs {
            if let refusal = FilterSet.check(spec.pattern) {
                return .failure(AlertStartError(message: "--alert \(spec.name): \(refusal.reply.dropFirst(4)) (in '\(spec.pattern)')"))
            }
        }
        let patterns = specs.enumerated().map { (id: PatternID($0.offset), text: $0.element.pattern) }
        switch FilterSet.compile(patterns) {
        case .failure(let refusal):
            return .failure(AlertStartError(message: "--alert: the patterns together: \(refusal.reply.dropFirst(4))"))
        case .success(let filters):
            // https:// receivers too (TLS through ReactiveUVHTTPS), checked against the system's CAs.
            var options = HTTPClientOptions.https()
            options.connectTimeout = settings.timeout
            options.responseTimeout = settings.timeout
            // A receiver's answer is read only to free the connection: a large one is no use.
            options.maxBodyBytes = 1 << 20
            let client = HTTPClient(options: options)
            let senders = specs.map { AlertSender(spec: $0, settings: settings, client: client, logger: logger) }
            return .success(AlertEngine(filters: filters, senders: senders, client: client))
        }
    }

    /// Matches one sealed block (the fan-out's `onSeal`): each matching line is offered to
    /// its alerts, in the block's order, stamped with the wall clock of this loop turn.
    func scan(_ block: LineBlock) {
        guard block.lineCount > 0 else { return }
        let clients = block.matches
        _ = filters.scan(block)
        let found = block.matches
        block.matches = clients
        guard !found.isEmpty else { return }
        let time = AlertBatch.now()
        for (pattern, lines) in found {
            let sender = senders[Int(pattern)]
            for line in lines {
                // The rate limit first: a runaway pattern costs no strings beyond the limit.
                guard sender.admit() else { continue }
                sender.enqueue(Self.event(block, Int(line), time: time))
            }
        }
    }

    /// The most bytes of a line an event carries: the queue's memory is bounded by
    /// `--alert-queue` times this (webhook receivers cap their payloads well below a
    /// megabyte line anyway).
    static let maxLineBytes = 16 * 1024

    /// Line `i` of `block` as an event: its source (the text before `: `) and its text, cut
    /// at ``maxLineBytes``.
    static func event(_ block: LineBlock, _ i: Int, time: String) -> AlertEvent {
        let start = Int(block.lineStarts[i]), text = Int(block.textStarts[i])
        let end = min(Int(block.ends[i]) - 1, text + maxLineBytes)
        let file = block.bytes[start..<max(start, text - 2)]
        let line = block.bytes[text..<max(text, end)]
        return AlertEvent(file: String(decoding: file, as: UTF8.self), line: String(decoding: line, as: UTF8.self), time: time)
    }

    /// ` alerts_sent=… alerts_dropped=…` for `STATS` (every alert's events together).
    var statsFields: String {
        " alerts_sent=\(senders.reduce(0) { $0 + $1.sent }) alerts_dropped=\(senders.reduce(0) { $0 + $1.dropped.values.reduce(0, +) })"
    }

    /// Adds each alert's counters to a `/metrics` exposition.
    func addMetrics(to out: inout MetricsText) {
        for s in senders {
            let alert = [("alert", s.spec.name)]
            out.add("logcast_alert_events_sent_total", "counter", "Events a receiver acknowledged (2xx).", labels: alert, Double(s.sent))
            out.add("logcast_alert_events_retried_total", "counter", "Events sent again after a failed attempt (refused connection, timeout, 408, 429, 5xx).",
                    labels: alert, Double(s.retried))
            for (reason, n) in s.dropped.sorted(by: { $0.key < $1.key }) {
                out.add("logcast_alert_events_dropped_total", "counter", "Events never delivered, by reason (rate, queue, rejected, expired).",
                        labels: alert + [("reason", reason)], Double(n))
            }
            out.add("logcast_alert_queue_events", "gauge", "Events waiting for a batch (the batch in flight not counted).", labels: alert, Double(s.queued))
        }
    }
}

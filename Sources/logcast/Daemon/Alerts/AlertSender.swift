import Logging
import ReactiveUV
import ReactiveUVHTTP

/// One alert's way to its receiver: a rate limit, a bounded queue, batches, and one POST in
/// flight, retried with exponential back-off.
///
/// ```
/// match ─► admit (token bucket: rate/s, one second's burst; excess dropped "rate")
///       ─► queue (at most queueLimit waiting; past it the oldest dropped "queue")
///       ─► batch (batchSize events, or the oldest waited batchDelay)
///       ─► POST, Idempotency-Key ──2xx──► sent; next batch
///                    │ refused, timeout, 408, 429, 5xx: the same batch again after
///                    │ 0.25 s, 0.5 s, 1 s … 30 s (Retry-After honoured), for retryWindow,
///                    │ then dropped "expired"
///                    └ other 4xx (and 1xx, 3xx): dropped "rejected", logged, not retried
/// ```
///
/// **Nothing lost, nothing twice, in order — while logcast runs.** A batch leaves the
/// queue only when it is made and is forgotten only when a receiver acknowledged it (2xx),
/// refused it for good (4xx) or the retry window ran out (both counted as dropped): while
/// a receiver fails and recovers within the window, every event is delivered. One batch is
/// in flight at a time and retries resend it before anything newer, so the receiver sees
/// the events in the order the lines were read. A batch acknowledged is never sent again;
/// a batch whose answer was lost (a timeout after the receiver took it) is: with the same
/// `Idempotency-Key` and byte-identical body, so a receiver that keeps the keys it took
/// drops the duplicate. (Events queued or in flight when logcast stops are not kept: the
/// queue is memory, not the state directory.)
final class AlertSender {
    // Main loop only.
    let spec: AlertSpec
    let settings: AlertSettings
    let client: HTTPClient
    let logger: Logger

    /// Events a receiver acknowledged.
    private(set) var sent = 0
    /// Events sent again (one count per event per retry).
    private(set) var retried = 0
    /// Events dropped, by reason (every reason present from the start, so `/metrics` shows
    /// zeros rather than nothing).
    private(set) var dropped: [String: Int] = ["rate": 0, "queue": 0, "rejected": 0, "expired": 0]
    /// Events waiting: `queue[head...]`, each with when it was queued.
    private var queue: [(event: AlertEvent, at: SchedulerTime)] = []
    private var head = 0
    var queued: Int { queue.count - head }

    private var tokens: Double
    private var refilled = SchedulerTime.monotonicNow
    /// Dropping for the rate now (logged once per episode).
    private var limiting = false

    /// The batch being delivered: how many attempts failed, when the first was made.
    private var inFlight: (batch: AlertBatch, failures: Int, since: SchedulerTime)?
    private var request: Disposable?
    /// The batch-delay timer, or (with a batch in flight) the back-off timer.
    private var timer: Disposable?
    private var batches = 0
    private var stopped = false

    /// Makes idempotency keys unique across runs: a restarted logcast numbers its batches
    /// from 1 again.
    static let runID = String(UInt64.random(in: 0 ... .max), radix: 16)

    init(spec: AlertSpec, settings: AlertSettings, client: HTTPClient, logger: Logger) {
        self.spec = spec
        self.settings = settings
        self.client = client
        self.logger = logger
        tokens = Double(settings.rate)
    }

    /// Takes one event from the rate's token bucket; `false` (counted) when over the rate.
    func admit() -> Bool {
        let now = SchedulerTime.monotonicNow
        let rate = Double(settings.rate)
        tokens = min(rate, tokens + max(0, refilled.distance(to: now)) * rate)
        refilled = now
        if tokens >= 1 {
            tokens -= 1
            limiting = false
            return true
        }
        dropped["rate", default: 0] += 1
        if !limiting {
            limiting = true
            logger.warning("alert \(spec.name): more than \(settings.rate) matching lines a second; the excess is dropped (counted in /metrics)")
        }
        return false
    }

    /// Queues one event (dropping the oldest past the queue limit) and sends when a batch
    /// is due.
    func enqueue(_ event: AlertEvent) {
        guard !stopped else { return }
        queue.append((event, SchedulerTime.monotonicNow))
        if queued > settings.queueLimit {
            head += 1
            dropped["queue", default: 0] += 1
        }
        if head > 1024 && head * 2 > queue.count {
            queue.removeFirst(head)
            head = 0
        }
        pump()
    }

    /// Sends the next batch if none is in flight and one is due (full, or its oldest event
    /// waited long enough); otherwise waits for it to be due.
    private func pump() {
        guard !stopped, inFlight == nil, queued > 0 else { return }
        let waited = queue[head].at.distance(to: SchedulerTime.monotonicNow)
        if queued >= settings.batchSize || waited >= settings.batchDelay {
            sendBatch()
        } else if timer == nil {
            timer = Scheduler.main.afterDelay(settings.batchDelay - waited) { [weak self] in
                self?.timer = nil
                self?.pump()
            }
        }
    }

    private func sendBatch() {
        timer?.dispose()
        timer = nil
        let count = min(settings.batchSize, queued)
        batches += 1
        let key = "\(Self.runID)-\(spec.name)-\(batches)"
        let batch = AlertBatch(alert: spec.name, key: key, events: queue[head..<(head + count)].map { $0.event })
        head += count
        if head == queue.count {
            queue.removeAll(keepingCapacity: true)
            head = 0
        }
        inFlight = (batch, 0, SchedulerTime.monotonicNow)
        post()
    }

    /// One attempt at the batch in flight.
    private func post() {
        guard !stopped, let batch = inFlight?.batch else { return }
        let headers: HTTPHeaders = [
            "Content-Type": "application/json", "Idempotency-Key": batch.key, "User-Agent": "logcast/\(LogcastCommand.version)",
        ]
        var settled = false
        let attempt = client.request("POST", spec.url, headers: headers, body: batch.body)
            // The answer's body is read (and ignored) so its keep-alive connection is reused.
            .flattenMap { response -> Signal<(Int, String?)> in response.collectedBody.map { _ in (response.status, response.headers["Retry-After"]) } }
            // The client times out the connect and the head; this bounds the body too.
            .timeout(settings.timeout * 2, on: Scheduler.main)
            .subscribe(
                next: { [weak self] answer in
                    settled = true
                    self?.answered(answer.0, retryAfter: answer.1)
                },
                error: { [weak self] error in
                    settled = true
                    if let refused = error as? HTTPClientError, case .invalidURL = refused {
                        // Checked at start (AlertSpec.isHTTPURL); should the client still
                        // refuse it, no retry can succeed.
                        self?.answered(0, retryAfter: nil)
                    } else {
                        self?.retryLater("\(error)", after: nil)
                    }
                })
        if !settled { request = attempt }
    }

    /// What the receiver's status means for the batch in flight.
    private func answered(_ status: Int, retryAfter: String?) {
        request = nil
        guard let flight = inFlight else { return }
        let batch = flight.batch, failures = flight.failures
        switch status {
        case 200..<300:
            sent += batch.count
            if failures > 0 { logger.notice("alert \(spec.name): \(spec.url) took batch \(batch.key) after \(failures) failed attempts") }
            inFlight = nil
            pump()
        case 408, 429, 500..<600:
            // Retry-After in seconds (its date form is not used by webhook receivers).
            retryLater("answered \(status)", after: retryAfter.flatMap { Double($0.filter { $0 != " " }) })
        default:
            dropped["rejected", default: 0] += batch.count
            let why = status == 0 ? "the HTTP client refuses the URL" : "answered \(status)"
            logger.error("alert \(spec.name): \(spec.url) \(why) to batch \(batch.key): \(batch.count) events dropped (only a refused connection, a timeout, 408, 429 and 5xx are retried)")
            inFlight = nil
            pump()
        }
    }

    /// Sends the batch in flight again after the back-off, or drops it when that would pass
    /// the retry window.
    private func retryLater(_ reason: String, after asked: Double?) {
        request = nil
        guard !stopped, var flight = inFlight else { return }
        let backoff = min(settings.maxBackoff, settings.firstBackoff * Double(1 << min(flight.failures, 20)))
        let delay = max(backoff, min(asked ?? 0, settings.maxBackoff))
        if flight.since.distance(to: SchedulerTime.monotonicNow) + delay > settings.retryWindow {
            dropped["expired", default: 0] += flight.batch.count
            logger.error("alert \(spec.name): \(spec.url) failed batch \(flight.batch.key) for \(settings.retryWindow) s (last: \(reason)): \(flight.batch.count) events dropped")
            inFlight = nil
            pump()
            return
        }
        if flight.failures == 0 {
            logger.warning("alert \(spec.name): POST to \(spec.url) failed (\(reason)); retrying with back-off")
        } else {
            logger.debug("alert \(spec.name): POST to \(spec.url) failed again (\(reason)); next try in \(delay) s")
        }
        flight.failures += 1
        inFlight = flight
        timer = Scheduler.main.afterDelay(delay) { [weak self] in
            guard let self, let batch = self.inFlight?.batch else { return }
            self.timer = nil
            self.retried += batch.count
            self.post()
        }
    }

    /// Stops sending: the timer and the request in flight are disposed of.
    func stop() {
        stopped = true
        timer?.dispose()
        timer = nil
        request?.dispose()
        request = nil
    }
}

import CSystemShims
import ReactiveUV

/// What the connections of one server share, on the server's loop thread: the options, the
/// request observer, the open connections, the cached `Date` value and the one timer that
/// enforces every connection's timeouts.
///
/// One sweep timer per server, not one timer per connection re-armed per request: the
/// per-request path then touches no timer at all, and a timeout is honoured within a
/// fraction of itself (the sweep runs every quarter of the shortest timeout, at most 1 s).
final class HTTPServerState: @unchecked Sendable {
    // Thread-safety: confined to `loop`'s thread; only `stop()` is handed over from another
    // thread, through `EventLoop.execute`.
    let options: HTTPServerOptions
    let loop: EventLoop
    /// Where each request read is sent (the `serve` signal's subscriber). Held itself,
    /// not in a closure calling it: a closure loaded from this property was a retain and a
    /// release of its context per request, and one more call.
    let requests: Subscriber<HTTPRequest>
    var connections: [ObjectIdentifier: HTTPServerConnection] = [:]
    /// The `Date` field's value for responses, `HTTPResponseHead.imfDate()` as of the last
    /// sweep: in memory of the server's own, read in place by every response head. An
    /// array property was retained and released around each head written (the head's
    /// writer may call out, so the compiler cannot borrow a class's `var`).
    var date: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: dateBytes, count: dateCount) }
    private let dateBytes = UnsafeMutableRawPointer.allocate(byteCount: 64, alignment: 1)
    private var dateCount = 0
    private var timer: Disposable?
    private var stopped = false
    /// Set by a graceful shutdown: connections close once idle.
    private(set) var draining = false
    private var drainDeadline: UInt64 = 0
    /// Called once a graceful shutdown has closed every connection (stop listening, complete).
    var onDrained: () -> Void = {}
    /// The most body bytes any connection held for a request nobody had subscribed to
    /// (tests assert the backpressure bound on it).
    var maxBodyBytesHeld = 0
    /// Where every connection writes its batch of byte responses before handing it to the
    /// transport (see ``HTTPResponseBuffer`` for why one per server is enough).
    @exclusivity(unchecked) var responseBuffer = HTTPResponseBuffer()
    /// The start of the last head written from an application's constant fields, for the
    /// next like it (see ``HTTPResponseHead/PrefixCache``).
    @exclusivity(unchecked) var headPrefix = HTTPResponseHead.PrefixCache()
    /// Changes whenever ``date`` does, so that a kept head start is not used with an old `Date`.
    private(set) var dateGeneration = 0

    init(options: HTTPServerOptions, loop: EventLoop, requests: Subscriber<HTTPRequest>) {
        self.options = options
        self.loop = loop
        self.requests = requests
        setDate()
        scheduleSweep()
    }

    deinit {
        responseBuffer.free()
        headPrefix.free()
        dateBytes.deallocate()
    }

    private func setDate() {
        let now = HTTPResponseHead.imfDate()
        dateCount = min(now.count, 64)
        now.withUnsafeBytes { dateBytes.copyMemory(from: $0.baseAddress!, byteCount: dateCount) }
        dateGeneration += 1
    }

    private var sweepInterval: Double {
        min(1.0, max(0.02, min(options.headTimeout, options.idleTimeout, options.lingerTimeout) / 4))
    }

    private func scheduleSweep() {
        guard !stopped else { return }
        timer = loop.scheduler.afterDelay(sweepInterval) { [weak self] in self?.sweep() }
    }

    private func sweep() {
        setDate()
        let now = csys_monotonic_ns()
        for connection in Array(connections.values) {
            connection.checkTimeouts(now: now)
            if draining && (connection.isIdle || now > drainDeadline) { connection.close() }
        }
        if draining { checkDrained() }
        scheduleSweep()
    }

    /// Starts a graceful shutdown (see ``HTTPServerOptions/shutdown``).
    func drain() {
        guard !draining, !stopped else { return }
        draining = true
        drainDeadline = csys_monotonic_ns() + UInt64(max(0, options.shutdownTimeout) * 1e9)
        for connection in Array(connections.values) {
            if connection.isIdle { connection.close() } else { connection.endAfterAnswers() }
        }
        checkDrained()
    }

    /// Ends the shutdown once no connection is left.
    func checkDrained() {
        guard draining, !stopped, connections.isEmpty else { return }
        let done = onDrained
        onDrained = {}
        done()
    }

    /// Closes every connection now and stops the timer (the listen subscription's disposal).
    func stop() {
        stopped = true
        timer?.dispose()
        timer = nil
        for connection in Array(connections.values) { connection.close() }
    }
}

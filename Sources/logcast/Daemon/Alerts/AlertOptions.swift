import ArgumentParser
import ReactiveUV

/// `--alert NAME=REGEX,URL` and its tuning options: lines matching REGEX are posted to URL as
/// JSON (``AlertEngine``, ``AlertSender``). An option group of its own, so LogcastCommand only
/// names it and starts it.
struct AlertOptions: ParsableArguments {
    @Option(name: .customLong("alert"), help: ArgumentHelp(
        "Post lines matching REGEX (a GREP pattern, compiled at start) to URL (http:// or https://) as JSON {\"alert\":NAME,\"events\":[{\"file\",\"line\",\"time\"}...]}, batched, one POST in flight, retried with back-off under the same Idempotency-Key; counted in /metrics. Repeatable. NAME is letters, digits, '_', '-' or '.'; the URL is what follows the last comma.",
        valueName: "name=regex,url"))
    var alerts: [String] = []

    @Option(name: .customLong("alert-batch"), help: ArgumentHelp("Most events in one POST (1...10000).", valueName: "events"))
    var batch: Int = AlertSettings.defaults.batchSize

    @Option(name: .customLong("alert-delay"), help: ArgumentHelp("Milliseconds the first event of a batch may wait for more before the batch is sent (0...600000).", valueName: "ms"))
    var delay: Int = Int(AlertSettings.defaults.batchDelay * 1000)

    @Option(name: .customLong("alert-queue"), help: ArgumentHelp("Events an alert holds while its receiver is slow or away; past it the oldest are dropped (counted) (1...10000000).", valueName: "events"))
    var queue: Int = AlertSettings.defaults.queueLimit

    @Option(name: .customLong("alert-rate"), help: ArgumentHelp("Events per second an alert takes (bursts up to one second's worth); the excess is dropped and counted (1...1000000).", valueName: "events"))
    var rate: Int = AlertSettings.defaults.rate

    @Option(name: .customLong("alert-timeout"), help: ArgumentHelp("Seconds to connect and to get an answer before a POST is retried (more than 0).", valueName: "seconds"))
    var timeout: Double = AlertSettings.defaults.timeout

    @Option(name: .customLong("alert-retry-for"), help: ArgumentHelp("Seconds a batch is retried (back-off from 0.25 s, doubling, at most 30 s) before it is dropped (counted) (more than 0).", valueName: "seconds"))
    var retryFor: Double = AlertSettings.defaults.retryWindow

    func validate() throws {
        var seen = Set<String>()
        for spec in alerts {
            let name = try AlertSpec(parsing: spec).name
            guard seen.insert(name).inserted else { throw ValidationError("--alert: the name '\(name)' is given twice") }
        }
        guard (1...10_000).contains(batch) else { throw ValidationError("--alert-batch must be in 1...10000 (events), got \(batch)") }
        guard (0...600_000).contains(delay) else { throw ValidationError("--alert-delay must be in 0...600000 (ms), got \(delay)") }
        guard (1...10_000_000).contains(queue) else { throw ValidationError("--alert-queue must be in 1...10000000 (events), got \(queue)") }
        guard (1...1_000_000).contains(rate) else { throw ValidationError("--alert-rate must be in 1...1000000 (events per second), got \(rate)") }
        try LogcastCommand.check(timeout, "--alert-timeout", moreThan: 0)
        try LogcastCommand.check(retryFor, "--alert-retry-for", moreThan: 0)
    }

    /// Compiles the alerts' patterns (once, now: a bad one is an error at start, exit 1) and
    /// hooks the engine to the server's fan-out, if any `--alert` was given.
    ///
    /// - Parameters:
    ///   - server: the daemon whose lines are matched (the engine ends with its `running`).
    ///   - publishing: logcast is a NATS edge (`--publish`), whose lines go to JetStream and
    ///     never pass the fan-out: refused, so an alert cannot silently never fire.
    /// - Throws: `ExitCode.failure` once the error is on standard error.
    func start(server: LogcastServer, publishing: Bool) throws {
        guard !alerts.isEmpty else { return }
        if publishing {
            Output.err("logcast: error: --alert is not supported with --publish yet (an edge's lines go to NATS, not through the matcher); put the alert on the hub (--from)\n")
            throw ExitCode.failure
        }
        let specs = try alerts.map { try AlertSpec(parsing: $0) }
        let settings = AlertSettings(batchSize: batch, batchDelay: Double(delay) / 1000, queueLimit: queue, rate: rate,
                                     timeout: timeout, retryWindow: retryFor)
        switch AlertEngine.make(specs, settings: settings, logger: server.logger) {
        case .failure(let error):
            Output.err("logcast: error: \(error.message)\n")
            throw ExitCode.failure
        case .success(let engine):
            server.alerts = engine
            server.fanOut.onSeal = { engine.scan($0) }
            server.running += engine.lifetime
            for spec in specs { Output.out("logcast: alert \(spec.name) posts lines matching \(spec.pattern) to \(spec.url)\n") }
        }
    }
}

/// One `--alert NAME=REGEX,URL`, split: NAME up to the first `=`, the URL after the last
/// comma (a pattern often holds commas and `=`, as in `a{2,3}` or `user=root`; a URL
/// rarely holds a comma, and can write it `%2C`), REGEX between.
struct AlertSpec: Equatable {
    let name: String
    let pattern: String
    let url: String

    init(parsing text: String) throws {
        let usage = "--alert must be NAME=REGEX,URL (for example errors=ERROR|FATAL,http://127.0.0.1:9000/hook), got '\(text)'"
        guard let eq = text.firstIndex(of: "="), let comma = text.lastIndex(of: ","), eq < comma else { throw ValidationError(usage) }
        name = String(text[..<eq])
        pattern = String(text[text.index(after: eq)..<comma])
        url = String(text[text.index(after: comma)...])
        guard !name.isEmpty, name.utf8.count <= 64,
              name.unicodeScalars.allSatisfy({ ("0"..."9").contains($0) || ("a"..."z").contains($0) || ("A"..."Z").contains($0) || "_-.".unicodeScalars.contains($0) })
        else {
            throw ValidationError("--alert: the name '\(name)' must be 1 to 64 letters, digits, '_', '-' or '.' (in '\(text)')")
        }
        guard !pattern.isEmpty else { throw ValidationError("--alert \(name): the pattern is empty (in '\(text)')") }
        guard Self.isHTTPURL(url) else {
            throw ValidationError("--alert \(name): '\(url)' is not an http:// or https:// URL with a host and a port in 1...65535 (the URL follows the last comma)")
        }
    }

    /// Whether the HTTP client takes `url` (checked as its URL parser does, so a URL it
    /// would refuse is an error at start, not a batch retried until it expires): `http://`
    /// or `https://`, a host (an IPv6 one in brackets), a port in 1...65535 if any, no
    /// space or control character.
    static func isHTTPURL(_ url: String) -> Bool {
        let lower = url.lowercased()
        let rest: Substring
        if lower.hasPrefix("http://") { rest = url.dropFirst(7) } else if lower.hasPrefix("https://") { rest = url.dropFirst(8) } else { return false }
        guard !url.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7f }) else { return false }
        var authority = rest[..<(rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex)]
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        var host = authority
        var port: Substring?
        if authority.first == "[" {
            guard let close = authority.firstIndex(of: "]") else { return false }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.first == ":" else { return false }
                port = after.dropFirst()
            }
        } else if let colon = authority.lastIndex(of: ":") {
            host = authority[..<colon]
            port = authority[authority.index(after: colon)...]
        }
        if let port { guard let p = Int(port), (1...65535).contains(p) else { return false } }
        return !host.isEmpty
    }
}

/// How every alert batches, queues, limits and retries (the `--alert-*` options).
struct AlertSettings: Sendable {
    /// Most events in one POST.
    var batchSize: Int
    /// Seconds the oldest waiting event may wait for a fuller batch.
    var batchDelay: Double
    /// Most events waiting per alert (the batch in flight not counted).
    var queueLimit: Int
    /// Events per second per alert (a token bucket holding one second's worth).
    var rate: Int
    /// Seconds to connect and to be answered.
    var timeout: Double
    /// Seconds a batch is retried before it is dropped.
    var retryWindow: Double
    /// The first retry's delay; each next one doubles, up to ``maxBackoff``.
    var firstBackoff = 0.25
    var maxBackoff = 30.0

    /// The defaults: 100 events or 500 ms, whichever first — a burst of matches is one POST,
    /// a lone match waits half a second at most; 10,000 events queued (a few MB of
    /// ordinary lines; 160 MB if every one is a 16 KiB line, the most an event carries);
    /// 100 events a second (a runaway pattern cannot flood a chat webhook); 10 s to answer;
    /// 5 minutes of retries (a receiver restarting or redeployed is back well within it).
    static let defaults = AlertSettings(batchSize: 100, batchDelay: 0.5, queueLimit: 10_000, rate: 100, timeout: 10, retryWindow: 300)
}

import ArgumentParser
import ReactiveUV
import ReactiveUVHTTP
import ReactiveUVNATS

/// logcast's HTTP endpoint (`--http HOST:PORT`): Prometheus metrics at `/metrics`,
/// liveness at `/healthz`, readiness at `/readyz`, the live web view at `/` (WebView.swift). An option group of its own, so
/// LogcastCommand only names it and starts it.
struct HTTPOptions: ParsableArguments {
    @Option(help: ArgumentHelp(
        "Serve GET /metrics (Prometheus), /healthz, /readyz and a live web view at / (lines over a WebSocket at /ws: filter, pause, file chooser; embedded, no network) on HOST:PORT (port 0 picks a free one). A non-loopback address follows --listen's protected mode; with --auth-token-file, /metrics asks for 'Authorization: Bearer <token>', the web view for /?token=<token> once (then a cookie), and the health endpoints stay open for probes.",
        valueName: "host:port"))
    var http: String?

    func validate() throws {
        if let http { _ = try LogcastCommand.parseAddress(http, option: "--http") }
    }

    /// Starts the endpoint, if `--http` was given: refused at start (exit 1) on a
    /// non-loopback address with no token and no `--allow-unauthenticated`.
    ///
    /// - Parameters:
    ///   - server: the daemon whose state is served (the endpoint ends with its `running`).
    ///   - security: the security options (token file, `--allow-unauthenticated`).
    ///   - nats: the NATS edge and hub, for their state and readiness.
    /// - Throws: `ExitCode.failure` once the error is on standard error.
    func start(server: LogcastServer, security: SecurityOptions, nats: NatsRunning) throws {
        guard let http else { return }
        let address = try LogcastCommand.parseAddress(http, option: "--http")
        if !SecurityOptions.isLoopback(address.host) && security.authTokenFile == nil && !security.allowUnauthenticated {
            Output.err("""
                logcast: error: --http \(address.host) is not a loopback address and no --auth-token-file is configured: \
                anyone who reaches the port would read the metrics (file paths, client counts) and every log line in the web view. Use --auth-token-file, \
                serve --http on 127.0.0.1, or pass --allow-unauthenticated.

                """)
            throw ExitCode.failure
        }
        let token = server.security.token
        let endpoint = MetricsEndpoint(server: server, nats: nats, token: token)
        server.running += SystemdSockets.shared.http(host: address.host, port: address.port, onListening: { bound in
            endpoint.bound = true
            Output.out("logcast: http on \(bound); metrics at http://\(bound)/metrics\n")
        })
        .subscribe(
            next: { request in endpoint.answer(request) },
            error: { error in server.fail("cannot serve --http on \(address.host):\(address.port): \(error)") })
    }
}

/// Answers `/metrics`, `/healthz` and `/readyz` from the daemon's state (main loop only).
final class MetricsEndpoint: @unchecked Sendable {
    let server: LogcastServer
    let nats: NatsRunning
    let token: [UInt8]?
    /// The HTTP listener is bound.
    var bound = false

    init(server: LogcastServer, nats: NatsRunning, token: [UInt8]?) {
        self.server = server
        self.nats = nats
        self.token = token
    }

    /// What a request asks for.
    enum Endpoint { case health, readiness, metrics }

    /// The routes, for any method (a wrong one is answered 405, not 404).
    static let routes: [(HTTPRoute, Endpoint)] = [
        (HTTPRoute(nil, "/healthz"), .health), (HTTPRoute(nil, "/readyz"), .readiness), (HTTPRoute(nil, "/metrics"), .metrics),
    ]

    /// Answers one request.
    func answer(_ request: HTTPRequest) {
        // The live web view (`/`, `/ws`, its script and style): WebView.swift.
        if WebView.answer(request, server: server) { return }
        guard let endpoint = Self.routes.first(where: { $0.0.match(request) != nil })?.1 else {
            _ = request.respond(status: 404, text: "not found: /, /ws, /metrics, /healthz and /readyz are served\n")
            return
        }
        guard request.method == "GET" || request.method == "HEAD" else {
            _ = request.respond(status: 405, headers: ["Allow": "GET, HEAD"], text: "only GET and HEAD\n")
            return
        }
        switch endpoint {
        case .health:
            // Answered at all means the loop runs: that is what liveness asks.
            _ = request.respond(headers: ["Content-Type": "application/json"], text: #"{"status":"ok"}"# + "\n")
        case .readiness:
            let problems = notReady()
            if problems.isEmpty {
                _ = request.respond(headers: ["Content-Type": "application/json"], text: #"{"status":"ready"}"# + "\n")
            } else {
                let reasons = problems.map { "\"\(Self.jsonEscape($0))\"" }.joined(separator: ",")
                _ = request.respond(status: 503, headers: ["Content-Type": "application/json"],
                                    text: #"{"status":"not ready","reasons":["# + reasons + "]}\n")
            }
        case .metrics:
            if let token {
                let given = request.headers["Authorization"] ?? ""
                let prefix = "Bearer "
                guard given.hasPrefix(prefix),
                      ClientAuth.constantTimeEquals(Array(given.utf8.dropFirst(prefix.utf8.count)), token) else {
                    _ = request.respond(status: 401, headers: ["WWW-Authenticate": #"Bearer realm="logcast""#], text: "authorization required\n")
                    return
                }
            }
            _ = request.respond(headers: ["Content-Type": MetricsText.contentType], text: metrics())
        }
    }

    /// Why the daemon is not ready (empty: ready): the client listener not bound yet, a
    /// file neither opened nor waited on, NATS configured but not connected.
    func notReady() -> [String] {
        var problems: [String] = []
        if server.bound == nil { problems.append("the client listener is not listening yet") }
        if server.stopping { problems.append("shutting down") }
        let started = Set(server.stats.files.map { $0.path })
        for path in server.config.files where !started.contains(path) && !server.filesWaitingForAClient.contains(path) {
            problems.append("\(path) is not followed")
        }
        if let edge = nats.edge, !Self.connected(edge) { problems.append("NATS edge (--publish) is not connected to JetStream") }
        if let hub = nats.hub, !Self.connected(hub) { problems.append("NATS hub (--from) is not connected to JetStream") }
        return problems
    }

    /// Whether the edge is connected now and has its stream (it publishes).
    static func connected(_ edge: NatsEdge) -> Bool { edge.ready && edge.connection?.isConnected == true }

    /// Whether the hub is connected now and has JetStream (it reads the stream).
    static func connected(_ hub: NatsHub) -> Bool { hub.js != nil && hub.connection?.isConnected == true }

    /// The exposition.
    func metrics() -> String {
        var out = MetricsText()
        let stats = server.stats
        // Every STATS field, under Prometheus's names (counters end in _total; the table
        // gives each field its name, type and help). A field STATS gains later and the
        // table lacks still shows, as a gauge named after it.
        for (key, value) in Self.statsFields(server.statsLine()) {
            let known = Self.statsNames[key]
            out.add(known?.name ?? "logcast_\(key)", known?.type ?? "gauge", known?.help ?? "STATS field \(key).", value)
        }
        out.add("logcast_filter_scans_total", "counter", "Blocks of lines scanned with the filters.", Double(stats.scans))
        out.add("logcast_filter_scan_seconds_total", "counter", "Seconds spent scanning blocks of lines with the filters.",
                Double(stats.scanNanoseconds) / 1e9)
        var classes: [String: Int] = ["anonymous": 0, "token": 0, "certificate": 0, "unix": 0, "unauthenticated": 0]
        for session in server.sessions.values { classes[Self.clientClass(session.identity), default: 0] += 1 }
        for (name, count) in classes.sorted(by: { $0.key < $1.key }) {
            out.add("logcast_clients_connected", "gauge", "Clients connected, by how they were admitted.",
                    labels: [("class", name)], Double(count))
        }
        for (path, c) in stats.files {
            let file = [("file", path)]
            out.add("logcast_file_lines_read_total", "counter", "Lines read from the file.", labels: file, Double(c.lines))
            out.add("logcast_file_read_bytes_total", "counter", "Bytes read from the file.", labels: file, Double(c.bytes))
            out.add("logcast_file_rotations_total", "counter", "Times another file took the path (rotation).", labels: file, Double(c.rotations))
            out.add("logcast_file_truncations_total", "counter", "Times the file got shorter than what was read.", labels: file, Double(c.truncations))
            out.add("logcast_file_waiting", "gauge", "1 while nothing readable is at the path (waited for).", labels: file, c.waiting ? 1 : 0)
            for (reason, bytes) in c.lostBytes.sorted(by: { $0.key < $1.key }) {
                out.add("logcast_file_lost_bytes_total", "counter", "Bytes never delivered, by reason.",
                        labels: file + [("reason", reason)], Double(bytes))
            }
            for (reason, n) in c.lostEvents.sorted(by: { $0.key < $1.key }) {
                out.add("logcast_file_losses_total", "counter", "Losses (a skipped long line, a truncation's unread bytes), by reason.",
                        labels: file + [("reason", reason)], Double(n))
            }
        }
        if let edge = nats.edge {
            out.add("logcast_nats_edge_connected", "gauge", "1 while the edge (--publish) is connected to JetStream.", Self.connected(edge) ? 1 : 0)
            out.add("logcast_nats_edge_acknowledged_messages_total", "counter", "Messages JetStream acknowledged.", Double(edge.messagesAcknowledged))
            out.add("logcast_nats_edge_duplicate_messages_total", "counter", "Messages JetStream said it already had.", Double(edge.duplicates))
            out.add("logcast_nats_edge_late_acknowledgements_total", "counter",
                    "Acknowledgements of a batch's earlier send, counted after it was sent again (a slow link).", Double(edge.lateAcknowledgements))
            out.add("logcast_nats_edge_out_of_order_total", "counter",
                    "Batches stored below an earlier batch of their file that the stream still holds.", Double(edge.outOfOrder))
            out.add("logcast_nats_edge_sequence_rewinds_total", "counter",
                    "Times a file's stream sequence went back: the earlier batch no longer where it was acknowledged.",
                    Double(edge.sequenceRewinds))
        }
        if let hub = nats.hub {
            out.add("logcast_nats_hub_connected", "gauge", "1 while the hub (--from) is connected to JetStream.", Self.connected(hub) ? 1 : 0)
            out.add("logcast_nats_hub_messages_total", "counter", "Messages the hub received from the stream.", Double(hub.messages))
        }
        out.add("logcast_ready", "gauge", "1 when /readyz answers 200.", notReady().isEmpty ? 1 : 0)
        server.alerts?.addMetrics(to: &out)
        ProcessMetrics.add(to: &out)
        return out.text
    }

    /// The `key=value` fields of a `STATS` line with a numeric value (`uptime=12s` is 12).
    static func statsFields(_ line: String) -> [(String, Double)] {
        line.split(whereSeparator: { $0 == " " || $0 == "\n" }).dropFirst().compactMap { field in
            guard let eq = field.firstIndex(of: "=") else { return nil }
            var value = field[field.index(after: eq)...]
            if value.hasSuffix("s") { value = value.dropLast() }
            return Double(value).map { (String(field[..<eq]), $0) }
        }
    }

    /// The metric of each `STATS` field.
    static let statsNames: [String: (name: String, type: String, help: String)] = [
        "lines_read": ("logcast_lines_read_total", "counter", "Lines read from every source."),
        "lines_sent": ("logcast_lines_sent_total", "counter", "Lines sent to clients."),
        "lines_dropped": ("logcast_lines_dropped_total", "counter", "Lines clients missed by falling more than the queue limit behind."),
        "clients": ("logcast_clients", "gauge", "Clients connected."),
        "forwarded": ("logcast_lines_forwarded_total", "counter", "Lines sent to the --forward upstream."),
        "patterns": ("logcast_filter_patterns", "gauge", "GREP patterns in the installed filter database."),
        "compiles": ("logcast_filter_compiles_total", "counter", "Filter databases compiled."),
        "split_scans": ("logcast_filter_split_scans_total", "counter", "Block scans shared with the helper thread."),
        "refused": ("logcast_clients_refused_total", "counter", "Clients refused (a wrong or missing token, an identity not in the access file)."),
        "uptime": ("logcast_uptime_seconds", "gauge", "Seconds since logcast started."),
        "tls_handshake_failures": ("logcast_tls_handshake_failures_total", "counter", "TLS handshakes with clients that failed."),
        "syslog_messages": ("logcast_syslog_messages_total", "counter", "Syslog messages received."),
        "syslog_malformed": ("logcast_syslog_malformed_total", "counter", "Syslog messages that were not RFC 5424 or RFC 3164."),
        "syslog_bad_datagrams": ("logcast_syslog_bad_datagrams_total", "counter", "Syslog datagrams refused or truncated."),
        "syslog_tcp_senders": ("logcast_syslog_tcp_senders", "gauge", "Syslog TCP senders connected."),
        "replay_waits": ("logcast_nats_hub_replay_waits_total", "counter", "Times a replay waited for its client."),
        "replay_restarts": ("logcast_nats_hub_replay_restarts_total", "counter", "Times a replay's consumer was let go after a long wait."),
        "replay_retries": ("logcast_nats_hub_replay_retries_total", "counter", "Times a failed replay consumer was made again."),
        "consumer_restarts": ("logcast_nats_hub_consumer_restarts_total", "counter", "Times the hub's live consumer went silent while the stream held more and was made again."),
        "alerts_sent": ("logcast_alerts_sent_total", "counter", "Alert events acknowledged by their receivers, every alert together."),
        "alerts_dropped": ("logcast_alerts_dropped_total", "counter", "Alert events dropped, every alert and reason together."),
        "multiline_events": ("logcast_multiline_events_total", "counter", "Events made of joined lines (--multiline-start), one-line events included."),
        "multiline_cuts": ("logcast_multiline_cuts_total", "counter", "Events cut at --multiline-max-bytes (the rest went on as a new event)."),
        "multiline_timeouts": ("logcast_multiline_timeouts_total", "counter", "Events sent by --multiline-timeout (their file was quiet)."),
        "journal_entries": ("logcast_journal_entries_total", "counter", "Entries read from the systemd journal (--journal), served or lost."),
        "journal_lost": ("logcast_journal_lost_entries_total", "counter", "Journal entries left out: their line was over the 1 MiB limit."),
        "journal_shipped": ("logcast_journal_shipped_entries_total", "counter", "Journal entries JetStream acknowledged (an edge with --journal), resends included."),
        "journal_shipped_duplicates": ("logcast_journal_shipped_duplicates_total", "counter", "Journal entries JetStream said it already held (resends after a restart or a failure)."),
        "journal_cursor_resets": ("logcast_journal_cursor_resets_total", "counter", "Saved journal cursors that could not be resumed from (corrupt, or their entry gone): started at the end instead."),
    ]

    /// A client's class, from its identity.
    static func clientClass(_ identity: String?) -> String {
        guard let identity else { return "unauthenticated" }
        if identity == "anonymous" || identity == "token" { return identity }
        if identity.hasPrefix("cert:") { return "certificate" }
        if identity.hasPrefix("uid:") { return "unix" }
        return "other"
    }

    /// A string as the inside of a JSON string.
    static func jsonEscape(_ text: String) -> String {
        var out = ""
        for c in text.unicodeScalars {
            switch c {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            default:
                if c.value < 0x20 { out += "\\u00" + (c.value < 0x10 ? "0" : "") + String(c.value, radix: 16) } else { out.unicodeScalars.append(c) }
            }
        }
        return out
    }
}

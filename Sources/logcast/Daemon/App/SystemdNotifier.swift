import CSystemd
import Glibc
import Logging
import ReactiveUV

// `Type=notify` under systemd, through libsystemd's sd_notify:
//
//     start ──► every listener listening, every FILE opened or waited on ──► READY=1 + STATUS=
//     every second: the one-line state changed ─────────────────────────────► STATUS=
//     every WATCHDOG_USEC/2, from a timer on the main loop ──────────────────► WATCHDOG=1
//     SIGTERM / SIGINT ───────────────────────────────────────────────────────► STOPPING=1 + STATUS=
//
// The watchdog pings come from the loop that serves everything else, so a loop that is
// stuck (or a process that is stopped) stops pinging and systemd restarts it after
// `WatchdogSec=`: that is the point of the watchdog, so they must not come from a thread of
// their own. Without `NOTIFY_SOCKET` in the environment (not under systemd) nothing here
// runs at all: no timer, no signal watch, no message.
//
// sd_notify sends one datagram with a blocking sendmsg: systemd reads its notification
// socket all the time, so that never waits in practice (a test that binds the socket must
// read it continuously too).

/// Tells systemd (the `NOTIFY_SOCKET`) logcast's readiness, state, liveness and stop.
final class SystemdNotifier: @unchecked Sendable {
    // Thread-safety: main loop only (started from LogcastCommand.run; its timers and
    // signal watches run on the main loop).
    let server: LogcastServer
    let nats: NatsRunning
    let sockets: SystemdSockets
    let logger: Logger
    /// READY=1 was sent.
    private(set) var ready = false
    /// STOPPING=1 was sent.
    private(set) var stopping = false
    /// The last STATUS= sent.
    private var lastStatus = ""
    /// A failed sd_notify was logged (once: the socket's trouble is not news each second).
    private var failureLogged = false

    init(server: LogcastServer, nats: NatsRunning, sockets: SystemdSockets, logger: Logger) {
        self.server = server
        self.nats = nats
        self.sockets = sockets
        self.logger = logger
    }

    /// Starts notifying when logcast runs under systemd (`NOTIFY_SOCKET` is set); does
    /// nothing otherwise. Call after every listener and source was started: readiness is
    /// checked from then on. Everything it starts ends with the server's `running`.
    ///
    /// - Parameters:
    ///   - server: the daemon (its listeners, files, clients).
    ///   - nats: the NATS edge and hub, for the status line.
    ///   - sockets: the listeners started through ``SystemdSockets`` (their readiness).
    ///   - logger: where a failing notification socket is logged.
    /// - Throws: ``SystemdSocketError`` when `WATCHDOG_USEC` is set but unusable.
    static func start(server: LogcastServer, nats: NatsRunning, sockets: SystemdSockets, logger: Logger) throws {
        guard getenv("NOTIFY_SOCKET") != nil else { return }
        let notifier = SystemdNotifier(server: server, nats: nats, sockets: sockets, logger: logger)
        try notifier.begin()
    }

    private func begin() throws {
        var usec: UInt = 0  // uint64_t, `unsigned long` on LP64 (CSystemd.h)
        let watchdog = sd_watchdog_enabled(0, &usec)
        if watchdog < 0 {
            throw SystemdSocketError("WATCHDOG_USEC is set but unusable (\(String(cString: strerror(-watchdog)))): a positive number of microseconds")
        }
        if watchdog > 0 && usec > 0 {
            // Half the timeout, as sd_watchdog_enabled(3) advises: one late ping is not a restart.
            let interval = Double(usec) / 2_000_000
            logger.debug("systemd watchdog: WATCHDOG=1 every \(interval) s")
            server.running += Signal.interval(interval, on: Scheduler.main).subscribeNext { [self] _ in notify("WATCHDOG=1") }
        }
        for signum in [SIGTERM, SIGINT] {
            server.running += UnixSignal.signal(signum).take(1).subscribeNext { [self] _ in stopped() }
        }
        // The server's own watch of the signal was made first and may be told first: with
        // no client to drain it finishes at once, disposing `running` (and the watches
        // above) before they hear of the signal. Finishing is the stop, so it says so too.
        server.running += Disposable { [self] in stopped() }
        // Readiness is checked when a listener starts listening and each second (a TLS
        // listener on a name is not one of SystemdSockets' listeners); the status line
        // each second, sent only when it changed: at most one STATUS= a second.
        sockets.onListening = { [weak self] in self?.checkReady() }
        server.running += Signal.interval(1, on: Scheduler.main).subscribeNext { [self] _ in
            if !ready {
                checkReady()
            } else if !stopping {
                let now = status()
                if now != lastStatus { send(status: now) }
            }
        }
        checkReady()
    }

    /// Why logcast is not ready yet (nil: ready): a listener not listening, a FILE neither
    /// opened nor waited on.
    func notReady() -> String? {
        if server.bound == nil { return "the client listener is not listening" }
        if let role = sockets.pending.first { return "--\(role.rawValue) is not listening" }
        let started = Set(server.stats.files.map { $0.path })
        for path in server.config.files where !started.contains(path) && !server.filesWaitingForAClient.contains(path) {
            return "\(path) is not followed"
        }
        return nil
    }

    /// Sends READY=1 (with the first status line) once everything is up.
    func checkReady() {
        guard !ready, !stopping, notReady() == nil else { return }
        ready = true
        let line = status()
        lastStatus = line
        notify("READY=1\nSTATUS=\(line)")
    }

    /// The one-line state: where it listens, files followed (and waiting), clients, NATS.
    func status() -> String {
        var parts: [String] = []
        if let bound = server.bound { parts.append("listening on \(bound)") }
        let files = server.stats.files
        if !files.isEmpty || !server.filesWaitingForAClient.isEmpty {
            let waiting = files.filter { $0.counters.waiting }.count
            var text = "\(files.count) file\(files.count == 1 ? "" : "s") followed"
            if waiting > 0 { text += " (\(waiting) waiting to appear)" }
            if !server.filesWaitingForAClient.isEmpty {
                text += ", \(server.filesWaitingForAClient.count) waiting for the first client"
            }
            parts.append(text)
        }
        let clients = server.stats.clients
        parts.append("\(clients) client\(clients == 1 ? "" : "s")")
        if let edge = nats.edge { parts.append("NATS edge " + (MetricsEndpoint.connected(edge) ? "connected" : "not connected")) }
        if let hub = nats.hub { parts.append("NATS hub " + (MetricsEndpoint.connected(hub) ? "connected" : "not connected")) }
        return parts.joined(separator: "; ")
    }

    private func send(status line: String) {
        lastStatus = line
        notify("STATUS=\(line)")
    }

    /// SIGTERM or SIGINT: the server drains its clients and exits; systemd hears first.
    private func stopped() {
        guard !stopping else { return }
        stopping = true
        notify("STOPPING=1\nSTATUS=stopping: draining \(server.stats.clients) client\(server.stats.clients == 1 ? "" : "s")")
    }

    /// One sd_notify (`NOTIFY_SOCKET` stays set: a second message needs it).
    private func notify(_ message: String) {
        let rc = sd_notify(0, message)
        if rc < 0 && !failureLogged {
            failureLogged = true
            logger.warning("systemd notification failed (NOTIFY_SOCKET \(String(cString: getenv("NOTIFY_SOCKET")))): \(String(cString: strerror(-rc)))")
        }
    }
}

import ArgumentParser
import Glibc
import Logging
import LogcastScan
import ReactiveUV
import ReactiveUVNATS

/// `logcast [FILE...] [--listen HOST:PORT] [options]`: tails log files as signals and serves
/// their lines to TCP clients, each with its own live filter.
@main
struct LogcastCommand: ParsableCommand {
    /// logcast's version (also in the man page).
    static let version = "0.3.0"

    static let configuration = CommandConfiguration(
        commandName: "logcast",
        abstract: "Tail log files and serve their lines to TCP clients, each with its own live filter.",
        usage: """
            logcast [FILE...] [--listen HOST:PORT] [options]
            logcast FILE... --publish nats://HOST:PORT [NATS options]
            logcast --from nats://HOST:PORT --stream NAME [--listen HOST:PORT]
            """,
        // Paragraphs are separated by blank lines: `--help` and the man page (generated
        // from this text by generate-manual) both keep them apart, so the example commands
        // do not run together.
        discussion: """
            Clients speak a line protocol: GREP <regex>, PAUSE, RESUME, STATS, HELP, QUIT \
            (send HELP for the list). Lines are sent as '<file>: <line>'. Filters are \
            Hyperscan patterns, compiled off the event loop into one database for all \
            clients; patterns that need backtracking (back-references, lookaround) are \
            answered 'ERR unsupported pattern'.

            With no FILE (and no syslog, journal or NATS source), logcast tails a demo file \
            it appends to itself.

            The systemd journal: logcast --journal _SYSTEMD_UNIT=nginx.service PRIORITY=3 \
            (journalctl's matches; lines 'journal: UNIT: MESSAGE'; with --state-dir the \
            cursor is kept and a restart resumes after the last entry served).

            Follow your own files: logcast ~/app/app.log /var/log/dpkg.log --listen 127.0.0.1:7070

            Then, in another terminal: nc 127.0.0.1 7070 (and type HELP, or GREP error)

            Under systemd (Type=notify): READY=1 once every listener listens and every FILE is \
            opened or waited on, a one-line STATUS= (files, clients, NATS), WATCHDOG=1 every \
            WatchdogSec/2 from the event loop, STOPPING=1 at SIGTERM; nothing without \
            NOTIFY_SOCKET. Socket activation: sockets passed by a .socket unit are served in \
            place of the option their FileDescriptorName= names: listen, http, syslog-tcp, \
            syslog-udp (--listen-unix, and listen with --tls-cert, are not activated yet).

            LOGCAST_DEBUG=1 in the environment is the same as --log-level debug. The guide: \
            Sources/logcast/README.md in ReactiveUV's repository.
            """,
        version: "logcast \(version)")

    @Argument(help: ArgumentHelp(
        "Files to tail (like tail -F: rotation and truncation are followed; missing files are waited for). A quoted pattern ('/var/log/app/*.log', '/srv/**/*.log': *, ? and [...] within a name, ** for any depth of directories) follows every file it matches, each with its own position, as files appear (read from their start) and go away (after their last line); a file rotated to a matching name is not followed twice. See --glob-max-files.",
        valueName: "file"))
    var files: [String] = []

    // The ordinary options come first in `--help` and the man page: argument-parser prints
    // titled groups before its untitled "OPTIONS" section, so they are a titled group of
    // their own, declared before the NATS group. The properties below forward to them, so
    // the rest of the command reads them as before.
    @OptionGroup(title: "Files, clients and filters")
    var serving: ServingOptions

    @OptionGroup(title: "Files by pattern")
    var globOptions: GlobOptions

    @OptionGroup(title: "Security")
    var security: SecurityOptions

    @OptionGroup(title: "Metrics and health")
    var httpOptions: HTTPOptions

    @OptionGroup(title: "Alerts to webhooks")
    var alertOptions: AlertOptions

    @OptionGroup(title: "Multi-line events")
    var multilineOptions: MultilineOptions

    @OptionGroup(title: "The systemd journal")
    var journalOptions: JournalOptions

    @OptionGroup(title: "NATS JetStream (edge: --publish, hub: --from)")
    var nats: NatsOptions

    var listen: String { serving.listen }
    var heartbeat: Double { serving.heartbeat }
    var idleTimeout: Double { serving.idleTimeout }
    var queueLimit: Int { serving.queueLimit }
    var slowClient: String { serving.slowClient }
    var forward: String? { serving.forward }
    var forwardBuffer: Int { serving.forwardBuffer }
    var tick: Double { serving.tick }
    var grepTimeout: Double { serving.grepTimeout }
    var maxPattern: Int { serving.maxPattern }
    var syslogUDP: String? { serving.syslogUDP }
    var syslogTCP: String? { serving.syslogTCP }
    var tlsCert: String? { serving.tlsCert }
    var tlsKey: String? { serving.tlsKey }
    var logLevel: String? { serving.logLevel }

    func validate() throws {
        _ = try journalOptions.matches(files)
        _ = try GlobOptions.split(journalOptions.files(files))
        _ = try Self.parseAddress(listen, option: "--listen")
        if let forward { _ = try Self.parseAddress(forward, option: "--forward") }
        if let syslogUDP { _ = try Self.parseAddress(syslogUDP, option: "--syslog-udp") }
        if let syslogTCP { _ = try Self.parseAddress(syslogTCP, option: "--syslog-tcp") }
        if (tlsCert == nil) != (tlsKey == nil) { throw ValidationError("--tls-cert and --tls-key go together") }
        guard LogcastConfig.SlowClientPolicy(rawValue: slowClient) != nil else {
            throw ValidationError("--slow-client must be 'drop' or 'disconnect', got '\(slowClient)'")
        }
        try Self.check(heartbeat, "--heartbeat", atLeast: 0)
        try Self.check(idleTimeout, "--idle-timeout", atLeast: 0)
        try Self.check(tick, "--tick", moreThan: 0)
        try Self.check(grepTimeout, "--grep-timeout", moreThan: 0)
        guard queueLimit >= 1 else { throw ValidationError("--queue-limit must be at least 1 (bytes), got \(queueLimit)") }
        guard forwardBuffer >= 1 else { throw ValidationError("--forward-buffer must be at least 1 (lines), got \(forwardBuffer)") }
        guard (1...(1 << 20)).contains(maxPattern) else {
            throw ValidationError("--max-pattern must be in 1...1048576 (bytes), got \(maxPattern)")
        }
        if let logLevel, Logger.Level(rawValue: logLevel.lowercased()) == nil {
            throw ValidationError("--log-level must be one of trace, debug, info, notice, warning, error, critical; got '\(logLevel)'")
        }
    }

    static func check(_ value: Double, _ option: String, atLeast minimum: Double) throws {
        guard value >= minimum, value.isFinite else {
            throw ValidationError("\(option) must be at least \(Int(minimum)) (seconds), got \(value)")
        }
    }

    static func check(_ value: Double, _ option: String, moreThan minimum: Double) throws {
        guard value > minimum, value.isFinite else {
            throw ValidationError("\(option) must be more than \(Int(minimum)) (seconds), got \(value)")
        }
    }

    static func parseAddress(_ text: String, option: String) throws -> (host: String, port: Int) {
        guard let colon = text.lastIndex(of: ":") else {
            throw ValidationError("\(option) must be HOST:PORT (port 0...65535), got '\(text)'")
        }
        let portText = text[text.index(after: colon)...]
        guard let port = Int(portText) else {
            throw ValidationError("\(option): the port must be a number in 0...65535, got '\(portText)' in '\(text)'")
        }
        guard (0...65535).contains(port) else {
            throw ValidationError("\(option): port \(port) is out of range 0...65535 in '\(text)'")
        }
        var host = String(text[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return (host.isEmpty ? "127.0.0.1" : host, port)
    }

    /// Why a FILE cannot be read yet at start (a missing one can: it is waited for). Not an
    /// error: as `tail -F` does, logcast says so and waits (the follower's notices say when
    /// a readable file is there), so a directory or a file not yet readable at the path
    /// never keeps the daemon from starting.
    static func notYetReadable(_ path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else {
            if errno == ENOENT { return nil }
            return "\(path): \(String(cString: strerror(errno)))"
        }
        if info.st_mode & S_IFMT == S_IFDIR { return "\(path) is a directory, not a file" }
        if access(path, R_OK) != 0 { return "\(path) is not readable: \(String(cString: strerror(errno)))" }
        return nil
    }

    func run() throws {
        // Blocks of lines (up to LineBlockBuilder.sealSize) are made and freed many times a
        // second. With glibc's defaults each one above 128 KiB is a fresh mmap (or brk) that
        // is returned to the kernel when freed, so every block's pages are faulted in and
        // zeroed anew: with one client taking every line, 40% of the daemon's CPU time.
        // Keeping freed memory in the heap (up to a bound) lets the next block reuse it.
        _ = lcs_keep_freed_memory(16 << 20, 64 << 20)
        var level = Logger.Level.info
        if getenv("LOGCAST_DEBUG") != nil { level = .debug }
        if let logLevel { level = Logger.Level(rawValue: logLevel.lowercased()) ?? level }
        let chosen = level
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = chosen
            return handler
        }
        var logger = Logger(label: "logcast")
        logger.logLevel = level
        // With --journal, the FILE arguments shaped FIELD=value are its matches (JournalOptions).
        let files = journalOptions.files(self.files)
        // Sockets systemd passed (socket activation) stand for their options: SystemdSockets.swift.
        let systemd = try SystemdSockets.start(tls: tlsCert != nil)
        let address = try systemd.address(.listen) ?? Self.parseAddress(listen, option: "--listen")
        let udpAddress = try systemd.address(.syslogUDP) ?? syslogUDP.map { try Self.parseAddress($0, option: "--syslog-udp") }
        let tcpAddress = try systemd.address(.syslogTCP) ?? syslogTCP.map { try Self.parseAddress($0, option: "--syslog-tcp") }

        guard lcs_platform_ok() != 0 else {
            Output.err("logcast: error: Hyperscan (the GREP engine) cannot run on this processor: it needs x86-64 with SSSE3\n")
            throw ExitCode.failure
        }
        let (plainFiles, patterns) = try GlobOptions.split(files)
        if nats.publish != nil && !patterns.isEmpty {
            Output.err("logcast: error: FILE patterns ('\(patterns[0])') are not supported with --publish yet; name the files\n")
            throw ExitCode.failure
        }
        for pattern in patterns {
            var info = stat()
            if stat(pattern.base, &info) == 0 && info.st_mode & S_IFMT != S_IFDIR {
                Output.err("logcast: error: pattern '\(pattern)': \(pattern.base) is not a directory\n")
                throw ExitCode.failure
            }
        }
        for path in plainFiles {
            if let problem = Self.notYetReadable(path) {
                Output.err("logcast: warning: \(problem); waiting for a readable file there\n")
            }
        }
        // An edge's files go to NATS (NatsEdge follows them), not to a local FileSource.
        var paths = nats.publish != nil ? [] : plainFiles
        var demo: Disposable?
        if paths.isEmpty && patterns.isEmpty && !nats.isActive && udpAddress == nil && tcpAddress == nil && !journalOptions.isActive {
            let source = DemoSource.start()
            paths = [source.path]
            demo = source.appender
            Output.out("logcast: no FILE given; tailing a demo log at \(source.path)\n")
        }
        for path in paths where access(path, F_OK) != 0 {
            Output.err("logcast: \(path) does not exist yet; waiting for it to appear (like tail -F)\n")
        }

        var config = LogcastConfig(
            files: paths, host: address.host, port: address.port, heartbeat: heartbeat, idleTimeout: idleTimeout,
            queueLimit: queueLimit, slowClient: LogcastConfig.SlowClientPolicy(rawValue: slowClient)!,
            tickInterval: tick)
        config.compileTimeLimit = grepTimeout
        config.tlsCertificate = tlsCert
        config.tlsKey = tlsKey
        config.maxPatternLength = maxPattern
        config.maxCommandLength = max(config.maxCommandLength, maxPattern + 5)  // "GREP " + pattern
        config.stateDirectory = nats.publish == nil ? nats.stateDir : nil
        let server = LogcastServer(config: config, logger: logger)
        if let directory = config.stateDirectory {
            server.positions = PlainPositions(store: try StateDirectory.open(directory)) { logger.error("\($0)") }
        }
        server.beforeFatalExit = { demo?.dispose() }
        server.addGlobs(patterns, maxFiles: globOptions.maxFiles)
        try security.configure(server, listenHost: address.host, tls: tlsCert != nil)
        try alertOptions.start(server: server, publishing: nats.publish != nil)
        try multilineOptions.start(server: server)
        let natsRunning = try nats.start(server: server, files: files, logger: logger, credentials: try security.natsCredentials())
        try journalOptions.start(server: server, arguments: self.files, nats: nats, natsRunning: natsRunning)
        let forwardTarget = try forward.map { try Self.parseAddress($0, option: "--forward") }
        server.start(forward: forwardTarget.map { ($0.host, $0.port, forwardBuffer) }) { bound in
            if tlsCert != nil {
                Output.out("logcast: listening on \(bound); TLS, connect with: openssl s_client -quiet -connect \(bound)\n")
            } else {
                Output.out("logcast: listening on \(bound); connect with: nc \(bound.host) \(bound.port)\n")
            }
        }
        try security.startUnix(server)
        try systemd.adopting(httpOptions).start(server: server, security: security, nats: natsRunning)
        server.startSyslog(udp: udpAddress, tcp: tcpAddress) { kind, bound in
            Output.out("logcast: syslog \(kind) on \(bound)\n")
        }
        try SystemdSockets.notify(server: server, nats: natsRunning, logger: logger)
        while !server.finished {
            _ = EventLoop.main.run(until: { server.finished }, timeout: 3600)
        }
        natsRunning.stop()
        demo?.dispose()
        // Disposing closed the handles and cancelled the file requests, but their callbacks
        // (close callbacks, a tail's read still in libuv's thread pool) run later and keep
        // their subscriber graphs alive until they do: the tail's graph holds the published
        // subject of `lines`. Run the loop until nothing is left, so everything is released
        // before the process exits (LeakSanitizer, `make sanitize`, checks that it is).
        EventLoop.main.run()
        // The NATS connections are destroyed now (the loop ran until nothing was left):
        // cnats's own threads are stopped and joined before the exit instead of living to
        // it unjoined (ThreadSanitizer reported one as leaked). Bounded: a thread that does
        // not end within 2 s is left to the exit. Not after a TLS connection (see
        // NATS.closeLibrary: cnats 3.4 would crash at exit). A connection is destroyed by a
        // task the loop runs after its close (NATSConnection.close), which the loop's end
        // above does not wait for: waited for here, bounded.
        _ = EventLoop.main.run(until: { NATS.liveConnections == 0 }, timeout: 2)
        let closing = NATS.closeLibrary(timeout: 2)
        switch closing {
        case .closed, .notOpened, .keptForTLS:
            logger.debug("nats: library \(closing)")
        case .timedOut, .connectionsLeft, .refused:
            logger.notice("nats: library \(closing)")
        }
    }
}

/// logcast's ordinary options: where it listens, how it treats clients, forwarding, syslog,
/// TLS, filter limits and logging (the NATS options are ``NatsOptions``).
struct ServingOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Where to listen, HOST:PORT (port 0...65535; 0 picks a free port).", valueName: "host:port"))
    var listen: String = "127.0.0.1:7070"

    // `.unconditional`: the next word is the value even when it starts with "-", so
    // `--heartbeat -1` gets the range message of `validate()` (as `--heartbeat=-1` does)
    // instead of argument-parser's "Missing value for '--heartbeat'".
    @Option(parsing: .unconditional, help: ArgumentHelp("Seconds of silence before a client gets a HEARTBEAT line (0: never).", valueName: "seconds"))
    var heartbeat: Double = 30

    @Option(name: .customLong("idle-timeout"), help: ArgumentHelp("Seconds without input or output before a client is closed (0: never).", valueName: "seconds"))
    var idleTimeout: Double = 600

    @Option(name: .customLong("queue-limit"), help: ArgumentHelp("Bytes a client may fall behind before the slow-client policy applies (at least 1).", valueName: "bytes"))
    var queueLimit: Int = 1 << 20

    @Option(name: .customLong("slow-client"), help: ArgumentHelp("What to do with a client that fell too far behind: drop (its missed lines, counted and reported) or disconnect.", valueName: "drop|disconnect"))
    var slowClient: String = "drop"

    @Option(help: ArgumentHelp("Also send every line to an upstream logcast, HOST:PORT (reconnects with backoff).", valueName: "host:port"))
    var forward: String?

    @Option(name: .customLong("forward-buffer"), help: ArgumentHelp("Lines held for the upstream while it is away (at least 1).", valueName: "lines"))
    var forwardBuffer: Int = 100_000

    @Option(name: .customLong("tick"), help: ArgumentHelp("Seconds between heartbeat, drop-report and idle checks (more than 0).", valueName: "seconds"))
    var tick: Double = 1

    @Option(name: .customLong("grep-timeout"), help: ArgumentHelp("Seconds a GREP pattern may take to compile before it is refused (more than 0).", valueName: "seconds"))
    var grepTimeout: Double = 10

    @Option(name: .customLong("max-pattern"), help: ArgumentHelp("The longest GREP pattern, in bytes (1...1048576).", valueName: "bytes"))
    var maxPattern: Int = 60 * 1024

    @Option(name: .customLong("syslog-udp"), help: ArgumentHelp("Also accept syslog messages (RFC 5424 and RFC 3164) as datagrams on HOST:PORT; their lines are tagged 'syslog <sender>'.", valueName: "host:port"))
    var syslogUDP: String?

    @Option(name: .customLong("syslog-tcp"), help: ArgumentHelp("Also accept syslog messages over TCP on HOST:PORT (RFC 6587 octet counting or one message per line).", valueName: "host:port"))
    var syslogTCP: String?

    @Option(name: .customLong("tls-cert"), help: ArgumentHelp("Serve clients over TLS with this PEM certificate chain (with --tls-key).", valueName: "pem-file"))
    var tlsCert: String?

    @Option(name: .customLong("tls-key"), help: ArgumentHelp("The PEM private key of --tls-cert.", valueName: "pem-file"))
    var tlsKey: String?

    @Option(name: .customLong("log-level"), help: ArgumentHelp("What logcast logs on standard error: trace, debug, info, notice, warning, error or critical.", valueName: "level"))
    var logLevel: String?
}

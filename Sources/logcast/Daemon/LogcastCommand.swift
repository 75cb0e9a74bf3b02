import ArgumentParser
import Glibc
import Logging
import ReactiveUV

/// `logcast [FILE...] --listen HOST:PORT`: tails log files as signals and serves their lines
/// to TCP clients, each with its own live filter.
@main
struct LogcastCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "logcast",
        abstract: "Tail log files and serve their lines to TCP clients, each with its own live filter.",
        discussion: """
            Clients speak a line protocol: GREP <regex>, PAUSE, RESUME, STATS, QUIT.
            With no FILE, logcast tails a demo file it appends to itself.
            Try: logcast --listen 127.0.0.1:7070, then: nc 127.0.0.1 7070
            """)

    @Argument(help: "Files to tail (like tail -F: rotation and truncation are followed; missing files are waited for).")
    var files: [String] = []

    @Option(help: "Where to listen, HOST:PORT (port 0 picks a free port).")
    var listen: String = "127.0.0.1:7070"

    @Option(help: "Seconds of silence before a client gets a HEARTBEAT line (0: never).")
    var heartbeat: Double = 30

    @Option(name: .customLong("idle-timeout"), help: "Seconds without input or output before a client is closed (0: never).")
    var idleTimeout: Double = 600

    @Option(name: .customLong("queue-limit"), help: "Bytes queued for one client before the slow-client policy applies.")
    var queueLimit: Int = 1 << 20

    @Option(name: .customLong("slow-client"), help: "What to do with a client whose queue is full: drop (count and report) or disconnect.")
    var slowClient: String = "drop"

    @Option(help: "Also send every line to an upstream logcast, HOST:PORT (reconnects with backoff).")
    var forward: String?

    @Option(name: .customLong("forward-buffer"), help: "Lines held for the upstream while it is away.")
    var forwardBuffer: Int = 100_000

    @Option(name: .customLong("tick"), help: "Seconds between heartbeat and idle checks.")
    var tick: Double = 1

    func validate() throws {
        _ = try Self.parseAddress(listen, option: "--listen")
        if let forward { _ = try Self.parseAddress(forward, option: "--forward") }
        guard LogcastConfig.SlowClientPolicy(rawValue: slowClient) != nil else {
            throw ValidationError("--slow-client must be 'drop' or 'disconnect'")
        }
        guard queueLimit > 0, forwardBuffer > 0, tick > 0, heartbeat >= 0, idleTimeout >= 0 else {
            throw ValidationError("limits and intervals must be positive")
        }
    }

    static func parseAddress(_ text: String, option: String) throws -> (host: String, port: Int) {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
              (0...65535).contains(port) else {
            throw ValidationError("\(option) must be HOST:PORT, got '\(text)'")
        }
        var host = String(text[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return (host.isEmpty ? "127.0.0.1" : host, port)
    }

    func run() throws {
        LoggingSystem.bootstrap { StreamLogHandler.standardError(label: $0) }
        var logger = Logger(label: "logcast")
        logger.logLevel = getenv("LOGCAST_DEBUG") != nil ? .debug : .info
        let address = try Self.parseAddress(listen, option: "--listen")

        var paths = files
        var demo: Disposable?
        if paths.isEmpty {
            let source = DemoSource.start()
            paths = [source.path]
            demo = source.appender
            Output.out("logcast: no FILE given; tailing a demo log at \(source.path)\n")
        }
        for path in paths where access(path, F_OK) != 0 {
            Output.err("logcast: \(path) does not exist yet; waiting for it to appear (like tail -F)\n")
        }

        let config = LogcastConfig(
            files: paths, host: address.host, port: address.port, heartbeat: heartbeat, idleTimeout: idleTimeout,
            queueLimit: queueLimit, slowClient: LogcastConfig.SlowClientPolicy(rawValue: slowClient)!,
            tickInterval: tick)
        let server = LogcastServer(config: config, logger: logger)
        let forwardTarget = try forward.map { try Self.parseAddress($0, option: "--forward") }
        server.start(forward: forwardTarget.map { ($0.host, $0.port, forwardBuffer) }) { bound in
            Output.out("logcast: listening on \(bound); connect with: nc \(bound.host) \(bound.port)\n")
        }
        while !server.finished {
            _ = EventLoop.main.run(until: { server.finished }, timeout: 3600)
        }
        demo?.dispose()
        // Disposing closed the handles and cancelled the file requests, but their callbacks
        // (close callbacks, a tail's read still in libuv's thread pool) run later and keep
        // their subscriber graphs alive until they do: the tail's graph holds the published
        // subject of `lines`. Run the loop until nothing is left, so everything is released
        // before the process exits (LeakSanitizer, `make sanitize`, checks that it is).
        EventLoop.main.run()
    }
}

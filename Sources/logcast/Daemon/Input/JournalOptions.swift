import ArgumentParser
import Logging
import ReactiveUV

/// `--journal [MATCH…]` and `--journal-directory DIR`: the systemd journal as a source
/// (``JournalSource``), and on an edge as entries shipped to NATS (``JournalEdge``). An
/// option group of its own, so LogcastCommand only names it, takes the matches out of its
/// FILE arguments and starts it.
///
/// Why the matches are positional words and not the option's values: `--journal` alone
/// (every entry) must parse, and an option's value list cannot be empty; journalctl takes
/// its matches the same way, as words shaped `FIELD=value` among its arguments
/// (``JournalMatch/isMatch(_:)``), so `logcast --journal _SYSTEMD_UNIT=nginx.service
/// /var/log/app.log` reads as it would there.
struct JournalOptions: ParsableArguments {
    @Flag(name: .customLong("journal"), help: ArgumentHelp(
        "Also follow the systemd journal (libsystemd's sd_journal on logcast's loop); each entry is served as 'journal: UNIT: MESSAGE' (UNIT: _SYSTEMD_UNIT, else SYSLOG_IDENTIFIER, else _COMM), a multi-line MESSAGE as one event (continuation lines after a TAB), one over 1 MiB left out (counted). With --journal, FILE arguments shaped FIELD=value (FIELD: capitals, digits, _) are journalctl matches: the same field twice is OR, different fields AND, a '+' between matches ORs what is before it with what is after (a file of such a name: ./FIELD=value). Starts at the journal's end; with --state-dir the cursor is kept there (journal-cursor) and a restart resumes after the last entry served. With --publish each entry is also a message in the stream, the cursor saved once JetStream acknowledged it: exactly once across restarts."))
    var journal = false

    @Option(name: .customLong("journal-directory"), help: ArgumentHelp(
        "Follow the journal files in this directory instead of the system's (as journalctl -D); implies --journal.",
        valueName: "dir"))
    var directory: String?

    /// Whether the journal is a source.
    var isActive: Bool { journal || directory != nil }

    /// The FILE arguments that are files: all of them without `--journal`; with it, all but
    /// the matches.
    ///
    /// - Parameter arguments: the positional arguments.
    /// - Returns: the FILEs and FILE patterns.
    func files(_ arguments: [String]) -> [String] {
        isActive ? arguments.filter { !JournalMatch.isMatch($0) } : arguments
    }

    /// The matches among the FILE arguments (none without `--journal`), checked.
    ///
    /// - Parameter arguments: the positional arguments.
    /// - Returns: the matches, in order.
    /// - Throws: a `ValidationError` for a misplaced `+`.
    func matches(_ arguments: [String]) throws -> [JournalMatch] {
        isActive ? try JournalMatch.parse(arguments) : []
    }

    /// Opens the journal (an error at start, exit 1, as an unusable --listen is) and adds
    /// it to the server's sources: followed at once, or, with kept positions (`--state-dir`),
    /// from the first client on, as the FILEs are (PlainPositions says why), so what was
    /// written while logcast was down reaches that client. On an edge (`--publish`) its
    /// entries go to the stream (``JournalEdge``), the cursor saved in the edge's state
    /// directory once JetStream acknowledged them.
    ///
    /// - Parameters:
    ///   - server: the daemon (the source ends with its `running`).
    ///   - arguments: the positional arguments (the matches are among them).
    ///   - nats: the NATS options (`--publish`, `--from`, the edge's state directory).
    ///   - natsRunning: the edge started from them, if any.
    /// - Throws: `ExitCode.failure` once the error is on standard error.
    func start(server: LogcastServer, arguments: [String], nats: NatsOptions, natsRunning: NatsRunning) throws {
        guard isActive else { return }
        let matches = try self.matches(arguments)
        let fanOut = server.fanOut
        let prefix = Array("journal: ".utf8)
        let deliver: ([UInt8]) -> Void = { fanOut.ingest(prefix: prefix, line: $0) }
        let edge = natsRunning.edge
        let stateDirectory = edge != nil ? nats.stateDirectory : server.config.stateDirectory
        let cursor = stateDirectory.map { JournalCursor(directory: $0) }
        let source: JournalSource
        do {
            source = try JournalSource(
                directory: directory, matches: matches, cursor: cursor, logger: server.logger, deliver: deliver,
                failed: { [weak server] reason in server?.sourceEnded("journal: \(reason)") })
        } catch {
            Output.err("logcast: error: \(error)\n")
            throw ExitCode.failure
        }
        server.journal = source
        server.liveSources += 1
        if let edge, let cursor {
            // The edge's own lines reach local clients when no hub (--from) feeds them.
            let shipping = JournalEdge(edge: edge, source: source, cursor: cursor, logger: server.logger,
                                       local: nats.from == nil ? deliver : nil)
            server.running += Disposable {
                shipping.stop()
                source.stop()
            }
            source.start()
            return
        }
        server.running += Disposable { source.stop() }
        if server.positions == nil {
            source.start()
        } else {
            server.logger.notice("journal: \(source.name) is followed from the first client on (--state-dir)")
        }
    }
}

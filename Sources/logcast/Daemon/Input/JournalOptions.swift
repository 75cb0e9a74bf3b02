import ArgumentParser
import Logging
import ReactiveUV

/// `--journal [MATCH…]` and `--journal-directory DIR`: the systemd journal as a source
/// (``JournalSource``). An option group of its own, so LogcastCommand only names it, takes
/// the matches out of its FILE arguments and starts it.
///
/// Why the matches are positional words and not the option's values: `--journal` alone
/// (every entry) must parse, and an option's value list cannot be empty; journalctl takes
/// its matches the same way, as words shaped `FIELD=value` among its arguments
/// (``JournalMatch/isMatch(_:)``), so `logcast --journal _SYSTEMD_UNIT=nginx.service
/// /var/log/app.log` reads as it would there.
struct JournalOptions: ParsableArguments {
    @Flag(name: .customLong("journal"), help: ArgumentHelp(
        "Also follow the systemd journal (libsystemd's sd_journal on logcast's loop); each entry is served as 'journal: UNIT: MESSAGE' (UNIT: _SYSTEMD_UNIT, else SYSLOG_IDENTIFIER, else _COMM), a multi-line MESSAGE as one event (continuation lines after a TAB), one over 1 MiB left out (counted). With --journal, FILE arguments shaped FIELD=value (FIELD: capitals, digits, _) are journalctl matches: the same field twice is OR, different fields AND, a '+' between matches ORs what is before it with what is after (a file of such a name: ./FIELD=value). Starts at the journal's end; with --state-dir the cursor is kept there (journal-cursor) and a restart resumes after the last entry served. Not with --publish yet."))
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
    /// written while logcast was down reaches that client.
    ///
    /// - Parameters:
    ///   - server: the daemon (the source ends with its `running`).
    ///   - arguments: the positional arguments (the matches are among them).
    ///   - publishing: logcast is a NATS edge (`--publish`): refused. An edge's lines go to
    ///     JetStream with their positions saved once the stream acknowledged them; the
    ///     journal's cursor is not part of that yet (NatsEdge ships FILEs only), and serving
    ///     it only locally would silently not ship it.
    /// - Throws: `ExitCode.failure` once the error is on standard error.
    func start(server: LogcastServer, arguments: [String], publishing: Bool) throws {
        guard isActive else { return }
        if publishing {
            Output.err("logcast: error: --journal is not supported with --publish yet (an edge ships FILEs to NATS and saves their positions once JetStream acknowledged them; the journal's cursor is not shipped that way yet); follow the journal with a logcast of its own, or on the hub (--from)\n")
            throw ExitCode.failure
        }
        let matches = try self.matches(arguments)
        let fanOut = server.fanOut
        let prefix = Array("journal: ".utf8)
        let source: JournalSource
        do {
            source = try JournalSource(
                directory: directory, matches: matches, cursor: server.config.stateDirectory.map { JournalCursor(directory: $0) },
                logger: server.logger, deliver: { fanOut.ingest(prefix: prefix, line: $0) },
                failed: { [weak server] reason in server?.sourceEnded("journal: \(reason)") })
        } catch {
            Output.err("logcast: error: \(error)\n")
            throw ExitCode.failure
        }
        server.journal = source
        server.liveSources += 1
        server.running += Disposable { source.stop() }
        if server.positions == nil {
            source.start()
        } else {
            server.logger.notice("journal: \(source.name) is followed from the first client on (--state-dir)")
        }
    }
}

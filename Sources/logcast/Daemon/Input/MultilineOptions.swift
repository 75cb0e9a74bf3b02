import ArgumentParser
import Glibc
import ReactiveUV

/// `--multiline-start REGEX`, `--multiline-file GLOB=REGEX` and their limits: lines that do
/// not match a start pattern are joined to the event before them (``MultilineAssembler``).
/// An option group of its own, so LogcastCommand only names it and starts it.
struct MultilineOptions: ParsableArguments {
    @Option(name: .customLong("multiline-start"), help: ArgumentHelp(
        "Join lines into events: a line matching REGEX (a GREP pattern, compiled at start; use ^ to anchor at the line's start) begins an event, any other line belongs to the event before it (stack traces, indented continuations). Applies to every FILE without a --multiline-file of its own. An event is sent as one record: '<file>: <first line>', then each continuation line after a TAB.",
        valueName: "regex"))
    var start: String?

    @Option(name: .customLong("multiline-file"), help: ArgumentHelp(
        "As --multiline-start, for the FILEs matching GLOB (fnmatch, as the FILE was given; the first matching GLOB wins). Repeatable. GLOB is what comes before the first '='.",
        valueName: "glob=regex"))
    var files: [String] = []

    @Option(name: .customLong("multiline-timeout"), help: ArgumentHelp(
        "Seconds a file may be quiet before its last event is sent as complete (0.01...3600).", valueName: "seconds"))
    var timeout: Double = 1

    @Option(name: .customLong("multiline-max-bytes"), help: ArgumentHelp(
        "The most bytes of one event; a continuation line past it begins a new event (the cut is counted in STATS and /metrics) (1024...4194304).",
        valueName: "bytes"))
    var maxBytes: Int = 256 * 1024

    var isActive: Bool { start != nil || !files.isEmpty }

    func validate() throws {
        for rule in files { _ = try Self.split(rule) }
        guard timeout >= 0.01, timeout <= 3600 else {
            throw ValidationError("--multiline-timeout must be in 0.01...3600 (seconds), got \(timeout)")
        }
        guard (1024...(4 << 20)).contains(maxBytes) else {
            throw ValidationError("--multiline-max-bytes must be in 1024...4194304 (bytes), got \(maxBytes)")
        }
    }

    /// `GLOB=REGEX` split at its first `=` (a glob rarely holds one; a pattern often does).
    static func split(_ rule: String) throws -> (glob: String, pattern: String) {
        guard let eq = rule.firstIndex(of: "=") else {
            throw ValidationError("--multiline-file must be GLOB=REGEX (for example '*.log=^\\d{4}-'), got '\(rule)'")
        }
        let glob = String(rule[..<eq]), pattern = String(rule[rule.index(after: eq)...])
        guard !glob.isEmpty, !pattern.isEmpty else {
            throw ValidationError("--multiline-file must be GLOB=REGEX with neither empty, got '\(rule)'")
        }
        return (glob, pattern)
    }

    /// Compiles every pattern (now: a bad one is an error at start, exit 1) and gives the
    /// server its rules, if any multi-line option was given.
    ///
    /// - Parameters:
    ///   - server: the daemon whose files are joined (``LogcastServer/startFile(_:)`` asks
    ///     the rules for each file's assembler).
    /// A NATS edge (`--publish`) finds the rules on the server (NatsOptions.swift gives its
    /// edge a ``MultilineEdgeGate``), so this runs before the edge starts.
    ///
    /// - Parameter server: the daemon whose files are joined (``LogcastServer/startFile(_:)``
    ///   asks the rules for each file's assembler).
    /// - Throws: `ExitCode.failure` once the error is on standard error.
    func start(server: LogcastServer) throws {
        guard isActive else { return }
        var rules: [(glob: String?, matcher: MultilineMatcher)] = []
        func compile(_ pattern: String, _ option: String) throws -> MultilineMatcher {
            switch MultilineMatcher.compile(pattern) {
            case .success(let matcher): return matcher
            case .failure(let refusal):
                Output.err("logcast: error: \(option) '\(pattern)': \(refusal.reply.dropFirst(4))\n")
                throw ExitCode.failure
            }
        }
        for rule in files {
            let (glob, pattern) = try Self.split(rule)
            rules.append((glob, try compile(pattern, "--multiline-file \(glob)")))
        }
        if let start { rules.append((nil, try compile(start, "--multiline-start"))) }
        server.multiline = MultilineRules(rules: rules, timeout: timeout, maxBytes: maxBytes)
    }
}

/// Which start pattern each file has, and every file's assembler (main loop only).
final class MultilineRules {
    /// In order; a `nil` glob matches every file (`--multiline-start`, last).
    let rules: [(glob: String?, matcher: MultilineMatcher)]
    let timeout: Double
    let maxBytes: Int
    let counters = MultilineCounters()
    private var assemblers: [MultilineAssembler] = []

    init(rules: [(glob: String?, matcher: MultilineMatcher)], timeout: Double, maxBytes: Int) {
        self.rules = rules
        self.timeout = timeout
        self.maxBytes = maxBytes
    }

    /// The start pattern of `path` (the first rule whose glob matches it), if any.
    func matcher(for path: String) -> MultilineMatcher? {
        rules.first { rule in rule.glob.map { fnmatch($0, path, 0) == 0 } ?? true }?.matcher
    }

    /// An assembler for `path`, or `nil` when no rule applies to it (its lines go as before).
    ///
    /// - Parameters:
    ///   - path: the FILE as given.
    ///   - emit: receives each complete event's text.
    /// - Returns: the file's assembler, stopped with ``stop()``.
    func assembler(for path: String, emit: @escaping ([UInt8]) -> Void) -> MultilineAssembler? {
        guard let matcher = matcher(for: path) else { return nil }
        let made = MultilineAssembler(matcher: matcher, timeout: timeout, maxBytes: maxBytes, counters: counters, emit: emit)
        assemblers.append(made)
        return made
    }

    /// Assemblers for bytes that arrive as whole events (an edge's runs), by path; their
    /// counters are not reported (the edge's gate counted the events).
    private var whole: [String: MultilineAssembler] = [:]
    private let wholeCounters = MultilineCounters()

    /// Joins `bytes` of `path`, whole events (``MultilineEdgeGate``), into the fan-out at
    /// once: nothing is held for a next line.
    ///
    /// - Parameters:
    ///   - path: the file.
    ///   - bytes: whole lines, starting with an event's first line.
    ///   - fanOut: where the events go.
    /// - Returns: `false` when no rule applies to `path` (the caller ingests the lines).
    func ingestWhole(path: String, bytes: [UInt8], into fanOut: LineFanOut) -> Bool {
        if whole[path] == nil {
            guard let matcher = matcher(for: path) else { return false }
            let prefix = Array((path + ": ").utf8)
            let made = MultilineAssembler(matcher: matcher, timeout: timeout, maxBytes: Int.max, counters: wholeCounters) {
                fanOut.ingest(prefix: prefix, line: $0)
            }
            made.wholeEvents = true
            whole[path] = made
        }
        whole[path]?.feed(bytes)
        return true
    }

    /// Emits every pending event (shutdown, before the clients drain).
    func flush() { for a in assemblers { a.flush() } }

    /// Stops every assembler (their timers cancelled).
    func stop() {
        for a in assemblers { a.stop() }
        for a in whole.values { a.stop() }
    }
}

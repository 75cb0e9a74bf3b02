import ArgumentParser
import Glibc
import Logging
import ReactiveUV
import ReactiveUVNATS

/// logcast's NATS options (an option group, so LogcastCommand only names it): the edge
/// (`--publish`) and the hub (`--from`), alone or both in one process.
struct NatsOptions: ParsableArguments {
    @Option(help: "Edge: publish the FILEs' lines to this NATS JetStream cluster, nats://H:P[,H:P…] (tls://… for TLS). Positions are saved in --state-dir once the stream acknowledged them: exactly once across restarts.")
    var publish: String?

    @Option(help: "Hub: serve the lines of --stream from this NATS cluster, nats://H:P[,H:P…]; clients may send SINCE <sequence|time>.")
    var from: String?

    @Option(help: "The JetStream stream (created by the edge when missing, subjects '<first token of --subject>.>').")
    var stream: String = "LOGS"

    @Option(help: "Edge: the subject lines are published to (default logs.<hostname>).")
    var subject: String?

    @Option(name: .customLong("state-dir"), help: "Where file positions are kept. Edge: positions the stream acknowledged (default $HOME/.local/state/logcast, /var/lib/logcast for root). Without --publish: positions read, so a restarted logcast gives its first client what was written while it was down.")
    var stateDir: String?

    @Option(name: .customLong("batch-bytes"), help: "Edge: the most bytes of whole lines in one message (1024...1048576), cut to the server's max_payload less 8 KiB for headers.")
    var batchBytes: Int = 1 << 20

    @Option(name: .customLong("stream-replicas"), help: "Edge: replicas of a stream it creates (1, 3 or 5; more than 1 needs a cluster).")
    var streamReplicas: Int = 1

    @Option(name: .customLong("dedupe-window"), help: "Edge: seconds the stream it creates remembers message ids (a restart within it repeats nothing).")
    var dedupeWindow: Double = 300

    @Option(name: .customLong("nats-ca"), help: "A PEM file of CAs to verify tls:// NATS servers with.")
    var natsCA: String?

    var isActive: Bool { publish != nil || from != nil }

    func validate() throws {
        do {
            if let publish { _ = try NatsTarget.parse(publish, option: "--publish") }
            if let from { _ = try NatsTarget.parse(from, option: "--from") }
        } catch let error as NatsOptionError {
            throw ValidationError(error.description)
        }
        guard !stream.isEmpty, !stream.contains(where: { ".*> \t".contains($0) }) else {
            throw ValidationError("--stream must be a name without dots, spaces or wildcards, got '\(stream)'")
        }
        if let subject, subject.isEmpty || subject.contains(where: { "*> \t".contains($0) }) || subject.hasPrefix(".") || subject.hasSuffix(".") {
            throw ValidationError("--subject must be a subject without wildcards or spaces, got '\(subject)'")
        }
        guard (1024...(1 << 20)).contains(batchBytes) else {
            throw ValidationError("--batch-bytes must be in 1024...1048576, got \(batchBytes)")
        }
        guard [1, 3, 5].contains(streamReplicas) else { throw ValidationError("--stream-replicas must be 1, 3 or 5, got \(streamReplicas)") }
        guard dedupeWindow >= 1, dedupeWindow.isFinite else { throw ValidationError("--dedupe-window must be at least 1 (seconds), got \(dedupeWindow)") }
    }

    private func target(_ text: String, option: String, credentials: NATSCredentials?) throws -> NatsTarget {
        var options = NATSOptions()
        options.name = "logcast"
        options.credentials = credentials
        if let natsCA { options.tls = NATSTLSOptions(caFile: natsCA) }
        return NatsTarget(urls: try NatsTarget.parse(text, option: option), stream: stream, options: options)
    }

    var stateDirectory: String {
        if let stateDir { return stateDir }
        if getuid() == 0 { return "/var/lib/logcast" }
        return (getenv("HOME").map { String(cString: $0) } ?? "/tmp") + "/.local/state/logcast"
    }

    /// Starts the edge and/or the hub on `server`; returns what `stop()` must end.
    func start(server: LogcastServer, files: [String], logger: Logger, credentials: NATSCredentials? = nil) throws -> NatsRunning {
        let running = NatsRunning()
        if let from {
            let hub = NatsHub(target: try target(from, option: "--from", credentials: credentials), fanOut: server.fanOut, logger: logger)
            server.since = { [weak hub] session, argument in hub?.since(session, argument) }
            server.sessionEnded = { [weak hub] session in hub?.ended(session) }
            server.hubFields = { [weak hub] in hub?.fields ?? "" }
            hub.start()
            running.hub = hub
        }
        if let publish {
            let fanOut = server.fanOut
            // Without a hub in this process the edge's own lines still reach local clients.
            // (With --multiline-start they are whole events: MultilineRules.ingestWhole.)
            let multiline = server.multiline
            let local: ((String, [UInt8]) -> Void)? = from == nil
                ? { path, bytes in
                    if multiline?.ingestWhole(path: path, bytes: bytes, into: fanOut) == true { return }
                    fanOut.ingest(prefix: Array((path + ": ").utf8), chunk: bytes)
                } : nil
            let edge = try NatsEdge(
                target: try target(publish, option: "--publish", credentials: credentials), subject: subject ?? "logs.\(NatsTarget.hostName)",
                batchBytes: batchBytes, replicas: streamReplicas, dedupeWindow: dedupeWindow,
                stateDirectory: stateDirectory, paths: files, logger: logger, local: local)
            let stats = server.stats
            edge.counters = { stats.counters(for: $0) }
            if let multiline {
                edge.multiline = MultilineEdgeGate(rules: multiline, batchBytes: edge.batchBytes) { [weak edge] in edge?.received($0) }
            }
            edge.start()
            running.edge = edge
        }
        return running
    }
}

/// The edge and hub of one process, stopped (positions saved) at exit.
final class NatsRunning {
    var edge: NatsEdge?
    var hub: NatsHub?

    func stop() {
        edge?.stop()
        hub?.stop()
    }
}

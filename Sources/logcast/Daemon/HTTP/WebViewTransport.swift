import Logging
import ReactiveUV
import ReactiveUVHTTP

/// A browser's WebSocket (`GET /ws`) as a logcast client: a ``ClientTransport`` handed to
/// ``LogcastServer/accept(_:identity:)`` like a TCP connection, so the web view gets the same
/// fan-out, bounded queue, slow-client policy and filter engine as every client.
///
/// ```
/// page ──text message: one command──► reads ──► ClientSession (GREP, STATS, SINCE)
///        PAUSE / RESUME / FILE: handled here
/// page ◄──JSON frames── write(bytes) ◄── LineFanOut (`<file>: <line>\n` and replies)
/// ```
///
/// **What the page sends**: one line-protocol command per text message, no line break in
/// it. `GREP <regex>`, `STATS` and `SINCE <seq|time>` go to the session as a TCP client's
/// would; `PAUSE`, `RESUME` and `FILE <path>` (empty: every file) are this transport's;
/// anything else (`LINE`, `SYNC`, `AUTH`…) is refused: a page only reads.
///
/// **What it receives**: JSON text messages.
/// `{"t":"hello","files":[…]}` first (the files this client may read; with a hub also
/// `"since"`, where its replay starts);
/// `{"t":"lines","lines":[["<file>","<text>"],…]}` for log lines, in order;
/// `{"t":"reply","text":"OK GREP …"}` for every other line the session says (`OK …`,
/// `ERR <reason>` such as Hyperscan's error for a bad pattern, `DROPPED <n>`, `STATS …`,
/// `HEARTBEAT …`, `BYE …`, and with a hub `SEQ <n>` after the lines of stream message n).
///
/// **With a hub** (`--from`) the view always reads through its own replay (`SINCE`, from
/// the page's `?since=` or from the time it connected), so every line it gets is followed
/// by its message's `SEQ`; a page that reconnects (logcast restarted) asks `?since=<n+1>`
/// and misses nothing stored meanwhile.
///
/// **Pause keeps the place.** A TCP client's `PAUSE` skips lines; the web view's pause
/// holds the fan-out's write in flight instead (the replies in it are sent at once, its
/// lines kept), so the fan-out sees a client that does not read: lines written meanwhile
/// wait in the shared blocks, within `--queue-limit`, and past it the `--slow-client`
/// policy applies exactly as to a TCP client whose socket is full (`DROPPED n`, or the
/// connection closed). `RESUME` sends the held lines and completes the write, and the rest
/// follows in order. Memory per paused client: one write plus the queue limit.
final class WebViewTransport: ClientTransport {
    // Main loop only.
    let ws: WebSocketConnection
    /// Files whose lines start with `<file>: `, longest first: how a line's file is found
    /// even when a path holds `: ` (other sources, e.g. a hub's, split at the first `: `).
    let knownFiles: [String]
    /// The file chosen with `FILE` (`nil`: every file).
    private(set) var chosenFile: String?

    /// The fan-out's write held while paused: its messages (lines and `SEQ`s), and its
    /// subscriber, completed on `RESUME` (the fan-out writes again only then).
    private struct HeldWrite {
        let messages: [String]
        let subscriber: Subscriber<Void>
    }

    /// The page's flow, one state (the client's lifecycle is its feed's, `ClientState`;
    /// this is what `PAUSE`, `RESUME` and a close change in the transport below it).
    private enum Flow {
        /// Writes go out as they come.
        case live
        /// `PAUSE`: the next write's replies go out, its lines are held, and so is the fan-out.
        case paused(held: HeldWrite?)
        /// Closed: a write fails, nothing more is sent.
        case closed
    }

    private var flow = Flow.live
    /// Replies this transport sends on its own (to `PAUSE`, `FILE`, a refused command) not
    /// yet flushed. They bypass the fan-out's queue, so they get a bound of their own: a
    /// page that sends commands and never reads the answers is closed past
    /// ``maxLocalRepliesInFlight``, as a TCP client is past `--queue-limit`.
    private var localRepliesInFlight = 0
    static let maxLocalRepliesInFlight = 256

    /// Words that start a session's reply rather than a log line.
    static let replyWords: Set<Substring> = ["OK", "ERR", "STATS", "HEARTBEAT", "DROPPED", "BYE", "HELP", "SEQ"]
    /// With a hub (`--from`): the `SINCE` this client starts with (the page's `?since=`, or
    /// the time it connected), sent to the session before anything the page sends.
    let initialSince: String?
    /// A hub follows each replayed message's lines with `SEQ <stream sequence>` for this
    /// client (NatsHub.swift), so the page can resume after a reconnect with `SINCE n+1`.
    var reportsSequences: Bool { initialSince != nil }
    /// Commands the page may send to the session.
    static let forwarded: Set<String> = ["GREP", "STATS", "SINCE", "HELP"]

    /// Where a page closed for not reading is said.
    let logger: Logger?

    init(ws: WebSocketConnection, knownFiles: [String], initialSince: String? = nil, logger: Logger? = nil) {
        self.ws = ws
        self.logger = logger
        self.knownFiles = knownFiles.sorted { $0.utf8.count > $1.utf8.count }
        self.initialSince = initialSince
    }

    /// `web view 127.0.0.1:51234`, as the log names clients.
    var description: String { "web view \(ws.transport)" }

    // MARK: Commands in

    /// The page's commands for the session, one per line (after the hub's `SINCE`, if
    /// any); completes however the WebSocket ends.
    var reads: Signal<[UInt8]> {
        let ws = self.ws
        let since = initialSince
        return Signal<[UInt8]>.create { [weak self] subscriber in
            // Before the page's own commands: the session leaves the shared feed for its
            // own replay before a shared line reaches it.
            if let since { subscriber.sendNext(Array("SINCE \(since)\n".utf8)) }
            return ws.messages.subscribe(
                next: { message in
                    guard let self else { return }
                    switch message {
                    case .binary: self.sendLocal(reply: "ERR binary messages are not commands")
                    case .text(let text):
                        if let command = self.command(text) { subscriber.sendNext(Array((command + "\n").utf8)) }
                    }
                },
                // However the WebSocket ends, the session sees the end of its input.
                error: { _ in subscriber.sendCompleted() },
                completed: { subscriber.sendCompleted() })
        }
    }

    /// Handles one message from the page; returns the command for the session, if any.
    ///
    /// - Parameter text: the message.
    /// - Returns: the text to hand to the session (`GREP`, `STATS`, `SINCE`, `HELP`), or
    ///   `nil` when handled here (`PAUSE`, `RESUME`, `FILE`, a refusal).
    func command(_ text: String) -> String? {
        if text.contains(where: { $0 == "\n" || $0 == "\r" }) {
            sendLocal(reply: "ERR one command per message (no line break)")
            return nil
        }
        let trimmed = text.drop(while: { $0 == " " })
        let verbEnd = trimmed.firstIndex(of: " ") ?? trimmed.endIndex
        let verb = trimmed[..<verbEnd].uppercased()
        let argument = String(trimmed[verbEnd...].dropFirst())
        switch verb {
        case "PAUSE":
            if case .live = flow { flow = .paused(held: nil) }
            sendLocal(reply: "OK PAUSE")
        case "RESUME":
            var held: HeldWrite?
            if case .paused = flow { held = move(to: .live) }
            sendLocal(reply: "OK RESUME")
            if let held { release(held) }
        case "FILE":
            chosenFile = argument.isEmpty ? nil : argument
            sendLocal(reply: "OK FILE \(argument)")
        case "":
            break
        default:
            if Self.forwarded.contains(verb) { return text }
            sendLocal(reply: "ERR \(verb.prefix(32)) is not available to the web view (GREP, PAUSE, RESUME, FILE, STATS, SINCE)")
        }
        return nil
    }

    // MARK: Lines out

    /// Sends `bytes` (whole lines from the fan-out) as JSON frames; completes once they are
    /// flushed, or, while paused, once `RESUME` has sent them.
    ///
    /// - Parameter bytes: lines and replies, each ending in `\n`.
    /// - Returns: a signal that completes when the fan-out may write again.
    func write(_ bytes: [UInt8]) -> Signal<Void> {
        let (messages, replies) = frames(bytes)
        return Signal<Void>.create { [weak self] subscriber in
            guard let self else {
                subscriber.sendError(WebSocketError.closed)
                return nil
            }
            switch self.flow {
            case .closed:
                subscriber.sendError(WebSocketError.closed)
                return nil
            case .paused:
                // Replies now; the lines wait for RESUME, and so does the fan-out.
                for reply in replies { self.sendLocal(message: reply) }
                self.flow = .paused(held: HeldWrite(messages: messages.filter { !replies.contains($0) }, subscriber: subscriber))
                return nil
            case .live:
                return self.send(messages, completing: subscriber)
            }
        }
    }

    /// Moves the flow to `next`; the write held while paused, if any.
    private func move(to next: Flow) -> HeldWrite? {
        defer { flow = next }
        if case .paused(let held) = flow { return held }
        return nil
    }

    /// Sends what was held while paused, then lets the fan-out go on.
    private func release(_ held: HeldWrite) {
        _ = send(held.messages, completing: held.subscriber)
    }

    /// Sends `messages` in order; `subscriber` (the fan-out's write) ends as the send does.
    private func send(_ messages: [String], completing subscriber: Subscriber<Void>) -> Disposable? {
        ws.send(Signal.fromArray(messages.map { WebSocketMessage.text($0) }))
            .subscribe(error: { subscriber.sendError($0) }, completed: { subscriber.sendCompleted() })
    }

    /// The JSON messages for `bytes` (whole lines), in order, and which of them are replies.
    /// Runs of log lines become one `lines` message; lines of other files than the chosen
    /// one are left out.
    ///
    /// - Parameter bytes: whole lines.
    /// - Returns: the messages, and the subset that are replies (sent at once while paused).
    func frames(_ bytes: [UInt8]) -> (messages: [String], replies: Set<String>) {
        Self.frames(bytes, knownFiles: knownFiles, chosenFile: chosenFile)
    }

    /// ``frames(_:)`` for the given known files (longest first) and chosen file, built from
    /// the bytes (WebViewFrames.swift: this runs once per line per page).
    static func frames(_ bytes: [UInt8], knownFiles: [String], chosenFile: String?) -> (messages: [String], replies: Set<String>) {
        var builder = WebViewFrameBuilder(knownFiles: knownFiles, chosenFile: chosenFile)
        builder.add(bytes)
        return builder.result
    }

    /// A log line's file and text; `nil` for a reply. `knownFiles` longest first.
    static func split(_ line: String, knownFiles: [String]) -> (String, String)? {
        for file in knownFiles where line.hasPrefix(file) {
            let rest = line.dropFirst(file.count)
            if rest.hasPrefix(": ") { return (file, String(rest.dropFirst(2))) }
        }
        let firstWord = line.prefix(while: { $0 != " " })
        if Self.replyWords.contains(firstWord) { return nil }
        guard let range = line.firstRange(of: ": ") else { return ("", line) }
        return (String(line[..<range.lowerBound]), String(line[range.upperBound...]))
    }

    /// The first message: the files the page may choose from (and a hub's start).
    ///
    /// - Parameter files: the files this client may read.
    func hello(files: [String]) {
        let list = files.map { "\"\(MetricsEndpoint.jsonEscape($0))\"" }.joined(separator: ",")
        let since = initialSince.map { #","since":""# + MetricsEndpoint.jsonEscape($0) + "\"" } ?? ""
        sendLocal(message: #"{"t":"hello","files":["# + list + "]" + since + "}")
    }

    private func sendLocal(reply text: String) {
        sendLocal(message: #"{"t":"reply","text":""# + MetricsEndpoint.jsonEscape(text) + "\"}")
    }

    private func sendLocal(message: String) {
        if case .closed = flow { return }
        guard localRepliesInFlight < Self.maxLocalRepliesInFlight else {
            // The session learns it from `reads`, which the close ends.
            logger?.warning("client \(self) not reading its replies: \(localRepliesInFlight) unsent; closing")
            close(code: 1008, reason: "not reading its replies")
            return
        }
        localRepliesInFlight += 1
        // A failed send means the WebSocket ended: the session learns it from `reads` too.
        _ = ws.send(text: message).subscribe(
            error: { [weak self] _ in self?.localRepliesInFlight -= 1 },
            completed: { [weak self] in self?.localRepliesInFlight -= 1 })
    }

    // MARK: Ending

    /// Closes the WebSocket with 1001 and completes once it has ended (bounded by its
    /// close timeout).
    ///
    /// - Returns: a signal that completes when the connection is closed.
    func shutdown() -> Signal<Void> {
        let ws = self.ws
        return Signal<Void>.create { subscriber in
            ws.close(code: 1001, reason: "logcast closed the view")
            return ws.closed.subscribe(error: { _ in subscriber.sendCompleted() }, completed: { subscriber.sendCompleted() })
        }
    }

    /// Closes at once (a held write fails); idempotent.
    func close() { close(code: 1000, reason: "") }

    /// Closes with `code` and `reason` in the close frame (the page shows the code).
    private func close(code: UInt16, reason: String) {
        if case .closed = flow { return }
        move(to: .closed)?.subscriber.sendError(WebSocketError.closed)
        // Bounded as the close handshake is (WebSocketOptions.closeTimeout); the transport
        // goes with it.
        ws.close(code: code, reason: reason)
    }
}

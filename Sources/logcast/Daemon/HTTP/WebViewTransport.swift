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
/// `{"t":"skipped","lines":N}` before a frame's lines when N older lines were passed over
/// (too fast to show: see below);
/// `{"t":"reply","text":"OK GREP …"}` for every other line the session says (`OK …`,
/// `ERR <reason>` such as Hyperscan's error for a bad pattern, `DROPPED <n>`, `STATS …`,
/// `HEARTBEAT …`, `BYE …`, and with a hub `SEQ <n>` after the lines of stream message n).
///
/// **With a hub** (`--from`) the view always reads through its own replay (`SINCE`, from
/// the page's `?since=` or from the time it connected), so every line it gets is followed
/// by its message's `SEQ`; a page that reconnects (logcast restarted) asks `?since=<n+1>`
/// and misses nothing stored meanwhile.
///
/// **A page is sent what it can show** (``WebViewPacer``). The fan-out hands the view its
/// shared blocks (``BlockClientTransport``), kept by reference until the next frame; a
/// frame goes out at most every ``frameInterval`` (100 ms: ten updates a second look live
/// to a person, and bound what a page costs however fast lines come) and holds the newest
/// lines since the last one, at most ``WebViewPage/maxLines`` (what the page keeps), after
/// `{"t":"skipped","lines":N}` for the older ones passed over. A line that comes when no
/// frame went out in the last 100 ms is sent at once (a trickle arrives line by line, with
/// no delay of ours); lines within 100 ms of a frame wait for the next, at most 125 ms
/// (delayed frames are timed on ``WebViewFrameCache/grid``, shared by every page, so that
/// pages sent the same lines share one encoding). While lines come faster than a page can
/// show (the last frame had to skip some), frames come every ``busyFrameInterval`` (0.5 s).
/// While a frame is being written, the fan-out's write is held, so a page that does not
/// read its frames is a slow client like any other (`DROPPED n`, or `--slow-client
/// disconnect`): skipped is "too fast to show", dropped stays "lost to a slow reader".
///
/// **Pause keeps the place.** A TCP client's `PAUSE` skips lines; the web view's pause
/// sends the lines that came before it, then holds the fan-out's write in flight (the
/// replies in it are sent at once, its lines kept), so the fan-out sees a client that does
/// not read: lines written meanwhile wait in the shared blocks, within `--queue-limit`,
/// and past it the `--slow-client` policy applies exactly as to a TCP client whose socket
/// is full (`DROPPED n`, or the connection closed). `RESUME` sends the held lines in a
/// frame at once (the newest ``WebViewPage/maxLines`` of them, the rest counted as
/// skipped) and completes the write, and the rest follows in order. Memory per paused
/// client: one write plus the queue limit.
final class WebViewTransport: BlockClientTransport {
    // Main loop only.
    let ws: WebSocketConnection
    /// Files whose lines start with `<file>: `, longest first: how a line's file is found
    /// even when a path holds `: ` (other sources, e.g. a hub's, split at the first `: `).
    let knownFiles: [String]
    /// The file chosen with `FILE` (`nil`: every file).
    private(set) var chosenFile: String?

    /// The page's flow, one state (the client's lifecycle is its feed's, `ClientState`;
    /// this is what `PAUSE`, `RESUME` and a close change in the transport below it).
    private enum Flow {
        /// Frames go out at the pace of ``frameInterval``.
        case live
        /// `PAUSE`: a write's replies go out, its lines wait, and so does the fan-out.
        case paused
        /// Closed: a write fails, nothing more is sent.
        case closed
    }

    private var flow = Flow.live
    /// At most one frame per this many seconds (see the type's discussion).
    static let frameInterval = 0.1
    /// After a frame that had to skip lines (they come faster than a page can show), the
    /// next one waits this long instead: the page shows the newest 2,000 lines either way,
    /// and a full frame, encoded and sent to each page, is what a page costs logcast under
    /// load (Benchmarks/README.md, "logcast's hidden costs"): two a second, not ten.
    static let busyFrameInterval = 0.5
    /// The last frame skipped lines (``busyFrameInterval`` applies).
    private var lastFrameSkipped = false
    /// What the page was written and not yet sent.
    private var pacer: WebViewPacer
    /// When the last frame went out (`nil`: none yet).
    private var lastFrame: SchedulerTime?
    /// The next frame's timer, while one is due (`frameTimed`).
    private var frameTimer: Disposable?
    private var frameTimed = false
    /// A frame is being written to the WebSocket.
    private var sending = false
    /// The fan-out's write, held while a frame is written or while paused (it writes again
    /// only when this completes).
    private var heldWrite: Subscriber<Void>?
    /// Lines passed over so far (too fast to show), for the log and tests.
    private(set) var linesSkipped = 0
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
        pacer = WebViewPacer(knownFiles: self.knownFiles, cache: .shared)
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
            if case .live = flow {
                // The lines that came before the PAUSE are shown first.
                if !sending && !pacer.isEmpty { sendFrame() }
                flow = .paused
            }
            sendLocal(reply: "OK PAUSE")
        case "RESUME":
            let wasPaused: Bool
            if case .paused = flow { wasPaused = true } else { wasPaused = false }
            if wasPaused { flow = .live }
            sendLocal(reply: "OK RESUME")
            if wasPaused && !sending {
                if pacer.isEmpty { releaseHeldWrite() } else { sendFrame() }
            }
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

    /// Takes `bytes` (whole lines and replies) as ``write(outbox:blocks:filter:access:)``
    /// takes a write's queued bytes.
    ///
    /// - Parameter bytes: lines and replies, each ending in `\n`.
    /// - Returns: a signal that completes when the fan-out may write again.
    func write(_ bytes: [UInt8]) -> Signal<Void> {
        write(outbox: bytes, blocks: [], filter: nil, access: nil)
    }

    /// Keeps a write for the next frame (``WebViewPacer``): completes at once, or, when a
    /// frame goes out now, once it is flushed, or, while paused, once `RESUME` has sent it.
    ///
    /// - Parameters:
    ///   - outbox: queued lines and replies.
    ///   - blocks: the shared blocks whose lines follow.
    ///   - filter: the page's pattern (`nil`: every line).
    ///   - access: the sources it may read.
    /// - Returns: a signal that completes when the fan-out may write again.
    func write(outbox: [UInt8], blocks: ArraySlice<LineBlock>, filter: PatternID?, access: SourceAccess?) -> Signal<Void> {
        Signal<Void>.create { [weak self] subscriber in
            guard let self else {
                subscriber.sendError(WebSocketError.closed)
                return nil
            }
            switch self.flow {
            case .closed:
                subscriber.sendError(WebSocketError.closed)
            case .paused:
                // Replies now (a SEQ waits with its lines); the lines wait for RESUME, and
                // so does the fan-out.
                if !outbox.isEmpty {
                    let (messages, replies) = Self.frames(outbox, knownFiles: self.knownFiles, chosenFile: self.chosenFile)
                    for message in messages where replies.contains(message) { self.sendLocal(message: message) }
                }
                self.pacer.add(outbox: outbox, blocks: blocks, filter: filter, access: access, chosen: self.chosenFile, repliesSent: true)
                self.heldWrite = subscriber
            case .live:
                self.pacer.add(outbox: outbox, blocks: blocks, filter: filter, access: access, chosen: self.chosenFile)
                if self.sending {
                    // A frame is on its way: the fan-out waits for the page to read it.
                    self.heldWrite = subscriber
                } else if self.frameDue {
                    self.heldWrite = subscriber
                    self.sendFrame()
                } else {
                    self.scheduleFrame()
                    subscriber.sendCompleted()
                }
            }
            return nil
        }
    }

    /// Whether a frame may go out now: none in the last ``frameInterval`` and none timed.
    private var frameDue: Bool {
        guard !frameTimed else { return false }
        guard let lastFrame else { return true }
        return lastFrame.distance(to: SchedulerTime.monotonicNow) >= interval
    }

    /// The least time between two frames now (``busyFrameInterval`` after a frame that
    /// skipped lines).
    private var interval: Double { lastFrameSkipped ? Self.busyFrameInterval : Self.frameInterval }

    /// Forgets the timed frame, if any.
    private func cancelFrameTimer() {
        frameTimer?.dispose()
        frameTimer = nil
        frameTimed = false
    }

    /// Times the next frame for ``frameInterval`` after the last one (once).
    private func scheduleFrame() {
        guard !frameTimed else { return }
        frameTimed = true
        // On a grid shared by every page (WebViewFrameCache.grid): pages sent the same lines
        // frame them in the same loop turn and share one encoding. So a frame comes one
        // interval to one interval plus a grid step after the last.
        let now = SchedulerTime.monotonicNow
        let due = lastFrame?.advanced(by: interval) ?? now
        let step = UInt64(WebViewFrameCache.grid * 1e9)
        let onGrid = SchedulerTime(nanoseconds: (due.nanoseconds + step - 1) / step * step)
        let delay = max(0, now.distance(to: onGrid))
        frameTimer = Scheduler.main.afterDelay(delay) { [weak self] in
            guard let self else { return }
            self.frameTimer = nil
            self.frameTimed = false
            guard case .live = self.flow, !self.sending else { return }
            self.sendFrame()
        }
    }

    /// Sends what waits as one frame (``WebViewPacer/frame()``); when it is flushed, the
    /// fan-out's held write completes and the next frame is timed if lines came meanwhile.
    private func sendFrame() {
        cancelFrameTimer()
        guard !pacer.isEmpty else {
            releaseHeldWrite()
            return
        }
        let (messages, skipped) = pacer.frame()
        linesSkipped += skipped
        lastFrameSkipped = skipped > 0
        lastFrame = SchedulerTime.monotonicNow
        sending = true
        _ = ws.send(Signal.fromArray(messages.map { WebSocketMessage.text($0) })).subscribe(
            error: { [weak self] _ in
                // The WebSocket ended: the session learns it from `reads`.
                guard let self else { return }
                self.sending = false
                self.close()
            },
            completed: { [weak self] in
                guard let self else { return }
                self.sending = false
                guard case .live = self.flow else { return }  // paused: RESUME releases it
                self.releaseHeldWrite()
                if !self.pacer.isEmpty { self.scheduleFrame() }
            })
    }

    /// Lets the fan-out write again.
    private func releaseHeldWrite() {
        let held = heldWrite
        heldWrite = nil
        held?.sendCompleted()
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
    ///
    /// - Parameters:
    ///   - line: the line, without its line feed.
    ///   - knownFiles: the followed files, longest first.
    ///   - fromBlock: it comes from a shared block: a log line, never a reply.
    /// - Returns: its file and text, or `nil` for a reply.
    static func split(_ line: String, knownFiles: [String], fromBlock: Bool = false) -> (String, String)? {
        for file in knownFiles where line.hasPrefix(file) {
            let rest = line.dropFirst(file.count)
            if rest.hasPrefix(": ") { return (file, String(rest.dropFirst(2))) }
        }
        let firstWord = line.prefix(while: { $0 != " " })
        if !fromBlock && Self.replyWords.contains(firstWord) { return nil }
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
        flow = .closed
        cancelFrameTimer()
        let held = heldWrite
        heldWrite = nil
        held?.sendError(WebSocketError.closed)
        // Bounded as the close handshake is (WebSocketOptions.closeTimeout); the transport
        // goes with it.
        ws.close(code: code, reason: reason)
    }
}

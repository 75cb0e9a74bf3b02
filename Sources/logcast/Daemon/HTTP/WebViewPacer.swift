/// What one web view page has been written and not yet sent, and the frame that sends it:
/// the newest lines, at most what the page shows, and a count of the lines passed over.
///
/// **Why.** A page keeps its last ``WebViewPage/maxLines`` lines, and a person reads a few
/// lines a second, not the hundred thousands logcast can ingest. Sending a page every line
/// cost logcast 0.4 µs a line a page (the JSON of every line, a WebSocket write per
/// write) against 0.2 µs for a line's whole ingest (Benchmarks/README.md, "logcast's hidden
/// costs"). So between frames a page costs next to nothing per line: the fan-out hands it
/// its shared blocks (``BlockClientTransport``), kept here by reference with the page's
/// filter and access, counted (for a page with no file chosen, a count per block, not per
/// line); older blocks that the newer ones already fill a frame without are let go at once
/// (counted as skipped). At the frame, only the lines it sends are read and encoded.
///
/// **What a frame holds**, in order: `{"t":"skipped","lines":N}` when N lines (of the
/// page's filter and file) were passed over since the last frame — the oldest ones, "too
/// fast to show" — then the newest lines as `lines` messages, with every reply in its
/// place (replies are never skipped; a hub's `SEQ` after its lines). So lines received +
/// skipped + `DROPPED` (lines the fan-out lost for a page that did not read) = lines
/// written, exactly; no line is sent twice or out of order.
///
/// Main loop only (``WebViewTransport`` owns it).
struct WebViewPacer {
    /// One write the page has not been sent yet, oldest first.
    enum Pending {
        /// Bytes the fan-out had queued (lines taken before a reply, replies, notices):
        /// parsed at the frame like the page's every line once was; `repliesSent` when its
        /// replies went out at once (the page was paused).
        case bytes([UInt8], chosen: String?, repliesSent: Bool)
        /// A shared block: the lines `filter` and `access` take, of the `chosen` file.
        case block(LineBlock, filter: PatternID?, access: SourceAccess?, chosen: String?)
    }

    /// The most lines one frame holds: what the page keeps.
    let maxLines: Int
    /// The followed files, longest first (``WebViewTransport/knownFiles``).
    let knownFiles: [String]

    private var pending: [Pending] = []
    /// How many lines each pending write holds for the page (same indexes as `pending`).
    private var counts: [Int] = []
    private var total = 0
    /// Lines of writes already let go since the last frame (too fast to show).
    private var skippedSinceFrame = 0

    init(maxLines: Int = WebViewPage.maxLines, knownFiles: [String]) {
        self.maxLines = maxLines
        self.knownFiles = knownFiles
    }

    /// Whether nothing waits for a frame.
    var isEmpty: Bool { pending.isEmpty && skippedSinceFrame == 0 }

    /// Lines waiting for the next frame (the skipped ones not included).
    var waitingLines: Int { total }

    /// Keeps one write: `outbox`, then the lines `filter` and `access` take from `blocks`;
    /// `chosen` is the file the page chose (`nil`: every file) when it was written.
    ///
    /// - Parameters:
    ///   - outbox: queued bytes (lines and replies), possibly empty.
    ///   - blocks: shared blocks, oldest first.
    ///   - filter: the page's pattern (`nil`: every line).
    ///   - access: the sources it may read (`nil`: every source).
    ///   - chosen: the page's file (`nil`: every file).
    ///   - repliesSent: the outbox's replies were sent already (paused).
    mutating func add(outbox: [UInt8], blocks: ArraySlice<LineBlock>, filter: PatternID?, access: SourceAccess?, chosen: String?,
                      repliesSent: Bool = false) {
        if !outbox.isEmpty {
            var counter = WebViewFrameBuilder(knownFiles: knownFiles, chosenFile: chosen)
            counter.countOnly = true
            counter.addLines(outbox)
            append(.bytes(outbox, chosen: chosen, repliesSent: repliesSent), lines: counter.shown)
        }
        for block in blocks {
            let lines: Int
            if let chosen {
                var counter = WebViewFrameBuilder(knownFiles: knownFiles, chosenFile: chosen)
                counter.countOnly = true
                block.forEachLine(for: filter, access: access) { counter.addBlockLine($0) }
                lines = counter.shown
            } else {
                lines = block.count(for: filter, access: access)
            }
            if lines > 0 { append(.block(block, filter: filter, access: access, chosen: chosen), lines: lines) }
        }
        // Blocks older than a frame's worth of newer lines will never be shown: let go now
        // (memory stays about one frame's worth). Queued bytes may hold replies: kept.
        while pending.count > 1, case .block = pending[0], total - counts[0] >= maxLines {
            skippedSinceFrame += counts[0]
            total -= counts[0]
            pending.removeFirst()
            counts.removeFirst()
        }
    }

    private mutating func append(_ write: Pending, lines: Int) {
        pending.append(write)
        counts.append(lines)
        total += lines
    }

    /// The next frame's messages (empty when nothing waits), and the lines it passed over;
    /// the pacer is empty after.
    ///
    /// - Returns: the messages in order, and how many lines were skipped.
    mutating func frame() -> (messages: [String], skipped: Int) {
        var toSkip = max(0, total - maxLines)
        let skipped = skippedSinceFrame + toSkip
        var builder = WebViewFrameBuilder(knownFiles: knownFiles, chosenFile: nil)
        for (write, count) in zip(pending, counts) {
            switch write {
            case .block(let block, let filter, let access, let chosen):
                if toSkip >= count {
                    toSkip -= count
                    continue
                }
                builder.choose(chosen)
                builder.toSkip = toSkip
                block.forEachLine(for: filter, access: access) { builder.addBlockLine($0) }
            case .bytes(let bytes, let chosen, let repliesSent):
                builder.choose(chosen)
                builder.toSkip = toSkip
                builder.repliesSent = repliesSent
                builder.addLines(bytes)
                builder.repliesSent = false
            }
            toSkip = builder.toSkip
        }
        var messages = builder.finish().messages
        if skipped > 0 { messages.insert(#"{"t":"skipped","lines":"# + String(skipped) + "}", at: 0) }
        pending = []
        counts = []
        total = 0
        skippedSinceFrame = 0
        return (messages, skipped)
    }
}

extension LineBlock {
    /// Calls `body` with each line `pattern` (`nil`: every line) and `access` (`nil`: every
    /// source) take, in order: `<source>: <text>` without its line feed.
    ///
    /// - Parameters:
    ///   - pattern: the client's pattern.
    ///   - access: the sources it may read.
    ///   - body: called once per line.
    func forEachLine(for pattern: PatternID?, access: SourceAccess?, _ body: (UnsafeBufferPointer<UInt8>) -> Void) {
        bytes.withUnsafeBufferPointer { all in
            func visit(_ line: Int) {
                let start = Int(lineStarts[line]), end = Int(ends[line]) - 1
                if let access {
                    let text = Int(textStarts[line])
                    guard access.allows(UnsafeBufferPointer(rebasing: all[start..<max(start, text - 2)])) else { return }
                }
                body(UnsafeBufferPointer(rebasing: all[start..<end]))
            }
            if let pattern {
                for line in matches[pattern] ?? [] { visit(Int(line)) }
            } else {
                for line in 0..<lineCount { visit(line) }
            }
        }
    }
}

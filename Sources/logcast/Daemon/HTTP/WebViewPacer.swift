import ReactiveUV

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

    /// Where frames other pages may share are kept (`nil`: none shared).
    let cache: WebViewFrameCache?

    init(maxLines: Int = WebViewPage.maxLines, knownFiles: [String], cache: WebViewFrameCache? = nil) {
        self.maxLines = maxLines
        self.knownFiles = knownFiles
        self.cache = cache
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
    /// Pages that are sent the same lines at the same time (the same blocks, filter, access
    /// and file: every page of a view with no filter, in a burst) share one encoding
    /// (``WebViewFrameCache``): the frame is encoded once and sent to each.
    ///
    /// - Returns: the messages in order, and how many lines were skipped.
    mutating func frame() -> (messages: [String], skipped: Int) {
        let skipped = skippedSinceFrame + max(0, total - maxLines)
        let key = cache == nil ? nil : WebViewFrameCache.Key(pending: pending, knownFiles: knownFiles, maxLines: maxLines)
        var messages: [String]
        if let key, let cached = cache?.messages(for: key) {
            messages = cached
        } else {
            messages = encode()
            if let key { cache?.keep(messages, for: key) }
        }
        if skipped > 0 { messages.insert(#"{"t":"skipped","lines":"# + String(skipped) + "}", at: 0) }
        pending = []
        counts = []
        total = 0
        skippedSinceFrame = 0
        return (messages, skipped)
    }

    /// The frame's lines and replies: the newest ``maxLines`` lines of what waits.
    private func encode() -> [String] {
        var toSkip = max(0, total - maxLines)
        var builder = WebViewFrameBuilder(knownFiles: knownFiles, chosenFile: nil)
        for (write, count) in zip(pending, counts) {
            switch write {
            case .block(let block, let filter, let access, let chosen):
                if toSkip >= count {
                    toSkip -= count
                    continue
                }
                builder.choose(chosen)
                if chosen == nil && access == nil {
                    // Every line it takes is shown: the skipped ones are passed over by index,
                    // not read (a block can hold tens of thousands of lines).
                    block.forEachLine(for: filter, access: nil, from: toSkip) { builder.addBlockLine($0) }
                    toSkip = 0
                    continue
                }
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
        return builder.finish().messages
    }
}

/// Frames encoded in the last few milliseconds, for other pages sent the same lines: encode
/// once, send to all (``WebViewPacer/frame()``).
///
/// Why it can hit: every page's delayed frame is timed on one grid
/// (``WebViewTransport/frameInterval`` after its last frame, rounded up to
/// ``WebViewFrameCache/grid``), and the fan-out writes every page in the same round, so
/// pages with the same choices hold the same blocks when their timers fire together. A hit
/// needs the very same blocks (by identity, held here so no identity is reused), filter,
/// access object, chosen file, known files and bound; queued bytes (replies) never share.
/// Entries live ``maxAge`` seconds, at most ``capacity`` of them: memory is a few frames'
/// blocks for a few milliseconds.
final class WebViewFrameCache {
    // Main loop only.
    /// The web view's (its entries let go by a timer on the main loop).
    nonisolated(unsafe) static let shared = WebViewFrameCache(purgesOnTimer: true)

    /// Whether a main-loop timer lets the blocks go when no frame comes (else only the
    /// next use does: for tests off the main loop).
    let purgesOnTimer: Bool

    init(purgesOnTimer: Bool) { self.purgesOnTimer = purgesOnTimer }

    /// What a frame was encoded from.
    struct Key {
        let blocks: [LineBlock]
        let filters: [PatternID?]
        let accesses: [SourceAccess?]
        let chosen: [String?]
        let knownFiles: [String]
        let maxLines: Int

        /// `nil` when some of it is queued bytes (not shared).
        init?(pending: [WebViewPacer.Pending], knownFiles: [String], maxLines: Int) {
            var blocks: [LineBlock] = [], filters: [PatternID?] = [], accesses: [SourceAccess?] = [], chosen: [String?] = []
            for write in pending {
                guard case .block(let block, let filter, let access, let file) = write else { return nil }
                blocks.append(block)
                filters.append(filter)
                accesses.append(access)
                chosen.append(file)
            }
            guard !blocks.isEmpty else { return nil }
            self.blocks = blocks
            self.filters = filters
            self.accesses = accesses
            self.chosen = chosen
            self.knownFiles = knownFiles
            self.maxLines = maxLines
        }

        func same(_ other: Key) -> Bool {
            blocks.count == other.blocks.count && maxLines == other.maxLines && filters == other.filters && chosen == other.chosen
                && zip(blocks, other.blocks).allSatisfy { $0 === $1 }
                && zip(accesses, other.accesses).allSatisfy { $0 === $1 }
                && knownFiles == other.knownFiles
        }
    }

    /// Seconds an encoding is offered to other pages.
    static let maxAge = 0.02
    static let capacity = 4
    /// Frames are timed on multiples of this (seconds), so that pages' timers fire together.
    static let grid = 0.025

    private var entries: [(key: Key, messages: [String], at: SchedulerTime)] = []
    private(set) var hits = 0
    private var purgeScheduled = false

    /// The messages encoded for `key` in the last ``maxAge`` seconds, if any.
    func messages(for key: Key) -> [String]? {
        purge()
        guard let entry = entries.first(where: { $0.key.same(key) }) else { return nil }
        hits += 1
        return entry.messages
    }

    /// Offers `messages` (encoded for `key`) to other pages for ``maxAge`` seconds.
    func keep(_ messages: [String], for key: Key) {
        purge()
        if entries.count >= Self.capacity { entries.removeFirst() }
        entries.append((key, messages, SchedulerTime.monotonicNow))
        schedulePurge()
    }

    /// Lets the blocks go soon after, whether or not another frame comes.
    private func schedulePurge() {
        guard purgesOnTimer, !purgeScheduled else { return }
        purgeScheduled = true
        _ = Scheduler.main.afterDelay(Self.maxAge * 2) { [weak self] in
            guard let self else { return }
            self.purgeScheduled = false
            self.purge()
            if !self.entries.isEmpty { self.schedulePurge() }
        }
    }

    private func purge() {
        let now = SchedulerTime.monotonicNow
        entries.removeAll { $0.at.distance(to: now) > Self.maxAge }
    }
}

extension LineBlock {
    /// Calls `body` with each line `pattern` (`nil`: every line) and `access` (`nil`: every
    /// source) take, in order: `<source>: <text>` without its line feed.
    ///
    /// - Parameters:
    ///   - pattern: the client's pattern.
    ///   - access: the sources it may read.
    ///   - first: how many of the lines `pattern` takes to pass over (before `access`:
    ///     callers with access rules pass 0 and count what `body` sees).
    ///   - body: called once per line.
    func forEachLine(for pattern: PatternID?, access: SourceAccess?, from first: Int = 0, _ body: (UnsafeBufferPointer<UInt8>) -> Void) {
        bytes.withUnsafeBufferPointer { all in
            func visit(_ line: Int) {
                if let access, !allows(line, access, in: all) { return }
                body(UnsafeBufferPointer(rebasing: all[Int(lineStarts[line])..<Int(ends[line]) - 1]))
            }
            if let pattern {
                let taken = matches[pattern] ?? []
                for line in taken[min(first, taken.count)...] { visit(Int(line)) }
            } else {
                for line in min(first, lineCount)..<lineCount { visit(line) }
            }
        }
    }
}

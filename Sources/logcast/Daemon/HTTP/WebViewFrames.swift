import Glibc

/// The web view's JSON frames built from the fan-out's bytes directly (``WebViewTransport/frames(_:knownFiles:chosenFile:)``).
///
/// **Why bytes.** Every line a web view is sent passes through here once per page, so its
/// cost is paid per line per page. Made as Strings (a `String` per line, `hasPrefix` and
/// `dropFirst` by Character, a `String` per escaped field, interpolation per line) it was
/// 84% of logcast's CPU with three pages attached: 27 µs a line against 0.2 µs for the
/// line's whole ingest and delivery to a TCP client (Benchmarks/README.md, "logcast's hidden
/// costs"). Here a line is found with `memchr`, its file by `memcmp`, and its JSON written
/// into the message's one byte array.
///
/// **Same frames as before.** A line of ASCII bytes is one Character per byte, so comparing
/// and splitting bytes is what the String path did; any other line (UTF-8 beyond ASCII,
/// or invalid bytes that decoding replaces with U+FFFD) takes the String path
/// (``WebViewTransport/split(_:knownFiles:)`` and ``MetricsEndpoint/jsonEscape(_:)``), so
/// the frames are the same in every case (WebViewFramesTests checks them against that
/// path).
///
/// **Pacing** (``WebViewTransport``'s frames, WebViewPacer.swift): the builder also passes
/// over the oldest ``toSkip`` lines it would show (counting them), can only count
/// (``countOnly``: how many lines a write holds for the page, ``shown``), and can leave out
/// replies already sent while the page was paused (``repliesSent``). Lines from the
/// fan-out's blocks (``addBlockLine(_:)``) are always lines: only queued bytes hold replies.
struct WebViewFrameBuilder {
    /// The known files' bytes, longest first (as ``WebViewTransport/knownFiles``).
    let known: [[UInt8]]
    let knownFiles: [String]
    private(set) var chosenFile: String?
    private(set) var chosen: [UInt8]?
    /// Every known file and the chosen one are ASCII. Otherwise every line takes the String
    /// path: String comparison is by canonical equivalence, under which a few non-ASCII
    /// scalars equal ASCII ones (U+212A KELVIN SIGN is `K`), and bytes would not see it.
    private(set) var namesASCII: Bool
    private let knownASCII: Bool

    private(set) var messages: [String] = []
    private(set) var replies: Set<String> = []
    /// Lines still to pass over before framing (the oldest of a frame that holds too many).
    var toSkip = 0
    /// Only count the lines that would be shown (``shown``); build no message.
    var countOnly = false
    /// Replies were sent already (while paused): only `SEQ`s, which wait with their lines.
    var repliesSent = false
    /// Lines that would be shown (skipped ones included): this page's lines, its file's.
    private(set) var shown = 0
    /// The `lines` message being built (empty: none open).
    private var run: [UInt8] = []

    private static let linesOpen = Array(#"{"t":"lines","lines":["#.utf8)
    private static let linesClose = Array("]}".utf8)
    private static let replyOpen = Array(#"{"t":"reply","text":""#.utf8)
    private static let replyClose = Array("\"}".utf8)
    private static let hexDigits = Array("0123456789abcdef".utf8)
    /// The words that start a reply (``WebViewTransport/replyWords``), as bytes.
    private static let replyWords = WebViewTransport.replyWords.map { Array($0.utf8) }

    init(knownFiles: [String], chosenFile: String?) {
        self.knownFiles = knownFiles
        known = knownFiles.map { Array($0.utf8) }
        knownASCII = known.allSatisfy { $0.allSatisfy { $0 < 0x80 } }
        namesASCII = knownASCII
        choose(chosenFile)
    }

    /// Lines from here on are shown only from `file` (`nil`: every file), as `FILE` chose
    /// when they were written.
    mutating func choose(_ file: String?) {
        guard file != chosenFile else { return }
        chosenFile = file
        chosen = file.map { Array($0.utf8) }
        namesASCII = knownASCII && (chosen?.allSatisfy { $0 < 0x80 } ?? true)
    }

    /// Frames every line of `bytes` (the last may lack its line feed), in order, and closes
    /// the last `lines` message.
    mutating func add(_ bytes: [UInt8]) {
        addLines(bytes)
        flushRun()
    }

    /// Frames every line of `bytes` (lines or replies), leaving the `lines` message open
    /// for the lines that follow.
    mutating func addLines(_ bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { all in
            guard let base = all.baseAddress else { return }
            var start = 0
            while start < all.count {
                let end = memchr(base + start, 10, all.count - start).map { UnsafePointer($0.assumingMemoryBound(to: UInt8.self)) - base } ?? all.count
                line(UnsafeBufferPointer(start: base + start, count: end - start), fromBlock: false)
                start = end + 1
            }
        }
    }

    /// Frames one line of a shared block (`<source>: <text>`, without its line feed): a log
    /// line whatever its first word.
    mutating func addBlockLine(_ line: UnsafeBufferPointer<UInt8>) {
        self.line(line, fromBlock: true)
    }

    /// The messages and which of them are replies (see ``WebViewTransport/frames(_:)``).
    var result: (messages: [String], replies: Set<String>) { (messages, replies) }

    /// Closes the open `lines` message; the messages and which are replies.
    mutating func finish() -> (messages: [String], replies: Set<String>) {
        flushRun()
        return (messages, replies)
    }

    /// Whether a line of the page's file is framed now (not only counted, nor passed over).
    private mutating func takes() -> Bool {
        shown += 1
        if countOnly { return false }
        if toSkip > 0 {
            toSkip -= 1
            return false
        }
        return true
    }

    private mutating func line(_ line: UnsafeBufferPointer<UInt8>, fromBlock: Bool) {
        guard namesASCII, line.allSatisfy({ $0 < 0x80 }) else {
            stringLine(String(decoding: line, as: UTF8.self), fromBlock: fromBlock)
            return
        }
        guard let (fileEnd, textStart) = split(line, fromBlock: fromBlock) else {
            reply(line)
            return
        }
        let file = UnsafeBufferPointer(rebasing: line[..<fileEnd])
        if let chosen, !file.elementsEqual(chosen) { return }
        guard takes() else { return }
        openLine()
        Self.escape(file, into: &run)
        run += [UInt8(ascii: "\""), UInt8(ascii: ","), UInt8(ascii: "\"")]
        Self.escape(UnsafeBufferPointer(rebasing: line[textStart...]), into: &run)
        run += [UInt8(ascii: "\""), UInt8(ascii: "]")]
    }

    /// An ASCII line's file (its end) and text (its start), as ``WebViewTransport/split(_:knownFiles:)``
    /// finds them; `nil` for a reply.
    private func split(_ line: UnsafeBufferPointer<UInt8>, fromBlock: Bool) -> (Int, Int)? {
        for file in known where line.count >= file.count + 2 {
            let same = file.isEmpty || file.withUnsafeBufferPointer { memcmp(line.baseAddress!, $0.baseAddress!, file.count) == 0 }
            if same && line[file.count] == UInt8(ascii: ":") && line[file.count + 1] == UInt8(ascii: " ") {
                return (file.count, file.count + 2)
            }
        }
        let wordEnd = line.firstIndex(of: UInt8(ascii: " ")) ?? line.count
        let word = UnsafeBufferPointer(rebasing: line[..<wordEnd])
        if !fromBlock && Self.replyWords.contains(where: { word.elementsEqual($0) }) { return nil }
        var i = 0
        while i + 1 < line.count {
            if line[i] == UInt8(ascii: ":") && line[i + 1] == UInt8(ascii: " ") { return (i, i + 2) }
            i += 1
        }
        return (0, 0)
    }

    private mutating func openLine() {
        if run.isEmpty { run = Self.linesOpen } else { run.append(UInt8(ascii: ",")) }
        run += [UInt8(ascii: "["), UInt8(ascii: "\"")]
    }

    private mutating func reply(_ line: UnsafeBufferPointer<UInt8>) {
        if dropsReply(isSEQ: line.starts(with: "SEQ ".utf8)) { return }
        flushRun()
        var message = Self.replyOpen
        Self.escape(line, into: &message)
        message += Self.replyClose
        let text = String(decoding: message, as: UTF8.self)
        messages.append(text)
        // A `SEQ` says the lines before it arrived: while paused it waits with them.
        if !line.starts(with: "SEQ ".utf8) { replies.insert(text) }
    }

    /// Whether a reply is left out: only counting, or sent already while paused (but a
    /// `SEQ`, which waits with its lines).
    private func dropsReply(isSEQ: Bool) -> Bool {
        countOnly || (repliesSent && !isSEQ)
    }

    /// A line that is not all ASCII: the String path, whose frames these must equal.
    private mutating func stringLine(_ line: String, fromBlock: Bool) {
        if let (file, text) = WebViewTransport.split(line, knownFiles: knownFiles, fromBlock: fromBlock) {
            if let chosenFile, chosenFile != file { return }
            guard takes() else { return }
            openLine()
            run += Array(MetricsEndpoint.jsonEscape(file).utf8)
            run += [UInt8(ascii: "\""), UInt8(ascii: ","), UInt8(ascii: "\"")]
            run += Array(MetricsEndpoint.jsonEscape(text).utf8)
            run += [UInt8(ascii: "\""), UInt8(ascii: "]")]
        } else {
            if dropsReply(isSEQ: line.hasPrefix("SEQ ")) { return }
            flushRun()
            let message = #"{"t":"reply","text":""# + MetricsEndpoint.jsonEscape(line) + "\"}"
            messages.append(message)
            if !line.hasPrefix("SEQ ") { replies.insert(message) }
        }
    }

    private mutating func flushRun() {
        guard !run.isEmpty else { return }
        run += Self.linesClose
        messages.append(String(decoding: run, as: UTF8.self))
        run = []
    }

    /// ASCII `bytes` JSON-escaped as ``MetricsEndpoint/jsonEscape(_:)`` escapes them (`"`,
    /// `\`, line feed, other controls as `\u00xx`), runs of plain bytes copied at once.
    static func escape(_ bytes: UnsafeBufferPointer<UInt8>, into out: inout [UInt8]) {
        var plainFrom = 0
        for i in 0..<bytes.count {
            let b = bytes[i]
            guard b < 0x20 || b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") else { continue }
            out += UnsafeBufferPointer(rebasing: bytes[plainFrom..<i])
            switch b {
            case UInt8(ascii: "\""): out += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case UInt8(ascii: "\\"): out += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case 10: out += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            default: out += [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hexDigits[Int(b >> 4)], hexDigits[Int(b & 15)]]
            }
            plainFrom = i + 1
        }
        out += UnsafeBufferPointer(rebasing: bytes[plainFrom...])
    }
}

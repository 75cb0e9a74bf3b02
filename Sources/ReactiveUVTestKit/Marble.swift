import ReactiveUV

/// Marble diagrams: time drawn as text, one character per frame.
///
/// - `-` one frame passes with nothing;
/// - any other character is a value (that character, as a `String`) in its frame;
/// - `|` completion, `#` an error (``MarbleError``);
/// - `(ab|)` several events in the same frame; the group takes one frame;
/// - `^` (hot signals only) marks the subscription point, frame 0; it takes no frame;
/// - spaces are ignored.
///
/// `"--a--b--|"` sends `a` at frame 2, `b` at frame 5 and completes at frame 8.
public enum Marble {
    /// One event of a parsed diagram: its frame and the event.
    public struct Entry: Equatable, Sendable {
        /// The frame, counted from the start of the diagram (or from `^`).
        public let frame: Int
        /// The event; values are one-character strings.
        public let event: Event<String>

        /// Creates an entry.
        public init(frame: Int, event: Event<String>) {
            self.frame = frame
            self.event = event
        }
    }

    /// Parses `diagram`; frames count from `^` when there is one (earlier events get
    /// negative frames), else from the first character.
    ///
    /// - Throws: ``MarbleError/malformed(_:)`` for an unclosed group, a nested group or two `^`.
    public static func parse(_ diagram: String) throws -> [Entry] {
        var entries: [Entry] = []
        var frame = 0
        var origin: Int?
        var group: [Event<String>]?
        for ch in diagram where ch != " " {
            let event: Event<String>?
            switch ch {
            case "(":
                if group != nil { throw MarbleError.malformed("nested group in \"\(diagram)\"") }
                group = []
                continue
            case ")":
                guard let g = group else { throw MarbleError.malformed("')' without '(' in \"\(diagram)\"") }
                entries += g.map { Entry(frame: frame, event: $0) }
                group = nil
                frame += 1
                continue
            case "^":
                if origin != nil { throw MarbleError.malformed("two '^' in \"\(diagram)\"") }
                origin = frame
                continue
            case "-": event = nil
            case "|": event = .completed
            case "#": event = .error(MarbleError.error)
            default: event = .next(String(ch))
            }
            if group != nil {
                if let event { group!.append(event) }
                continue
            }
            if let event { entries.append(Entry(frame: frame, event: event)) }
            frame += 1
        }
        if group != nil { throw MarbleError.malformed("unclosed group in \"\(diagram)\"") }
        let shift = origin ?? 0
        return entries.map { Entry(frame: $0.frame - shift, event: $0.event) }
    }

    /// Draws entries as a diagram: one character per frame from frame 0 to the last event.
    ///
    /// - Parameter entries: events with their frames (negative frames are dropped).
    public static func render(_ entries: [Entry]) -> String {
        var byFrame: [Int: [Event<String>]] = [:]
        for e in entries where e.frame >= 0 { byFrame[e.frame, default: []].append(e.event) }
        guard let last = byFrame.keys.max() else { return "" }
        var out = ""
        for f in 0...last {
            guard let events = byFrame[f] else {
                out += "-"
                continue
            }
            let symbols = events.map(symbol)
            out += symbols.count == 1 ? symbols[0] : "(" + symbols.joined() + ")"
        }
        return out
    }

    static func symbol(_ event: Event<String>) -> String {
        switch event {
        case .next(let v): return v
        case .error: return "#"
        case .completed: return "|"
        }
    }

    /// A diagram without the frames before `^` and without spaces, for comparisons.
    static func normalize(_ diagram: String) -> String {
        (try? render(parse(diagram))) ?? diagram
    }
}

/// Errors of marble diagrams.
public enum MarbleError: Error, Equatable, Sendable {
    /// The error a `#` stands for.
    case error
    /// The diagram could not be read.
    case malformed(String)
}

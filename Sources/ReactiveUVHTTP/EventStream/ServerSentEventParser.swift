/// Turns `text/event-stream` bytes into events, as a browser's `EventSource` does (HTML
/// §9.2.6): lines end in CRLF, LF or CR; `data:` lines join with `\n`; an empty line
/// dispatches; comments and unknown fields are ignored; the last id is kept across events.
///
/// Bounded: a line longer than `maxLineBytes`, or an event's data longer than
/// `maxEventBytes`, is an error rather than unbounded memory.
public struct ServerSentEventParser: Sendable {
    /// Why a stream was refused.
    public enum Failure: Error, Sendable, Equatable {
        /// A line or an event was over its limit.
        case tooLong(limit: Int)
    }

    private var line: [UInt8] = []
    private var data: [UInt8] = []
    private var hasData = false
    private var event: String?
    private var retry: Int?
    private var sawCR = false
    /// The last id seen (kept across events, as `EventSource` keeps it for reconnection).
    public private(set) var lastEventID: String?
    /// The last `retry:` the server announced, in milliseconds (kept across events).
    public private(set) var reconnectionTime: Int?
    let maxLineBytes: Int
    let maxEventBytes: Int

    /// A parser with limits.
    ///
    /// - Parameters:
    ///   - maxLineBytes: the longest line accepted.
    ///   - maxEventBytes: the most data in one event.
    public init(maxLineBytes: Int = 64 * 1024, maxEventBytes: Int = 1 << 20) {
        self.maxLineBytes = maxLineBytes
        self.maxEventBytes = maxEventBytes
    }

    /// Parses the next bytes of the stream.
    ///
    /// - Parameter bytes: bytes as read, split anywhere.
    /// - Returns: the events completed by these bytes, in order.
    /// - Throws: ``Failure/tooLong(limit:)`` past a limit.
    public mutating func parse(_ bytes: [UInt8]) throws -> [ServerSentEvent] {
        var events: [ServerSentEvent] = []
        for b in bytes {
            if b == 10 && sawCR {
                sawCR = false
                continue
            }
            sawCR = b == 13
            if b == 10 || b == 13 {
                if let e = try endLine() { events.append(e) }
            } else {
                line.append(b)
                if line.count > maxLineBytes { throw Failure.tooLong(limit: maxLineBytes) }
            }
        }
        return events
    }

    private mutating func endLine() throws -> ServerSentEvent? {
        defer { line.removeAll(keepingCapacity: true) }
        if line.isEmpty {
            defer {
                data.removeAll(keepingCapacity: true)
                hasData = false
                event = nil
                retry = nil
            }
            guard hasData else { return nil }
            return ServerSentEvent(data: String(decoding: data, as: UTF8.self), id: lastEventID, event: event, retry: retry)
        }
        if line[0] == 58 { return nil }  // ":" comment (heartbeats)
        var name = line[...]
        var value = line[line.endIndex...]
        if let colon = line.firstIndex(of: 58) {
            name = line[..<colon]
            value = line[(colon + 1)...]
            if value.first == 32 { value = value.dropFirst() }
        }
        switch String(decoding: name, as: UTF8.self) {
        case "data":
            if hasData { data.append(10) }
            data.append(contentsOf: value)
            hasData = true
            if data.count > maxEventBytes { throw Failure.tooLong(limit: maxEventBytes) }
        case "event":
            event = String(decoding: value, as: UTF8.self)
        case "id":
            if !value.contains(0) { lastEventID = String(decoding: value, as: UTF8.self) }
        case "retry":
            if !value.isEmpty, value.count <= 18, value.allSatisfy({ $0 >= 48 && $0 <= 57 }) {
                retry = Int(String(decoding: value, as: UTF8.self))
                reconnectionTime = retry
            }
        default:
            break
        }
        return nil
    }
}

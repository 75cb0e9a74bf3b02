/// One server-sent event (the `text/event-stream` format of the HTML standard, §9.2).
public struct ServerSentEvent: Sendable, Equatable {
    /// The event's id; a client reconnecting sends the last one it saw as `Last-Event-ID`.
    public var id: String?
    /// The event type (`event:`); `nil` for the default, `message`.
    public var event: String?
    /// The data; may hold several lines.
    public var data: String
    /// Milliseconds a client should wait before reconnecting (`retry:`).
    public var retry: Int?

    /// An event.
    ///
    /// - Parameters:
    ///   - data: the data; may hold several lines.
    ///   - id: the id.
    ///   - event: the type.
    ///   - retry: the reconnection delay in milliseconds.
    public init(data: String, id: String? = nil, event: String? = nil, retry: Int? = nil) {
        self.data = data
        self.id = id
        self.event = event
        self.retry = retry
    }

    /// The event as written on the wire, ending with its empty line.
    ///
    /// Line breaks inside `data` become several `data:` lines (the receiver joins them
    /// back with `\n`); CR, LF and NUL in `id` and `event`, which would end the field and
    /// start another, are removed, so no value can inject a field or an event.
    public var encoded: [UInt8] {
        var out: [UInt8] = []
        func field(_ name: String, _ value: Substring) {
            out.append(contentsOf: name.utf8)
            out.append(contentsOf: ": ".utf8)
            out.append(contentsOf: value.utf8)
            out.append(10)
        }
        func clean(_ s: String) -> Substring { Substring(s.filter { $0 != "\r" && $0 != "\n" && $0 != "\r\n" && $0 != "\0" }) }
        if let event { field("event", clean(event)) }
        if let id { field("id", clean(id)) }
        if let retry { field("retry", Substring(String(retry))) }
        // Split on CRLF, CR and LF alike: a Character "\r\n" is one element in Swift.
        for line in data.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r" || $0 == "\r\n" }) {
            field("data", line)
        }
        out.append(10)
        return out
    }
}

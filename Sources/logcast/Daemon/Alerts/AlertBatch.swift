import Glibc

/// One matching line on its way to an alert's receiver.
struct AlertEvent {
    /// Where the line came from: the file's path (or `syslog <sender>`, a forwarder's tag).
    let file: String
    /// The line's text, without its line feed.
    let line: String
    /// When logcast read it, RFC 3339 in UTC with milliseconds.
    let time: String
}

/// The events of one POST, with the key every attempt at it carries.
///
/// The body is encoded once, when the batch is made: a retry sends the very same bytes
/// under the very same `Idempotency-Key`, so a receiver that already took the first attempt
/// (whose answer was lost) recognises the retry as the same delivery.
struct AlertBatch {
    /// The `Idempotency-Key` header: unique per batch, the same on each of its retries.
    let key: String
    let count: Int
    /// `{"alert":NAME,"events":[{"file":…,"line":…,"time":…},…]}`.
    let body: [UInt8]

    init(alert: String, key: String, events: [AlertEvent]) {
        self.key = key
        count = events.count
        var json = #"{"alert":""# + MetricsEndpoint.jsonEscape(alert) + #"","events":["#
        for (i, event) in events.enumerated() {
            if i > 0 { json += "," }
            json += #"{"file":""# + MetricsEndpoint.jsonEscape(event.file) + #"","line":""#
                + MetricsEndpoint.jsonEscape(event.line) + #"","time":""# + event.time + #""}"#
        }
        json += "]}"
        body = Array(json.utf8)
    }

    /// The wall clock now as RFC 3339 (`2026-11-28T01:02:03.456Z`): the time of the lines
    /// of one block, which were read in the same loop turn.
    static func now() -> String {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        var seconds = spec.tv_sec
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        let millis = Int(spec.tv_nsec / 1_000_000)
        let fraction = millis < 10 ? "00\(millis)" : millis < 100 ? "0\(millis)" : "\(millis)"
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T"
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)).\(fraction)Z"
    }
}

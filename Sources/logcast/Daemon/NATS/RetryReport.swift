import ReactiveUV

/// What a retry loop says of its failures: the first, a different one, or the same one
/// once a minute (with how many attempts failed meanwhile), never every attempt.
struct RetryReport {
    /// How long the same error goes unsaid.
    static let repeatEvery: Double = 60
    private(set) var attempts = 0
    private var said: (text: String, at: SchedulerTime)?

    /// An attempt failed with `text`: the line to log, if any.
    mutating func failed(_ text: String, now: SchedulerTime) -> String? {
        attempts += 1
        if let said, said.text == text, now < said.at.advanced(by: Self.repeatEvery) { return nil }
        let first = said == nil
        said = (text, now)
        return first ? "\(text); retrying (every 2 s at most; said again once a minute while it lasts)"
                     : "\(text); still retrying (\(attempts) attempts failed)"
    }

    /// An attempt succeeded: what to add to the "connected" line (empty without failures).
    mutating func succeeded() -> String {
        defer { self = RetryReport() }
        return attempts == 0 ? "" : " after \(attempts) failed attempt\(attempts == 1 ? "" : "s")"
    }
}

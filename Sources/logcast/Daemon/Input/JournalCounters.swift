/// The journal's counters, in `STATS` and `/metrics` (main loop only).
final class JournalCounters: @unchecked Sendable {
    // Thread-safety: main loop only.
    /// Entries read from the journal (served or lost).
    var entries = 0
    /// Entries left out: their line was over the 1 MiB limit (logged).
    var lost = 0
    /// Times a saved cursor could not be resumed from (corrupt, or its entry gone), so the
    /// journal was started at its end instead (logged).
    var cursorResets = 0
    /// On a NATS edge (JournalEdge): entries JetStream acknowledged, and of those the ones
    /// it already held (a resend).
    var shipping = false
    var shipped = 0
    var shippedDuplicates = 0

    /// ` journal_entries=… journal_lost=… journal_cursor_resets=…`, and on an edge
    /// ` journal_shipped=… journal_shipped_duplicates=…`.
    var statsFields: String {
        let shipping = self.shipping ? " journal_shipped=\(shipped) journal_shipped_duplicates=\(shippedDuplicates)" : ""
        return " journal_entries=\(entries) journal_lost=\(lost) journal_cursor_resets=\(cursorResets)" + shipping
    }
}

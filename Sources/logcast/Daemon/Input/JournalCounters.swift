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

    /// ` journal_entries=… journal_lost=… journal_cursor_resets=…`.
    var statsFields: String {
        " journal_entries=\(entries) journal_lost=\(lost) journal_cursor_resets=\(cursorResets)"
    }
}

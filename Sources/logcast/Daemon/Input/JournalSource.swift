import CSystemd
import Glibc
import Logging
import ReactiveUV

/// The systemd journal as a source of lines (`--journal`, `--journal-directory`), read
/// through libsystemd's `sd_journal` on logcast's own loop (not a `journalctl` child).
///
/// ```
/// sd_journal_open / _open_directory, matches added (JournalMatch)
///   start: seek (after the saved cursor, or the end) ─► drain
/// sd_journal_get_fd ──Descriptor.readiness (uv_poll_t)──┐
/// sd_journal_get_timeout ──a timer, re-armed each time──┴─► sd_journal_process ─► drain
/// drain: sd_journal_next until 0 (at most entriesPerTurn, then the rest next turn)
///   each entry ─► JournalLine "UNIT: MESSAGE" ─► deliver (the fan-out, as "journal: …")
///   then the cursor of the last one ─► JournalCursor (--state-dir)
///   (on a NATS edge: each entry and its cursor ─► ship, JournalEdge.swift, which saves
///   the cursor once JetStream acknowledged the entry and may pause the reading)
/// ```
///
/// **Threads.** An `sd_journal` must be used from one thread only: every call here is made
/// on the main loop (readiness, the timer and the next turn's drain all run there).
///
/// **Where it starts.** After the saved cursor when there is one: `sd_journal_seek_cursor`,
/// `sd_journal_next`, and `sd_journal_test_cursor` says whether that entry is the one
/// served last (then it is skipped, and the next is the first served). A cursor file that is
/// not a cursor, or whose entry is not in the journal (its files removed or rotated away,
/// another journal, other matches), is said as a warning, counted, and the journal starts
/// at its end, as a FILE does. Without a cursor: at the end, only new entries (an empty
/// journal's end is its start: every entry that comes is new).
///
/// **Bounded.** A turn reads at most ``entriesPerTurn`` entries, so a backlog of millions
/// does not hold the loop; a field is read at most ``maxLineBytes`` (+ a little) bytes far
/// (`sd_journal_set_data_threshold`), and an entry whose line would pass ``maxLineBytes``
/// (1 MiB, a FILE's limit) is left out, counted and logged, and the journal goes on.
final class JournalSource {
    // Thread-safety: main loop only (sd_journal is not thread-safe).
    private var journal: OpaquePointer?
    /// What is followed, for messages: "the system journal", "journal files in DIR".
    let name: String
    let cursor: JournalCursor?
    let counters = JournalCounters()
    let logger: Logger
    /// Gets each entry's line (`UNIT: MESSAGE`, no final `\n`).
    let deliver: ([UInt8]) -> Void
    /// Told why the journal can be read no more (an error of sd_journal_process or _next).
    let failed: (String) -> Void
    /// On a NATS edge (JournalEdge.swift): gets each entry's line and cursor instead of
    /// `deliver`, and answers whether reading may go on (false: ``pause()``d until
    /// ``resume()``). The cursor is then the edge's to save, once JetStream acknowledged
    /// the entry; this source only reads the saved one at start (and writes the end it
    /// starts from when it could not use it).
    var ship: (([UInt8], String) -> Bool)?
    /// Reading stopped by `ship` until ``resume()``.
    private var paused = false

    /// The most entries read in one loop turn.
    static let entriesPerTurn = 2048
    /// The longest line served (a FILE's limit, ``LineBuffer/defaultMaxLength``).
    static let maxLineBytes = LineBuffer.defaultMaxLength

    private var watch: Disposable?
    private var timer: Disposable?
    private var drainScheduled = false
    private var started = false
    private var stopped = false
    /// A failed cursor save was said (said again only after a save worked).
    private var saveFailing = false

    /// Opens the journal and adds the matches; reading starts with ``start()``.
    ///
    /// - Parameters:
    ///   - directory: `--journal-directory` (as `journalctl -D`), or nil for the local
    ///     system's journal (`SD_JOURNAL_LOCAL_ONLY`, what `journalctl` reads).
    ///   - matches: journalctl-style matches (none: every entry).
    ///   - cursor: where the cursor is kept (`--state-dir`), or nil.
    ///   - logger: logcast's logger.
    ///   - deliver: gets each entry's line.
    ///   - failed: told when the journal can no longer be read.
    /// - Throws: ``JournalError`` (opening, a match libsystemd refuses, no descriptor).
    init(directory: String?, matches: [JournalMatch], cursor: JournalCursor?, logger: Logger,
         deliver: @escaping ([UInt8]) -> Void, failed: @escaping (String) -> Void) throws {
        name = directory.map { "journal files in \($0)" } ?? "the system journal"
        self.cursor = cursor
        self.logger = logger
        self.deliver = deliver
        self.failed = failed
        var opened: OpaquePointer?
        let rc = directory.map { sd_journal_open_directory(&opened, $0, 0) }
            ?? sd_journal_open(&opened, LOGCAST_SD_JOURNAL_LOCAL_ONLY)
        guard rc >= 0, let opened else {
            throw JournalError(directory.map { "--journal-directory \($0)" } ?? "--journal", "cannot open \(name)", rc)
        }
        journal = opened
        for match in matches {
            let r: Int32
            switch match {
            case .or: r = sd_journal_add_disjunction(opened)
            case .field(let text): r = text.withCString { sd_journal_add_match(opened, $0, UInt(strlen($0))) }
            }
            if r < 0 {
                close()
                throw JournalError("--journal", "match '\(match)' refused", r)
            }
        }
        // Fields past this are not decompressed whole (an entry that large is left out).
        _ = sd_journal_set_data_threshold(opened, UInt(Self.maxLineBytes + 64))
        // The descriptor first, before any reading: its inotify watches start here, so
        // nothing written between now and the first drain goes unnoticed.
        let fd = sd_journal_get_fd(opened)
        if fd < 0 {
            close()
            throw JournalError(directory.map { "--journal-directory \($0)" } ?? "--journal", "cannot watch \(name)", fd)
        }
    }

    deinit { close() }

    /// Seeks where reading starts (after the saved cursor, or the end), then reads whatever
    /// is there and follows the journal from now on. Once; later calls do nothing.
    func start() {
        guard !started, !stopped, let journal else { return }
        started = true
        let from = seek(journal)
        logger.notice("journal: following \(name) \(from)")
        let fd = sd_journal_get_fd(journal)
        var events: PollEvents = []
        let wanted = sd_journal_get_events(journal)
        if wanted < 0 || wanted & Int32(POLLIN) != 0 { events.insert(.readable) }
        if wanted > 0 && wanted & Int32(POLLOUT) != 0 { events.insert(.writable) }
        watch = Descriptor.readiness(fd, events: events).subscribe(
            next: { [weak self] _ in self?.wake() },
            error: { [weak self] error in self?.fail("cannot watch the journal's descriptor: \(error)") })
        drain()
        armTimer()
    }

    /// Stops following and closes the journal (the server's `running` does it at exit).
    func stop() {
        guard !stopped else { return }
        stopped = true
        close()
    }

    private func close() {
        // The watch before the descriptor it watches (sd_journal_close closes it).
        watch?.dispose()
        watch = nil
        timer?.dispose()
        timer = nil
        if let journal { sd_journal_close(journal) }
        journal = nil
    }

    /// Places the journal before the first entry to serve; says from where.
    private func seek(_ journal: OpaquePointer) -> String {
        guard let cursor else { return seekEnd(journal) }
        switch cursor.load() {
        case .none:
            let from = seekEnd(journal)
            saveCursor()  // the end as it was: entries written while logcast is down are served after a restart
            return from
        case .corrupt(let why):
            return reset(journal, "\(cursor.path) is not a journal cursor (\(StateDirectory.printable(why)))")
        case .cursor(let text):
            guard sd_journal_seek_cursor(journal, text) >= 0 else {
                return reset(journal, "\(cursor.path) holds no cursor libsystemd accepts ('\(StateDirectory.printable(text))')")
            }
            guard sd_journal_next(journal) > 0, sd_journal_test_cursor(journal, text) > 0 else {
                return reset(journal, "the entry of the cursor saved in \(cursor.path) is not in \(name) (its files were removed or rotated away, or the matches changed)")
            }
            return "after the cursor saved in \(cursor.path)"
        }
    }

    /// A saved cursor that cannot be resumed from: said, counted, and the end instead.
    private func reset(_ journal: OpaquePointer, _ why: String) -> String {
        counters.cursorResets += 1
        logger.warning("journal: \(why); starting at the end of \(name)")
        let from = seekEnd(journal)
        saveCursor()
        return from
    }

    /// After the last entry there is now, so the next one read is the first written from
    /// now on. With no entry at all, at the head: whatever is written later is new (at the
    /// tail of an empty journal sd_journal skips the first entries of a file that appears).
    private func seekEnd(_ journal: OpaquePointer) -> String {
        _ = sd_journal_seek_tail(journal)
        if sd_journal_previous(journal) > 0 { return "from its end" }
        _ = sd_journal_seek_head(journal)
        return "from its start (it has no entry yet)"
    }

    /// The descriptor was ready, or the timeout passed: libsystemd takes in what changed
    /// (appended entries, files added or removed), then the new entries are read.
    private func wake() {
        guard let journal, !stopped else { return }
        let r = sd_journal_process(journal)
        if r < 0 {
            fail("sd_journal_process: \(String(cString: strerror(-r)))")
            return
        }
        if r == LOGCAST_SD_JOURNAL_INVALIDATE { logger.debug("journal: files were added to or removed from \(name)") }
        drain()
        armTimer()
    }

    /// Reads entries until there are none (or ``entriesPerTurn``: the rest in the next turn),
    /// serves them, then saves the cursor of the last one.
    private func drain() {
        guard let journal, !stopped, !paused else { return }
        var read = 0
        while read < Self.entriesPerTurn {
            let r = sd_journal_next(journal)
            if r < 0 {
                if read > 0 && ship == nil { saveCursor() }
                fail("sd_journal_next: \(String(cString: strerror(-r)))")
                return
            }
            if r == 0 { break }
            read += 1
            if !take(journal) {
                paused = true
                break
            }
        }
        guard read > 0 else { return }
        if ship == nil { saveCursor() }
        if read == Self.entriesPerTurn && !drainScheduled {
            drainScheduled = true
            _ = Scheduler.main.schedule { [weak self] in
                self?.drainScheduled = false
                self?.drain()
            }
        }
    }

    /// Reading starts again after a ``ship`` said to stop (at once, from the entry after
    /// the last one shipped).
    func resume() {
        guard paused else { return }
        paused = false
        drain()
    }

    /// Serves the current entry (or counts it lost when its line is too long); whether
    /// reading may go on (only a ``ship`` says no).
    private func take(_ journal: OpaquePointer) -> Bool {
        counters.entries += 1
        // A field's bytes are valid only until the next sd_journal_get_data: the unit is
        // copied before MESSAGE is asked for.
        var unit: [UInt8] = []
        for field in JournalLine.unitFields {
            if let value = Self.value(journal, field), !value.isEmpty {
                unit = Array(value.prefix(Self.maxLineBytes + 1))
                break
            }
        }
        let message = Self.value(journal, "MESSAGE") ?? UnsafeRawBufferPointer(start: nil, count: 0)
        // At most about 2 MiB is made here: the threshold bounds both fields.
        let line = JournalLine.make(unit: unit, message: message)
        guard line.count <= Self.maxLineBytes else {
            counters.lost += 1
            let who = unit.isEmpty ? "journal" : StateDirectory.printable(String(decoding: unit.prefix(256), as: UTF8.self))
            logger.warning("journal: an entry of \(who) is \(line.count) bytes or more, over the \(Self.maxLineBytes)-byte limit: left out")
            return true
        }
        guard let ship else {
            deliver(line)
            return true
        }
        guard let cursor = Self.cursor(journal) else {
            fail("sd_journal_get_cursor failed for an entry read")
            return false
        }
        return ship(line, cursor)
    }

    /// The current entry's cursor.
    private static func cursor(_ journal: OpaquePointer) -> String? {
        var text: UnsafeMutablePointer<CChar>?
        guard sd_journal_get_cursor(journal, &text) >= 0, let text else { return nil }
        defer { free(text) }
        return String(cString: text)
    }

    /// The value of `field` in the current entry (after `FIELD=`), valid until the next
    /// sd_journal_get_data; nil when the entry has no such field.
    private static func value(_ journal: OpaquePointer, _ field: String) -> UnsafeRawBufferPointer? {
        var data: UnsafeRawPointer?
        // __SIZE_TYPE__ in CSystemd.h (no <stddef.h> there) comes to Swift as UInt.
        var length: UInt = 0
        guard sd_journal_get_data(journal, field, &data, &length) >= 0, let data else { return nil }
        let skip = field.utf8.count + 1
        guard Int(length) >= skip else { return nil }
        return UnsafeRawBufferPointer(start: data + skip, count: Int(length) - skip)
    }

    /// Saves the cursor of the current entry (with `--state-dir`).
    private func saveCursor() {
        guard let cursor, let journal, let text = Self.cursor(journal) else { return }
        cursor.save(text, failing: &saveFailing, logger: logger, consequence: "a restart would serve entries again")
    }

    /// Arms the timer libsystemd asks for (`sd_journal_get_timeout`: it polls files on
    /// file systems inotify cannot watch); none when it asks for none.
    private func armTimer() {
        timer?.dispose()
        timer = nil
        guard let journal, !stopped else { return }
        var deadline: UInt = 0
        guard sd_journal_get_timeout(journal, &deadline) >= 0, deadline != UInt.max else { return }
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let nowMicroseconds = UInt(now.tv_sec) * 1_000_000 + UInt(now.tv_nsec) / 1000
        // At least a millisecond: a deadline already passed must not spin the loop.
        let delay = max(0.001, deadline > nowMicroseconds ? Double(deadline - nowMicroseconds) / 1e6 : 0)
        timer = Scheduler.main.afterDelay(delay) { [weak self] in self?.wake() }
    }

    private func fail(_ reason: String) {
        guard !stopped else { return }
        stop()
        failed(reason)
    }
}

/// Why the journal could not be opened or followed: `OPTION: what: errno text`.
struct JournalError: Error, CustomStringConvertible {
    let description: String

    /// - Parameters:
    ///   - option: the option the user gave (`--journal`, `--journal-directory DIR`).
    ///   - what: what failed.
    ///   - code: libsystemd's negative errno.
    init(_ option: String, _ what: String, _ code: Int32) {
        description = "\(option): \(what): \(String(cString: strerror(-code)))"
    }
}

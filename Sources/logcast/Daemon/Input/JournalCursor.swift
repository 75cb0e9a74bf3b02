import Glibc
import Logging
import ReactiveUV

/// The journal's cursor kept in the state directory (`--state-dir`), as file positions are:
/// `DIR/journal-cursor`, one line, the cursor of the last entry served (on a NATS edge: the
/// last entry JetStream acknowledged, saved by JournalEdge; the rest of this note is about
/// serving).
///
/// **When it is written, and how.** After every batch of entries handed to the fan-out
/// (one loop turn's worth), before the fan-out writes them to a client (its pump runs in a
/// later turn): a client never sees an entry whose cursor is not saved, so a restart gives
/// no entry twice; and the cursor never passes an entry not handed to the fan-out, so a
/// restart skips none. (A kill between the save and the pump loses that batch for the
/// clients, who are live: as a FILE's, lines are not held for nobody.) Written whole into `journal-cursor.tmp`, then renamed over the file: a kill at any
/// moment leaves the old cursor or the new one, never half of one. No `fsync`: a SIGKILL or
/// a crash of logcast loses nothing (the kernel has the file); after a power loss the file
/// may be an older cursor, and entries after it are served again (never lost).
struct JournalCursor {
    /// `directory/journal-cursor`.
    let path: String

    /// What the state directory holds.
    enum Saved: Equatable {
        /// No cursor kept yet (a first start).
        case none
        /// The saved cursor.
        case cursor(String)
        /// A file that is not a cursor (why, printable).
        case corrupt(String)
    }

    /// The cursor file in `directory` (which StateDirectory made).
    ///
    /// - Parameter directory: the `--state-dir`.
    init(directory: String) { path = directory + "/journal-cursor" }

    /// The longest cursor read (systemd's are about 130 bytes).
    static let maxLength = 4096

    /// Reads the saved cursor: never more than ``maxLength`` bytes of whatever is there.
    ///
    /// - Returns: none, the cursor, or why the file is not one.
    func load() -> Saved {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            if errno == ENOENT { return .none }
            return .corrupt(String(cString: strerror(errno)))
        }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: Self.maxLength + 1)
        var count = 0
        while count < bytes.count {
            let n = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress! + count, $0.count - count) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 { return .corrupt(String(cString: strerror(errno))) }
            if n == 0 { break }
            count += n
        }
        if count > Self.maxLength { return .corrupt("longer than a cursor") }
        var text = bytes[0..<count]
        while text.last == 10 { text = text.dropLast() }
        // systemd's cursors are printable ASCII without spaces (s=…;i=…;b=…;m=…;t=…;x=…).
        guard !text.isEmpty, text.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            return .corrupt("not a journal cursor")
        }
        return .cursor(String(decoding: text, as: UTF8.self))
    }

    /// Replaces the saved cursor with `cursor` (temporary file, then `rename`).
    ///
    /// - Parameter cursor: `sd_journal_get_cursor`'s text.
    /// - Throws: a ``UVError`` naming the call and the file.
    func save(_ cursor: String) throws {
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        if fd < 0 { throw UVError(code: errno, operation: "open", target: temporary) }
        let bytes = Array((cursor + "\n").utf8)
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + done, $0.count - done) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 {
                let code = errno
                close(fd)
                throw UVError(code: code == 0 ? ENOSPC : code, operation: "write", target: temporary)
            }
            done += n
        }
        if close(fd) != 0 { throw UVError(code: errno, operation: "close", target: temporary) }
        if rename(temporary, path) != 0 { throw UVError(code: errno, operation: "rename", target: path) }
    }

    /// Saves `cursor` as ``save(_:)`` does, and says a failure once per episode: an error
    /// the first time, a notice when saving works again (the next batch tries again, so a
    /// full disk is not logged once per batch).
    ///
    /// - Parameters:
    ///   - cursor: `sd_journal_get_cursor`'s text.
    ///   - failing: whether the last save failed (the caller's, kept between calls).
    ///   - logger: where to say it.
    ///   - consequence: what a restart would do meanwhile, for the error message.
    func save(_ cursor: String, failing: inout Bool, logger: Logger, consequence: String) {
        do {
            try save(cursor)
            if failing {
                failing = false
                logger.notice("journal: the cursor is saved again in \(path)")
            }
        } catch {
            if !failing { logger.error("journal: cannot save the cursor: \(error); \(consequence)") }
            failing = true
        }
    }
}

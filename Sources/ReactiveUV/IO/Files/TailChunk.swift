/// Whole lines read by ``File/follow(_:from:checkpoints:options:notices:on:)``, with where
/// they came from: which file (by identity, not by path) and at which byte offset.
///
/// A consumer that hands lines on to something that acknowledges them (a socket peer, a
/// message broker) passes the chunk's ``identity`` and ``endOffset`` to
/// ``TailCheckpointStore/acknowledge(_:through:)`` once the downstream has them; a restart
/// then resumes right after them.
public struct TailChunk: Sendable {
    /// The file the lines were read from.
    public let identity: FileIdentity
    /// The path the file had when the tail opened it (for a rotated file, the followed
    /// path, not the name it was renamed to).
    public let path: String
    /// The byte offset in the file of the first byte of ``bytes``.
    public let offset: Int64
    /// The offset just after the last byte of the file these lines came from: where a
    /// resumed tail starts when this chunk is the last one acknowledged. Usually
    /// `offset + bytes.count`; one less when the tail added the line break of a rotated
    /// file's unfinished last line.
    public let endOffset: Int64
    /// One or more whole lines, each ending with `\n`, bytes exactly as in the file.
    public let bytes: [UInt8]

    /// Creates a chunk (the follower makes them; public for tests of consumers).
    ///
    /// - Parameters:
    ///   - identity: the file.
    ///   - path: the path it was opened at.
    ///   - offset: the offset of `bytes[0]` in the file.
    ///   - endOffset: the offset after the chunk's last byte in the file.
    ///   - bytes: whole lines.
    public init(identity: FileIdentity, path: String, offset: Int64, endOffset: Int64, bytes: [UInt8]) {
        self.identity = identity
        self.path = path
        self.offset = offset
        self.endOffset = endOffset
        self.bytes = bytes
    }
}

/// Something a tail tells its user besides lines: the file went missing, appeared, was
/// replaced (rotated) or truncated, a position was resumed, bytes were lost, the tail
/// fell back to polling, or what the path names cannot be followed for now. GNU `tail -F` prints most of these on standard error
/// (`tail: 'app.log' has been replaced;  following new file`); ``description`` is such a
/// sentence.
///
/// Notices arrive on the loop's thread, in order with the chunks.
public enum TailNotice: Sendable, Equatable, CustomStringConvertible {
    /// Nothing is at the path (at the start, or after the file there went away); the tail
    /// waits for a file to appear.
    case missing(path: String)
    /// A file appeared at a path that was empty; it is read from its start.
    case appeared(path: String, identity: FileIdentity)
    /// Another file took the path (a rotation by rename or by delete-and-create); the new
    /// one is read from its start, the old one to its end.
    case replaced(path: String, old: FileIdentity, new: FileIdentity)
    /// The file got shorter than what the tail had read (copy-truncate rotation, or a
    /// rewrite); reading starts again at offset 0. Also sent when a tail starts and finds
    /// the file cut below its checkpoint while no tail ran, its unread rest found in
    /// copytruncate's copy (read from there, with a `resumed` notice naming the copy).
    case truncated(path: String, identity: FileIdentity, at: Int64)
    /// A file known to the checkpoint store was found again (at `path`, possibly a rotated
    /// sibling such as `app.log.1`) and is read on from `offset`.
    case resumed(path: String, identity: FileIdentity, offset: Int64)
    /// Bytes that will never be delivered, and why: `range` is their byte range in the
    /// file; its upper bound is `nil` when the end is unknown (a file deleted before it
    /// could be read to its end).
    case lost(path: String, identity: FileIdentity?, range: TailByteRange, reason: TailLossReason)
    /// inotify cannot be used for the path's directory, so changes are found by polling
    /// the path's status (`uv_fs_poll`) every poll interval.
    case polling(path: String, reason: String)
    /// What the path names cannot be followed for now: it is not a regular file (a
    /// directory, a FIFO, a socket, a device) or may not be read (`EACCES`). As GNU
    /// `tail -F` does, the tail says so once and waits: the path is looked at again at
    /// every change and every poll interval, and a readable regular file found there is
    /// read from its start (``appeared(path:identity:)``). A FIFO is never opened (its
    /// `open` would wait for a writer and hold the loop). `reason` says what was found.
    case unfollowable(path: String, reason: String)

    /// How many bytes were lost (a lower bound when the end is unknown), for counters.
    public var lostBytes: Int64 {
        if case .lost(_, _, let range, _) = self { return range.knownCount }
        return 0
    }

    /// One line for standard error, in GNU `tail`'s manner.
    public var description: String {
        switch self {
        case .missing(let path):
            return "'\(path)' is missing; waiting for it to appear"
        case .appeared(let path, _):
            return "'\(path)' has appeared;  following new file"
        case .replaced(let path, _, _):
            return "'\(path)' has been replaced;  following new file"
        case .truncated(let path, _, let at):
            return "\(path): file truncated (was read to byte \(at))"
        case .resumed(let path, let identity, let offset):
            return "\(path): resuming at byte \(offset) (\(identity))"
        case .lost(let path, let identity, let range, let reason):
            let which = identity.map { " (\($0))" } ?? ""
            return "\(path)\(which): bytes \(range) lost: \(reason)"
        case .polling(let path, let reason):
            return "\(path): \(reason); reverting to polling"
        case .unfollowable(let path, let reason):
            return "'\(path)' \(reason); cannot follow it, waiting for a readable file"
        }
    }
}

/// A byte range of a file, whose end may be unknown.
public struct TailByteRange: Sendable, Equatable, CustomStringConvertible {
    /// The first byte.
    public let lowerBound: Int64
    /// The byte after the last, when known.
    public let upperBound: Int64?

    /// Creates a range.
    ///
    /// - Parameters:
    ///   - lowerBound: the first byte.
    ///   - upperBound: the byte after the last, or `nil` when unknown.
    public init(_ lowerBound: Int64, _ upperBound: Int64?) {
        self.lowerBound = lowerBound
        self.upperBound = upperBound
    }

    /// The number of bytes known to be in the range (0 when the end is unknown).
    public var knownCount: Int64 { upperBound.map { max(0, $0 - lowerBound) } ?? 0 }

    /// `100..<250`, or `100..<?` when the end is unknown.
    public var description: String {
        "\(lowerBound)..<\(upperBound.map(String.init) ?? "?")"
    }
}

/// Why bytes were lost (see ``TailNotice/lost(path:identity:range:reason:)``).
public enum TailLossReason: Sendable, Equatable, CustomStringConvertible {
    /// The file was truncated before the tail had read these bytes (copy-truncate's
    /// window: written after the copy or not yet read when the file was cut).
    case truncatedBeforeRead
    /// The file was deleted (while the tail was stopped) before these bytes were read.
    case deletedBeforeRead
    /// More rotated files waited to be read than ``TailOptions/maxOpenFiles`` allows; the
    /// oldest was given up.
    case fellBehind
    /// The checkpoint store remembers an offset beyond the file's end: the file was
    /// truncated while the tail was stopped.
    case truncatedWhileStopped
    /// A line longer than ``TailOptions/maxLineLength``, left out under
    /// ``TailLongLines/skip`` (the range is the whole line, its break included).
    case lineTooLong

    /// A few words for a notice.
    public var description: String {
        switch self {
        case .truncatedBeforeRead: return "the file was truncated before they were read"
        case .deletedBeforeRead: return "the file was deleted before they were read"
        case .fellBehind: return "the reader fell behind more rotated files than it may keep open"
        case .truncatedWhileStopped: return "the file was truncated while the tail was stopped"
        case .lineTooLong: return "a line was longer than the limit"
        }
    }
}

/// What a tail does with a line longer than ``TailOptions/maxLineLength``.
public enum TailLongLines: Sendable, Equatable {
    /// The subscription fails with `LineError.lineTooLong` once the lines before the long
    /// one are delivered: a reader of lines of a known shape, for which such a line is an
    /// error to stop at.
    case fail
    /// The line is not delivered and reading goes on after it: a `lost` notice with reason
    /// ``TailLossReason/lineTooLong`` names its bytes (once its break is read, or at the
    /// file's end). Memory stays bounded: the line is dropped as it is read, never held
    /// whole. For daemons that must not stop shipping a file at one bad line (a binary
    /// blob, a runaway JSON document), as Fluent Bit's `Skip_Long_Lines` and Vector's
    /// `max_line_bytes` do. The chunk after the line starts where it ends, so an
    /// acknowledgement past it moves a checkpoint over it.
    case skip
}

/// How ``File/follow(_:from:checkpoints:options:notices:on:)`` follows (the defaults suit
/// `tail -F`-like use).
public struct TailOptions: Sendable, Equatable {
    /// Seconds between checks of the path and of every open file, besides inotify's
    /// events (and the `uv_fs_poll` interval when polling); positive.
    public var pollInterval: Double = 0.2
    /// How long a file renamed away from the path is still read after its last new data
    /// (its writer may not have reopened the path yet); at least 0. This bounds the read of
    /// a rotated file, as Fluent Bit's `Rotate_Wait` does: once it has been quiet this long
    /// while a newer file is at the path, it is finished and closed (lines appended to it
    /// later are not read; GNU `tail -F` stops at the rename itself). A rotated file is
    /// finished sooner when it is deleted or when yet another file replaces the path.
    /// `ruv-tail --rotate-wait S` sets it.
    public var rotationQuietPeriod: Double = 1.0
    /// The longest line accepted, in bytes.
    public var maxLineLength: Int = LineBuffer.defaultMaxLength
    /// What a line longer than ``maxLineLength`` does: end the subscription with
    /// `LineError.lineTooLong` after the lines before it (``TailLongLines/fail``, the
    /// default), or go unread (``TailLongLines/skip``).
    public var longLines: TailLongLines = .fail
    /// The most files read at once (the current one and those rotated away but not yet
    /// read to their end); beyond it the oldest is given up and its rest counted as lost
    /// (``TailLossReason/fellBehind``). At least 1.
    public var maxOpenFiles: Int = 64
    /// Follow with `uv_fs_poll` instead of inotify even where inotify works (it is used
    /// anyway where it does not: network and FUSE file systems, a failing watch). The
    /// environment variable `RUV_TAIL_POLL=1` sets it for every tail in the process.
    public var usePolling: Bool = false

    /// Whether an unfinished last line (no line break yet) found at the start is sent as it
    /// is at once — the only chunk that does not end with `\n`; what is appended to that
    /// line later comes as the start of the next chunk. With ``TailStart/lastLines(_:)`` it
    /// counts as one of the n (GNU `tail -n 1` prints such a line); with
    /// ``TailStart/line(_:)`` and ``TailStart/beginning`` it is sent once the lines before it
    /// are (GNU `tail -n +K` prints it); ``TailStart/end`` never sends it. `ruv-tail` sets
    /// this. Off: the line is sent whole once its break arrives (and is not one of the n).
    public var sendsUnfinishedLastLineAtStart = false

    /// The defaults.
    public init() {}

    /// Reads of cached data on the loop thread (off: every read on libuv's pool; tests).
    var readsCachedDataOnLoop = true
}

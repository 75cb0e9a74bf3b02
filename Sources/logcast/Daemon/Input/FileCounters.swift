import Glibc
import ReactiveUV

/// One followed FILE's counters, for `/metrics` (HTTPOptions): lines and bytes delivered,
/// rotations (another file at the path), truncations and bytes lost by reason. Updated on the main loop
/// only, in order with the file's chunks and notices.
final class FileCounters: @unchecked Sendable {
    var lines = 0
    var bytes = 0
    var rotations = 0
    var truncations = 0
    /// Bytes the follower said it will never deliver, by `TailLossReason` (a few words).
    var lostBytes: [String: Int64] = [:]
    /// Loss notices by reason (a notice whose end is unknown counts here, not in bytes).
    var lostEvents: [String: Int] = [:]
    /// Whether the path currently holds nothing the tail can read (missing, unfollowable).
    var waiting = false
    /// Whether a file was followed at the path before: a file appearing then is a rotation
    /// (rename-and-create is seen as `missing`, then `appeared`), not a first start.
    var hadFile: Bool

    /// Counters for a path; `exists`: a file is at the path at start.
    init(exists: Bool) {
        hadFile = exists
    }

    /// Counts one chunk of whole lines.
    func delivered(_ chunk: [UInt8]) {
        hadFile = true
        bytes += chunk.count
        var n = Self.lineFeeds(in: chunk)
        // A chunk's last line may lack its break (the file's end): it is still a line.
        if let last = chunk.last, last != 10 { n += 1 }
        lines += n
    }

    /// The line feeds in `chunk`, found with `memchr`. Why not a loop over the bytes: the
    /// optimizer did not vectorize it, and at about 1 ns a byte it was 18–28% of logcast's
    /// CPU while ingesting (`perf`, Benchmarks/README.md's hidden costs); `memchr` skips a
    /// line of 100 bytes in a few instructions (about 4× faster on 100-byte lines).
    static func lineFeeds(in chunk: [UInt8]) -> Int {
        chunk.withUnsafeBytes { raw in
            guard var at = raw.baseAddress else { return 0 }
            let end = at + raw.count
            var n = 0
            while at < end, let found = memchr(at, 10, end - at) {
                n &+= 1
                at = UnsafeRawPointer(found) + 1
            }
            return n
        }
    }

    /// Counts what a notice says about the file.
    func noticed(_ notice: TailNotice) {
        switch notice {
        case .replaced:
            rotations += 1
            waiting = false
        case .appeared:
            if hadFile { rotations += 1 }
            hadFile = true
            waiting = false
        case .resumed:
            hadFile = true
            waiting = false
        case .truncated: truncations += 1
        case .missing, .unfollowable: waiting = true
        case .lost(_, _, let range, let reason):
            let key = Self.reasonLabel(reason)
            lostBytes[key, default: 0] += range.knownCount
            lostEvents[key, default: 0] += 1
        case .polling: break
        }
    }

    /// A loss reason as a label value (snake case, stable across releases).
    static func reasonLabel(_ reason: TailLossReason) -> String {
        switch reason {
        case .truncatedBeforeRead: return "truncated_before_read"
        case .deletedBeforeRead: return "deleted_before_read"
        case .fellBehind: return "fell_behind"
        case .truncatedWhileStopped: return "truncated_while_stopped"
        case .lineTooLong: return "line_too_long"
        }
    }
}

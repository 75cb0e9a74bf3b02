import Glibc
import ReactiveUV

/// logcast's counters, shown by `STATS`. Updated on the main loop only, so plain integers
/// suffice. Every count is of lines, but `splitScans`.
final class Stats: @unchecked Sendable {
    var linesRead = 0
    var linesSent = 0
    /// Lines clients missed because they fell more than the queue limit behind.
    var linesDropped = 0
    var clients = 0
    var forwarded = 0
    /// Blocks whose filter scan was shared with the helper thread (FilterSet.scan).
    var splitScans = 0
    /// Clients refused: a wrong or missing token, an identity the access file does not name.
    var refused = 0
    let started = SchedulerTime.monotonicNow
    /// Nanoseconds spent scanning blocks with the filters (LineFanOut), for `/metrics`.
    var scanNanoseconds: UInt64 = 0
    /// Blocks scanned with the filters.
    var scans = 0
    /// Each followed FILE's counters, in the order the files were started (`/metrics`).
    var files: [(path: String, counters: FileCounters)] = []

    /// The counters of `path` (made on first use).
    func counters(for path: String) -> FileCounters {
        if let found = files.first(where: { $0.path == path }) { return found.counters }
        let made = FileCounters(exists: access(path, F_OK) == 0)
        files.append((path, made))
        return made
    }

    /// The `STATS` reply.
    func line(now: SchedulerTime, patterns: Int, compiles: Int) -> String {
        let uptime = Int(started.distance(to: now))
        return "STATS lines_read=\(linesRead) lines_sent=\(linesSent) lines_dropped=\(linesDropped) clients=\(clients) forwarded=\(forwarded) patterns=\(patterns) compiles=\(compiles) split_scans=\(splitScans) refused=\(refused) uptime=\(uptime)s\n"
    }
}

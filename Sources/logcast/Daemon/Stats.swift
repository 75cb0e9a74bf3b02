import ReactiveUV

/// logcast's counters, shown by `STATS`. Updated on the main loop only (every pipeline
/// delivers there), so plain integers suffice.
final class Stats: @unchecked Sendable {
    var linesRead = 0
    var linesSent = 0
    var linesDropped = 0
    var clients = 0
    var forwarded = 0
    let started = SchedulerTime.monotonicNow

    /// The `STATS` reply.
    func line(now: SchedulerTime) -> String {
        let uptime = Int(started.distance(to: now))
        return "STATS lines_read=\(linesRead) lines_sent=\(linesSent) lines_dropped=\(linesDropped) clients=\(clients) forwarded=\(forwarded) uptime=\(uptime)s\n"
    }
}

// The edge's stall watch: a file with batches waiting and nothing acknowledged for a while
// says what it is waiting for, and a send left unanswered far past its timeout goes out
// again.
//
// Why: issue 33's fault run stuck after the stream leader's SIGKILL with the edge's log
// ending in "... resending what was in flight", and nothing after it to tell whether the
// edge still sent, waited for an answer, or was held. Every wait of the edge has its own
// end (a publish times out after 1 s, a stored-copy read after 5 s, a back-off pause is a
// timer), so this should find nothing; if it does, the log says which state it stuck in,
// and a send gets one more chance under its own id (resends are deduplicated).

extension NatsEdge {
    /// Seconds without an acknowledgement, with batches waiting, before the watch speaks
    /// (then after twice as long, and so on: an hour's outage costs a handful of lines).
    static var stallSeconds: Int { 20 }

    /// Once a second (with the save): counts each waiting file's quiet seconds and reports
    /// (and resends) at 20 s, 40 s, 80 s, … of quiet.
    func watchStalls() {
        for file in files.values {
            guard let first = file.batches.first else {
                file.quietSeconds = 0
                file.nextStallReport = NatsEdge.stallSeconds
                continue
            }
            file.quietSeconds += 1
            file.unansweredSeconds = file.sent > 0 ? file.unansweredSeconds + 1 : 0
            guard file.quietSeconds >= file.nextStallReport else { continue }
            file.nextStallReport *= 2
            // A send answered by nothing (no acknowledgement, no error, no timeout) for
            // five times the publish timeout is the one state without an end of its own;
            // a send merely in flight at this tick (a failure every second during a long
            // election) gets its answer.
            let resend = ready && linkUp && !file.checking && !file.held
                && Double(file.unansweredSeconds) > 5 * NatsEdge.publishTimeout
            let state = "round \(file.round), \(file.sent) in flight, stored copy being checked: \(file.checking), "
                + "pausing after a failure: \(file.held), reading paused: \(file.paused), connected: \(linkUp), stream ready: \(ready)"
            logger.warning("nats: \(file.path): nothing acknowledged for \(file.quietSeconds) s, \(file.batches.count) batches waiting from byte \(first.start) (\(state))\(resend ? "; \(file.sent) sent \(file.unansweredSeconds) s ago never answered: sending them again" : "")")
            if resend {
                file.restartRound(closing: true)
                fill(file)
            }
        }
    }
}

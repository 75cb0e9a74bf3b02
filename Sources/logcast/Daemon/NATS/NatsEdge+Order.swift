import ReactiveUV
import ReactiveUVNATS

// The edge's watch on each file's stream sequences: every batch is acknowledged at a
// sequence above the file's batch before it. A sequence below it has two causes the ack
// alone cannot tell apart, and they call for different words:
// - a reorder: the stream holds the later batch before the earlier one (the earlier batch
//   is still at its sequence). With a window of 1 the edge never has two batches of a
//   file in flight, so this needs a window > 1 (docs/design/nats-durability.md).
// - a rewound stream: the earlier batch is no longer at the sequence it was acknowledged
//   at (nothing there, or another message), so the stream now numbers from below it. The
//   stream was deleted and made again, or purged, or (issue 33's fault run, with Debian's
//   nats-server 2.9.10) the leader now answering keeps another history than the one that
//   acknowledged the earlier batch: its replicas disagree. Then nothing was stored out of
//   order in the stream the leader now serves; what may be missing from it is the earlier
//   batch itself, and that is what the edge says.
// The stored message at the earlier sequence tells which (read from the current leader).

/// One episode of sequences found below a file's earlier batch, being checked.
struct EdgeOrderCheck {
    /// The sequence the earlier batch was acknowledged at, and that batch's first byte.
    let earlier: UInt64
    let earlierStart: Int64
    /// The sequences (and first bytes) acknowledged below `earlier` since.
    var later: [(sequence: UInt64, start: Int64)]
    /// Reads of the stored message that failed so far.
    var failures = 0
}

extension NatsEdge {
    /// Reads of the earlier batch's sequence that may fail (the cluster electing a
    /// leader, say) before the edge reports what it could not tell apart.
    static var orderCheckTries: Int { 5 }

    /// Notes that `file`'s batch starting at `start` is acknowledged at `sequence` (its
    /// own store or its stored copy's), and checks a sequence below the file's last one.
    func noteOrder(_ file: EdgeFile, _ sequence: UInt64, start: Int64) {
        guard sequence < file.lastSequence else {
            file.lastSequence = sequence
            file.lastStart = start
            return
        }
        if file.orderCheck?.earlier == file.lastSequence {
            // The same episode: a rewound stream numbers each following batch below the
            // earlier one too, until it passes it; one check answers for all of them.
            file.orderCheck?.later.append((sequence, start))
            return
        }
        file.orderCheck = EdgeOrderCheck(earlier: file.lastSequence, earlierStart: file.lastStart, later: [(sequence, start)])
        checkOrder(file)
    }

    /// Reads the message at the earlier sequence and reports the episode as a reorder or
    /// a rewound stream (retried after a second while the servers do not answer).
    private func checkOrder(_ file: EdgeFile) {
        guard let check = file.orderCheck else { return }
        guard let js else { return retryOrderCheck(file, "not connected") }
        running.whileRunning(
            js.message(stream: target.stream, sequence: check.earlier),
            next: { [weak self] stored in
                let range = stored.headers["Logcast-Range"]?.split(separator: "-").first.flatMap { Int64($0) }
                let same = stored.headers["Logcast-File"] == file.idText && range == check.earlierStart
                let what = "holds another message (\(stored.headers["Logcast-Path"] ?? stored.subject) @\(range.map(String.init) ?? "?"))"
                self?.reportOrder(file, stillThere: same, what: what)
            },
            error: { [weak self] error in
                if let nats = error as? NATSError, nats.serverCode == 10037 {
                    self?.reportOrder(file, stillThere: false, what: "holds no message")
                } else {
                    self?.retryOrderCheck(file, "\(error)")
                }
            })
    }

    private func retryOrderCheck(_ file: EdgeFile, _ why: String) {
        guard var check = file.orderCheck else { return }
        check.failures += 1
        file.orderCheck = check
        if check.failures < NatsEdge.orderCheckTries {
            running.afterDelay(1) { [weak self] in self?.checkOrder(file) }
            return
        }
        file.orderCheck = nil
        outOfOrder += check.later.count
        for later in check.later {
            // Unconfirmed, so said as the worse case (a reorder) with the same mark.
            logger.error("nats: \(file.path): a batch was stored at sequence \(later.sequence), before the file's earlier batch at \(check.earlier), which could not be read to tell a rewound stream from a reorder (\(why)) (out of order)")
        }
    }

    /// Says what the episode was. A rewound stream's numbering is the one that counts from
    /// now on (the file's last sequence is the highest of the episode's, unless a batch
    /// passed the earlier one meanwhile).
    private func reportOrder(_ file: EdgeFile, stillThere: Bool, what: String) {
        guard let check = file.orderCheck else { return }
        file.orderCheck = nil
        let sequences = check.later.map { String($0.sequence) }.joined(separator: ", ")
        if stillThere {
            outOfOrder += check.later.count
            for later in check.later {
                logger.error("nats: \(file.path): a batch was stored at sequence \(later.sequence), before the file's earlier batch at \(check.earlier) (out of order)")
            }
            return
        }
        sequenceRewinds += 1
        logger.error("nats: \(file.path): the stream's sequence went back: the batch [\(check.earlierStart), …) acknowledged at \(check.earlier) is no longer there (message \(check.earlier) \(what)), and the file's next batches were stored at \(sequences). Nothing of the file is out of order in the stream as its leader now has it, but what was acknowledged before may be missing from it: the stream was made again or purged, or its replicas disagree (docs/design/nats-durability.md)")
        if file.lastSequence == check.earlier, let highest = check.later.max(by: { $0.sequence < $1.sequence }) {
            file.lastSequence = highest.sequence
            file.lastStart = highest.start
        }
    }
}

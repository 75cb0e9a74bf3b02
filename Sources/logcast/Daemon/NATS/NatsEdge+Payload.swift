import ReactiveUVNATS

// The edge's batch against the server's `max_payload`: as large as `--batch-bytes` asks
// (1 MiB by default) but never larger than what the connected server accepts.
//
// Why: with one batch of a file in flight (the default window), each batch is one
// replicated round trip, so the bytes per batch decide a 3-replica stream's rate (issue 33:
// 256 KiB batches 755k lines/s, 1 MB batches 1.17 M on nats-server 2.15.1). But a server's
// `max_payload` (1 MiB unless its operator set less) counts headers and payload together,
// and a batch over it is refused by cnats before it leaves ("Payload … greater than maximum
// allowed"): the edge used to resend the same batch (its bounds fixed at its first send)
// every second, forever, nothing of the file stored after it. So the batch is cut to the
// server's limit minus room for the headers, read again after every (re)connect (another
// server of the list may have another limit), and batches already cut larger are cut
// again at their lines (safe: a piece that starts where the stored batch did is answered
// "duplicate", and the stored copy's `Logcast-Range` says where to go on).

extension NatsEdge {
    /// Room left for the headers of a message: `Nats-Msg-Id` (the subject, the file id, the
    /// content tag, the offset: ~100 bytes with a short subject), `Logcast-Path` (the path,
    /// up to PATH_MAX = 4,096 bytes), `Logcast-Range`, `Logcast-File` and the framing; 8 KiB
    /// holds them with the longest path, and costs a 1 MiB batch under 1 %.
    static var headerRoom: Int { 8192 }

    /// The batch size for a server accepting `maxPayload` bytes per message: `requested`,
    /// or less to leave ``headerRoom`` (at most half a tiny limit) for the headers.
    static func batchLimit(requested: Int, maxPayload: Int?) -> Int {
        guard let maxPayload, maxPayload > 0 else { return requested }
        let room = min(headerRoom, maxPayload / 2)
        return max(1, min(requested, maxPayload - room))
    }

    /// Reads the connected server's limit and cuts the batch to it (after a connect or a
    /// reconnect, with nothing in flight). Says so in the log once per limit met.
    func applyPayloadLimit(_ connection: NATSConnection) {
        guard let maxPayload = connection.maxPayload else { return }
        let limit = NatsEdge.batchLimit(requested: requestedBatchBytes, maxPayload: maxPayload)
        if maxPayload != payloadLimitSaid {
            payloadLimitSaid = maxPayload
            if limit < requestedBatchBytes {
                logger.notice("nats: the server accepts messages of at most \(maxPayload) bytes (max_payload); batches are cut to \(limit) bytes (--batch-bytes \(requestedBatchBytes), \(maxPayload - limit) left for headers)")
            }
        }
        guard limit != batchBytes else { return }
        batchBytes = limit
        multiline?.batchBytes = limit
        for file in files.values { file.cut(to: limit) }
    }

    /// A publish refused as larger than the server accepts although the batch was cut to
    /// the limit (headers larger than ``headerRoom``: an extraordinary subject): the file's
    /// batches are cut to half the refused batch and sent again at once. Returns false when
    /// the batch is already too small to halve (the headers alone are over the limit).
    func refusedAsTooLarge(_ file: EdgeFile, _ batch: EdgeBatch) -> Bool {
        let half = batch.bytes.count / 2
        guard half >= 256 else { return false }
        logger.error("nats: \(file.path) [\(batch.start), \(batch.end)): \(batch.bytes.count) bytes refused as larger than the server accepts (max_payload \(connection?.maxPayload.map(String.init) ?? "unknown")); its headers take more than \(NatsEdge.headerRoom) bytes: cutting this file's batches to \(half) bytes")
        file.restartRound(closing: true)
        file.cut(to: half)
        return true
    }
}

extension EdgeFile {
    /// Cuts the batches to at most `limit` bytes (only with nothing in flight: ``sent`` is
    /// 0). Batches never sent are joined and cut again at lines (as ``take(_:batchBytes:)``
    /// would have cut them), so a smaller limit does not leave a tiny remainder after each
    /// piece. A batch sent before (its id may be stored) is cut only when over the limit,
    /// at its last line break within it (a line longer than `limit` at the limit); the
    /// first piece keeps the batch's start, id and first round: if the whole batch was
    /// stored, that piece is answered "duplicate" and the stored copy's range (past the
    /// piece) drops the rest. Later pieces keep the first round too, so no new line joins them.
    /// (Not known here: `--multiline-start`'s event bounds. A limit that shrinks under
    /// queued batches, i.e. a server with a smaller `max_payload` than the last, can cut a
    /// queued event at a line; later events are sized to the new limit by the gate.)
    func cut(to limit: Int) {
        guard limit > 0 else { return }
        var result: [EdgeBatch] = []
        result.reserveCapacity(batches.count)
        var fresh: EdgeBatch?
        func split(_ batch: EdgeBatch) {
            var offset = 0
            while offset < batch.bytes.count {
                var cut = min(batch.bytes.count, offset + limit)
                if cut < batch.bytes.count, let nl = batch.bytes[offset..<cut].lastIndex(of: 10) { cut = nl + 1 }
                var piece = batch
                piece.bytes = Array(batch.bytes[offset..<cut])
                piece.start = batch.start + Int64(offset)
                piece.end = batch.start + Int64(cut)
                piece.ack = nil
                if offset > 0 { piece.salt = 0 }
                result.append(piece)
                offset = cut
            }
        }
        func flushFresh() {
            if let run = fresh { split(run) }
            fresh = nil
        }
        for batch in batches {
            if batch.firstRound == nil, batch.salt == 0 {
                if var run = fresh, run.generation == batch.generation, run.tag == batch.tag, run.end == batch.start {
                    run.bytes += batch.bytes
                    run.end = batch.end
                    fresh = run
                } else {
                    flushFresh()
                    fresh = batch
                }
                continue
            }
            flushFresh()
            if batch.bytes.count > limit { split(batch) } else { result.append(batch) }
        }
        flushFresh()
        batches = result
    }
}

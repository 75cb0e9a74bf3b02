import Glibc
import Logging
import ReactiveUV
import ReactiveUVNATS

/// The edge: `logcast FILE... --publish nats://H:P[,H:P…]` ships the files' lines into a
/// JetStream stream, exactly once across crashes, rotations and failovers.
///
/// ```
/// File.follow(path, checkpoints: store) ─► EdgeFile (per file identity: a queue of
///   batches of whole lines, each naming its bytes [start, end)) ─► JetStream.publish
///   (id "<subject>/<file id>.<content tag>@<start>", headers Logcast-Path, Logcast-Range)
///   ─► ack ─► store.acknowledge(identity, through: end) ─► store.save() every second
/// ```
///
/// Why exactly once holds:
/// - A position is acknowledged (and saved) only after JetStream acknowledged the message
///   that carries the bytes before it; after a crash the follower resumes there.
/// - Up to ``window`` messages per file are in flight (1 by default; NatsEdge+Window.swift), each
///   with its bytes and bounds fixed at its first send. A failed or timed-out publish,
///   a reconnect or a new connection sends every unacknowledged batch again from the
///   first, in order, under the same ids, so the stream dedupes the ones it stored; a
///   batch is acknowledged (and its position saved) only when every batch before it is.
///   What the stream holds of a file is then a prefix of it, except in the case
///   docs/design/nats-durability.md names (an earlier batch lost while a later one was
///   stored; counted as `outOfOrder` and logged, never silent).
/// - A message's id names its file, the file's content since its last truncation (the
///   *content tag*: a hash of the file's first line, see ``EdgeFile/contentTag(_:)``) and
///   its first byte. A file truncated in place (copytruncate) and written again reuses the
///   same inode and byte offsets; its new content has another first line, hence other ids,
///   so JetStream does not take the new lines for resends of the old ones. The tag comes
///   from the file's content, not from a counter, so after a crash the same lines get the
///   same ids again. Resent after a crash a message may carry
///   more or fewer lines than the copy the stream stored (batches are cut by what was
///   read); JetStream answers "duplicate" with the stored copy's sequence, the edge reads
///   that copy's `Logcast-Range` and continues after its end. So no line is stored twice
///   and none is skipped — within the stream's duplicate window (`--dedupe-window`,
///   5 minutes by default). An edge down longer repeats what the stream stored after its
///   saved positions: the last second's acknowledged batches and the window in flight
///   (docs/design/nats-durability.md says exactly what).
/// - A content written again with the *same* first line (a header) gets another tag from
///   the store's count of the file's truncations (saved with the positions, so the same
///   after a crash). Where an id still holds other bytes (a reused inode; a state directory
///   lost), the stored copy tells: bytes other than the batch's, or (for a copy longer than
///   the batch) other than the file's at the copy's range, mean another content, and the
///   batch goes out under the next salted id (`idTaken`); only bytes the file still holds
///   are a resend.
/// - A batch is whatever whole lines have been read and not yet sent, up to `--batch-bytes`
///   (1 MiB by default) cut to the connected server's `max_payload` less room for the
///   headers (NatsEdge+Payload.swift): a trickle goes out at once in small batches.
/// - While the servers are away, at most `max((window + 4) × --batch-bytes, 2 MiB)` per file waits in memory:
///   then the follower is stopped and later resumed from the acknowledged positions. The
///   file itself is the buffer.
final class NatsEdge {
    // Main loop only.
    let target: NatsTarget
    let subject: String
    /// `--batch-bytes`: the most bytes of lines in one message asked for.
    let requestedBatchBytes: Int
    /// The most bytes of lines in one message now: ``requestedBatchBytes``, cut to what the
    /// connected server accepts (NatsEdge+Payload.swift).
    var batchBytes: Int
    /// The last server limit (`max_payload`) the log was told about.
    var payloadLimitSaid: Int?
    let replicas: Int
    let dedupeWindow: Double
    let store: TailCheckpointStore
    let logger: Logger
    /// Lines also go to the local fan-out when no `--from` feeds it (the edge then serves
    /// its own files to clients as before).
    let local: ((String, [UInt8]) -> Void)?
    let paths: [String]
    let running = CompoundDisposable()
    var follows: [String: Disposable] = [:]
    /// Paths whose follower this edge restarted after pausing it (their `resumed` notice is
    /// routine, logged at debug level, not as news).
    var restartedAfterPause: Set<String> = []
    var files: [FileIdentity: EdgeFile] = [:]
    var connection: NATSConnection?
    var js: JetStream?
    /// The same connection's context for finding or creating the stream, whose requests
    /// time out after ``lookupTimeout`` (NatsEdge+Window.swift).
    var streamLookup: JetStream?
    var ready = false
    /// Counters for STATS-like logging and tests.
    var messagesAcknowledged = 0
    var duplicates = 0
    /// Acknowledgements of a batch's earlier send that came after it was sent again
    /// (NatsEdge+Window.swift: a slow link).
    var lateAcknowledgements = 0
    /// Each followed path's counters for `/metrics` (set by NatsOptions; `nil`: none kept).
    var counters: ((String) -> FileCounters)?
    /// Batches acknowledged at a stream sequence below an earlier batch of their file's,
    /// that one still stored there (NatsEdge+Order.swift).
    var outOfOrder = 0
    /// Times a file's acknowledged sequences went back because the stream no longer held
    /// the earlier batch where it was acknowledged (made again, purged, or replicas that
    /// disagree), not because of a reorder.
    var sequenceRewinds = 0
    /// Batches of one file in flight at most (`LOGCAST_NATS_WINDOW`, 1...64, default 1:
    /// strict file order; see `windowSetting`).
    let window: Int
    /// Whether the connection is up (between a disconnect and a reconnect nothing is sent:
    /// cnats would buffer it and send it after the reconnect, before the resends of the
    /// batches lost with the old socket, i.e. out of order).
    var linkUp = true
    /// `--multiline-start`: whole events only into batches (MultilineEdgeGate.swift).
    var multiline: MultilineEdgeGate?

    init(target: NatsTarget, subject: String, batchBytes: Int, replicas: Int, dedupeWindow: Double,
         stateDirectory: String, paths: [String], logger: Logger, local: ((String, [UInt8]) -> Void)?) throws {
        // Publishes made while reconnecting fail at once (cnats keeps no replay buffer for
        // them: see `linkUp`); 1 byte because 0 means cnats's default of 8 MiB.
        var options = target.options
        options.reconnectBufferBytes = 1
        // A server cut off without a reset (a partition) is found by missed pings: two
        // missed at 1 s each rather than at 2 s halves what a partitioned server costs.
        options.pingInterval = min(options.pingInterval, 1)
        self.target = NatsTarget(urls: target.urls, stream: target.stream, options: options)
        self.window = NatsEdge.windowSetting()
        self.subject = subject
        self.requestedBatchBytes = batchBytes
        // Until a server says its limit, the default one's (1 MiB): the lines read before
        // the first connect are queued in batches that fit it.
        self.batchBytes = NatsEdge.batchLimit(requested: batchBytes, maxPayload: 1 << 20)
        self.replicas = replicas
        self.dedupeWindow = dedupeWindow
        self.store = try StateDirectory.open(stateDirectory)
        self.paths = paths
        self.logger = logger
        self.local = local
    }

    func start() {
        for path in paths { follow(path) }
        // The followers registered the files they opened: on disk now, not at the first
        // tick. Why: an edge killed within its first second, whose file was then rotated
        // away, found no record of it at restart and never read the rest of it (lines lost;
        // the rotation test caught it once the stream reader started without delay).
        save()
        running += NatsTarget.connectForever(target, log: { [logger] in logger.info("nats: \($0)") }) { [weak self] c in
            self?.connected(c)
        }
        running += Signal.interval(1, on: Scheduler.main).subscribeNext { [weak self] _ in
            self?.save()
            self?.watchStalls()
        }
    }

    func stop() {
        multiline?.stop()
        save()
        for d in follows.values { d.dispose() }
        follows = [:]
        running.dispose()
    }

    func save() {
        do { try store.save() } catch { logger.error("cannot save positions in \(store.directory): \(error)") }
    }

    // MARK: Reading

    /// Follows `path` from the acknowledged positions (new files from their start).
    func follow(_ path: String) {
        guard follows[path] == nil else { return }
        let counters = self.counters?(path)
        follows[path] = File.follow(path, from: .line(1), checkpoints: store, options: FileSource.options,
                                    notices: { [weak self] notice in
                                        counters?.noticed(notice)
                                        self?.noticed(notice)
                                    })
            .subscribe(next: { [weak self] chunk in
                           counters?.delivered(chunk.bytes)
                           if let gate = self?.multiline { gate.feed(chunk) } else { self?.received(chunk) }
                       },
                       error: { [weak self] error in self?.logger.error("\(path): \(error); no longer followed") })
    }

    /// A notice of the follower (in order with its chunks): logged; a truncation starts a
    /// new generation of the file, read again from byte 0.
    func noticed(_ notice: TailNotice) {
        if case .resumed(let path, _, _) = notice, restartedAfterPause.remove(path) != nil {
            logger.debug("\(notice)")
        } else {
            logger.notice("\(notice)")
        }
        switch notice {
        case .truncated(_, let identity, _), .lost(_, let identity?, _, .truncatedWhileStopped):
            // An event held back from the old content goes out with it, before the new one.
            multiline?.truncated(device: identity.device, inode: identity.inode)
            // Every reader of this inode so far read content that is gone: what they queued
            // still goes out under its own ids, the positions now belong to the new content.
            for file in files.values where file.identity.device == identity.device && file.identity.inode == identity.inode {
                file.truncated()
            }
            // The store counted the truncation (before telling us): on disk before any id
            // carries the new count, or a crash now would give the new content other ids
            // after the restart (the count saved before it) than the ones it went out under.
            save()
        default:
            break
        }
    }

    func received(_ chunk: TailChunk) {
        let file = files[chunk.identity] ?? sameFile(as: chunk.identity) ?? {
            let made = EdgeFile(identity: chunk.identity, path: chunk.path, next: chunk.offset,
                                copyOf: store.copyOrigin(of: chunk.identity))
            files[chunk.identity] = made
            // A file new to this run (one that appeared, a rotation's new file) is on disk
            // before its lines go out, for the same reason as in `start`.
            save()
            return made
        }()
        if file.tag == nil {
            let tag = EdgeFile.contentTag(of: chunk) ?? EdgeFile.readContentTag(chunk.path, chunk.identity) ?? {
                logger.notice("nats: \(chunk.path): its first line is unknown; its message ids carry no content tag")
                return "-"
            }()
            // The same first line written again after a truncation: the store's count of
            // truncations (saved with the position, so the same after a crash) tells the
            // contents apart, even byte for byte the same ones.
            // (A copy's lines carry its origin's ids: the original's count for that content.)
            let truncations = store.copyOrigin(of: chunk.identity)?.truncations ?? store.truncations(for: chunk.identity)
            file.tag = truncations > 0 ? "\(tag).\(truncations)" : tag
        }
        guard let taken = file.take(chunk, batchBytes: batchBytes) else { return }
        local?(chunk.path, taken)
        if file.queuedBytes > pauseBytes, let d = follows.removeValue(forKey: file.path) {
            // The file is the buffer: stop reading; `resumeIfDrained` follows it again
            // from the acknowledged positions once the queue has gone out.
            logger.debug("\(file.path): \(file.queuedBytes) bytes waiting; reading paused")
            d.dispose()
            file.paused = true
        }
        sendNext(file)
    }

    /// The file already on its way under another identity of the same file: a follower
    /// started again after a pause carries the fingerprint of the file as it is now (a file
    /// first opened empty or young has a shorter one), and `==` compares fingerprints
    /// exactly. Without this a second `EdgeFile` for the same file sent its lines again
    /// under other batch bounds, hence other ids (the window test caught thousands of
    /// lines stored twice and out of order after a pause during a leader election).
    /// The file moves to the new identity's key.
    private func sameFile(as identity: FileIdentity) -> EdgeFile? {
        guard let (key, file) = files.first(where: { $0.key.isSameFile(as: identity) }) else { return nil }
        files[key] = nil
        files[identity] = file
        return file
    }

    /// Bytes of one file waiting in memory before its reading pauses. Why not smaller: each
    /// pause ends with the follower started again from the acknowledged position, which
    /// costs a directory scan and a poll interval; 2 MiB keeps those rare.
    var pauseBytes: Int { max((window + 4) * batchBytes, 2 << 20) }

    func resumeIfDrained(_ file: EdgeFile) {
        guard file.paused, file.queuedBytes < pauseBytes / 2 else { return }
        file.paused = false
        // Everything the follower re-reads below `file.next` is dropped by `take`.
        restartedAfterPause.insert(file.path)
        follow(file.path)
    }
}

/// One file (by identity) on its way to the stream (main loop only).
final class EdgeFile {
    let identity: FileIdentity
    let path: String
    /// The file id in message ids: device and inode. (Not the fingerprint: it is taken when
    /// the file is first opened and grows with the file up to 64 bytes, so it can differ
    /// between two runs; a reused inode is caught by comparing the stored copy's bytes.)
    /// For copytruncate's copy, the original file's: the copy holds the original's bytes at
    /// the same offsets, and an edge SIGKILLed after sending some of them from the original
    /// sends them again from the copy, which JetStream must take for resends.
    let idText: String
    /// The offset after the last byte taken from the follower.
    var next: Int64
    /// Truncations seen in this run: batches of an older generation are content the file
    /// no longer has (in memory only; the ids use ``tag``).
    var generation = 0
    /// The content tag of the current generation (see ``contentTag(_:)``), once known.
    var tag: String?
    /// Batches not yet acknowledged, oldest first; the first ``sent`` are in flight.
    var batches: [EdgeBatch] = []
    /// How many of the first batches were sent in the current ``round``. A batch's bytes
    /// and bounds are fixed from its first send on (``EdgeBatch/firstRound``; new lines
    /// never join it), so every resend is the same message under the same id.
    var sent = 0
    /// Counts the resends from the first unacknowledged batch: outcomes of sends made in
    /// an earlier round are ignored (the batches went out again).
    var round = 0
    /// Whether several batches may be in flight: only after one was stored as new in this
    /// run. Until then (a restart, an id found taken) one at a time, so a batch the stream
    /// already holds, or whose id holds other bytes, is sorted out before anything after it
    /// is sent.
    var opened = false
    /// A duplicate's stored copy is being compared (nothing moves meanwhile).
    var checking = false
    /// A back-off pause after a failed publish is under way.
    var held = false
    /// The pause before the next resend after a failure (doubled per failure, reset by a stored batch).
    var backoff = 0.25
    /// The stream sequence of the last batch acknowledged, to see any stored out of order,
    /// and that batch's first byte (NatsEdge+Order.swift).
    var lastSequence: UInt64 = 0
    var lastStart: Int64 = 0
    /// Seconds (ticks) with batches waiting since the last acknowledgement, and when the
    /// stall watch speaks next (NatsEdge+Stall.swift).
    var quietSeconds = 0
    var nextStallReport = NatsEdge.stallSeconds
    /// Seconds (ticks) with sends of the current round in flight and no answer to any.
    var unansweredSeconds = 0
    /// Sequences found below ``lastSequence``, being checked (reorder or rewound stream).
    var orderCheck: EdgeOrderCheck?
    var paused = false

    init(identity: FileIdentity, path: String, next: Int64, copyOf: TailCopyOrigin? = nil) {
        self.identity = identity
        self.path = path
        self.next = next
        idText = copyOf.map { "\($0.device)-\($0.inode)" } ?? "\(identity.device)-\(identity.inode)"
    }

    /// FNV-1a of `bytes`, in hex.
    static func hash(_ bytes: some Sequence<UInt8>) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return String(hash, radix: 16)
    }

    /// The file's first line, at most 64 bytes of it (what ``contentTag(_:)`` hashes).
    static func firstLine(_ bytes: some Collection<UInt8>) -> [UInt8] {
        var line: [UInt8] = []
        for byte in bytes.prefix(64) {
            line.append(byte)
            if byte == 10 { break }
        }
        return line
    }

    /// The content tag of a file whose first bytes are `head`: a hash of its first line
    /// (at most 64 bytes of it), or `nil` while `head` holds neither a whole first line nor
    /// 64 bytes. Why the first line: the edge ships whole lines only, so when it ships
    /// anything the first line is complete and fixed until the next truncation; a
    /// truncated file written again starts with another line (log lines carry times and
    /// numbers), and the same line gives the same tag after a restart.
    static func contentTag(_ head: [UInt8]) -> String? {
        guard head.prefix(64).contains(10) || head.count >= 64 else { return nil }
        return hash(firstLine(head))
    }

    /// The tag from a chunk: its own first line when it starts the file, else the first
    /// bytes the follower saw when it opened the file (its identity's fingerprint).
    static func contentTag(of chunk: TailChunk) -> String? {
        if chunk.offset == 0 { return contentTag(chunk.bytes) }
        return contentTag(chunk.identity.fingerprint)
    }

    /// The tag read from the file itself when the follower's fingerprint was taken before
    /// its first line was complete (a record of the checkpoint store made when the file was
    /// young): one open and a 64-byte read of the file `identity` names.
    ///
    /// The file may no longer be at `path`: a rotation while the edge was down renamed it
    /// (`app.log` → `app.log.1`), and the follower resumes it by identity; `locate(near:)`
    /// finds it among its siblings the same way. A tag that differed from the one the killed
    /// edge used would give every resent batch a new id, and JetStream would store them twice.
    static func readContentTag(_ path: String, _ identity: FileIdentity) -> String? {
        identity.locate(near: path).flatMap { readContentTag(at: $0, identity) }
    }

    /// The tag of the file at `path` if it is the file `identity` names.
    private static func readContentTag(at path: String, _ identity: FileIdentity) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, UInt64(info.st_dev) == identity.device, UInt64(info.st_ino) == identity.inode else {
            return nil
        }
        var head = [UInt8](repeating: 0, count: 64)
        let n = head.withUnsafeMutableBytes { pread(fd, $0.baseAddress, 64, 0) }
        if n <= 0 { return nil }
        return contentTag(Array(head.prefix(n)))
    }

    /// The follower read the file again from byte 0 (truncated): a new generation, whose
    /// bytes are never merged with the old ones' batches, with its own content tag.
    func truncated() {
        generation += 1
        tag = nil
        next = 0
    }

    var queuedBytes: Int { batches.reduce(0) { $0 + $1.bytes.count } }

    /// Where `batch` stands among the batches sent in this round (by its first byte and
    /// generation), or nil when it is no longer one of them.
    func sentIndex(of batch: EdgeBatch) -> Int? {
        batches.prefix(sent).firstIndex { $0.start == batch.start && $0.generation == batch.generation }
    }

    /// Appends the chunk's bytes not taken before (a follower resumed after a pause
    /// re-reads from the acknowledged position); returns the new bytes, or nil.
    func take(_ chunk: TailChunk, batchBytes: Int) -> [UInt8]? {
        guard chunk.endOffset > next else { return nil }
        var start = chunk.offset
        var bytes = chunk.bytes
        if start < next {
            // Both are line starts in the same file: what is cut is whole lines.
            bytes.removeFirst(Int(next - start))
            start = next
        }
        next = chunk.endOffset
        let tag = self.tag ?? "-"
        if let last = batches.last, last.generation == generation, last.end == start,
           last.bytes.count + bytes.count <= batchBytes, last.firstRound == nil {
            batches[batches.count - 1].bytes += bytes
            batches[batches.count - 1].end = chunk.endOffset
        } else {
            var offset = 0
            while offset < bytes.count {
                // A batch never splits a line: cut after the last line break within the limit.
                var cut = min(bytes.count, offset + batchBytes)
                if cut < bytes.count, let nl = bytes[offset..<cut].lastIndex(of: 10) { cut = nl + 1 }
                batches.append(EdgeBatch(start: start + Int64(offset), end: start + Int64(cut), bytes: Array(bytes[offset..<cut]),
                                         generation: generation, tag: tag))
                offset = cut
            }
        }
        return bytes
    }

    /// Every batch goes out again, from the first: sends not yet answered are stale.
    /// `closing` also closes the window until a batch is acknowledged again: after a
    /// failure, a reconnect or a new leader, the way to the leader is in doubt, and a
    /// round of several batches sent into it (queued on a cut-off socket, or met by a
    /// server that learns the new leader's interest between two of them) could have a
    /// later batch stored while an earlier one is answered "no responders". One batch at
    /// a time until one is acknowledged leaves nothing behind it to overtake it.
    func restartRound(closing: Bool = false) {
        if closing { opened = false }
        round += 1
        sent = 0
        unansweredSeconds = 0
        for i in batches.indices { batches[i].ack = nil }
    }

    /// The stream holds everything of `generation` before `end`.
    func dropThrough(_ end: Int64, generation: Int) {
        while let first = batches.first, first.generation == generation, first.end <= end { batches.removeFirst() }
        if let first = batches.first, first.generation == generation, first.start < end {
            batches[0].bytes.removeFirst(Int(end - first.start))
            batches[0].start = end
            batches[0].salt = 0  // another start, another id
        }
        if generation == self.generation && next < end { next = end }
    }
}

/// Whole lines of one file, bytes [start, end).
struct EdgeBatch {
    var start: Int64
    var end: Int64
    var bytes: [UInt8]
    /// The file's generation it was read in (``EdgeFile/generation``).
    var generation: Int
    /// The acknowledgement of its send in the current round, until it is first in line.
    var ack: JetStreamAck?
    /// The round of its first send in this run (nil until sent): a duplicate answer to a
    /// later round is its own earlier send.
    var firstRound: Int?
    /// The content tag of that generation (in the message id).
    var tag: String
    /// How many ids this batch found holding other bytes: 0 for its plain id, then ids
    /// with a hash of its first line and this count (``NatsEdge`` `idTaken`).
    var salt = 0
}

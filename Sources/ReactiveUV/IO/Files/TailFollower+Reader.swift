import CLibUV
import CSystemShims
import Glibc

/// One file a ``TailFollower`` reads: its descriptor, identity, position and partial line,
/// and the read state machine, independent of every other file of the tail. Files never
/// wait for one another: the new file after a rotation is read at once while the old one
/// is read to its end, so a rotation costs the new file's lines no latency.
///
/// **Steps.** The reader is *idle* (at its end, nothing in flight) or *busy* with one step
/// at a time:
///
/// - a read of what the page cache holds, on the loop thread without ever waiting for
///   storage (``FileRequest/readIfCached(_:count:at:after:splittingAtLastLineBreak:)``),
///   32 KiB, then the next one on the loop's next turn (so sockets and timers keep their
///   turns during a catch-up);
/// - otherwise a 256 KiB read on libuv's pool; one that fills its buffer (a catch-up from
///   storage) starts the next at once on a second request, before its own lines are
///   delivered, so a pool thread reads while the loop thread delivers;
/// - at the end (a read of 0 bytes), a check of the file: `fstat` for its size and link
///   count, and its first bytes against the fingerprint. Smaller than our position, or
///   other first bytes, is a truncation: reading starts again at 0 and what was not read
///   is reported lost. Larger: read on.
///
/// A *poke* (an inotify event, a poll, the timer) on an idle reader starts a step, whose
/// first read is checked the same way before its bytes are taken (so a file truncated and
/// written again past our position between two looks is read from 0, not on from our
/// position); on a busy one it is remembered, and the end-of-file check that closes the
/// step covers it (the check runs after every event the loop has seen). So truncation is
/// checked at every change event.
///
/// **Whole lines.** Each read makes a new array starting with the partial line carried
/// over and cut at its last line break (on the pool thread for pool reads): that array,
/// when it holds any whole line, is the chunk sent, tagged with the byte offset of its
/// first byte. No byte is copied on the loop thread.
///
/// Thread-safety: loop-thread confined, like its follower.
final class TailFileReader {
    let follower: TailFollower
    let fd: Int32
    let identity: FileIdentity
    /// The path the file had when it was opened.
    let path: String
    /// The file's first bytes as last seen (grows up to the fingerprint length while the
    /// file is young); compared at each end of file to notice a rewrite. The store is told
    /// as they grow: it knows the file by them (by its fingerprint, or after a truncation
    /// by its new content's first bytes).
    private(set) var head: [UInt8]
    /// The next read's position.
    private(set) var offset: Int64
    /// The offset of the partial line carried (``offset`` minus its length): where the
    /// next chunk starts.
    private var lineStart: Int64
    /// The largest size seen (at open, and by `fstat` at each end): what was known to be
    /// there when a truncation is found.
    private var lastKnownSize: Int64
    private var lines: LineBuffer
    /// Line breaks still to skip (`.line(k)` past the end of the file at the start).
    private var skipLines: Int
    /// Where a line over the limit that is being left out began (``TailLongLines/skip``):
    /// its bytes are dropped as they are read until its break arrives.
    private var skippingLongLineFrom: Int64?
    /// Whether the partial line found at the first end of file is sent as it is (GNU
    /// `tail -n N` counts an unfinished last line as a line).
    private var sendsUnfinishedLineAtFirstEnd: Bool

    /// When the file left the path (monotonic ns), or `nil` while it is there.
    private(set) var rotatedAt: UInt64?
    /// Yet another file replaced the path after this one left: finish at the end, without
    /// waiting for the quiet period (a resumed file counts as superseded too).
    var superseded = false
    /// Reading waits (a current file waits for resumed older ones to be finished).
    var held = false
    /// When a read last found data (or the file was opened), monotonic ns.
    private var lastData: UInt64
    private var deleted = false
    private var readsCachedDataOnLoop: Bool

    private var request: FileRequest
    private var spareRequest: FileRequest?
    /// A step is under way (a request in flight, or a read waiting for the next turn).
    private var busy = false
    /// The next read is checked for a truncation before its bytes are taken: the first of a
    /// step started by a poke after the reader had been idle, or the next one after a poke
    /// that came during a step — when the file may have been truncated and written again
    /// past our position (the read, on the pool, may even run after that happened while
    /// the loop looked).
    private var checksFirstRead = false
    /// Waiting in the follower's next-turn queue (nothing in flight).
    var waitingForTurn = false
    /// The tail is stopping: close once nothing is in flight.
    private var stopping = false
    private(set) var closed = false

    init(
        follower: TailFollower, fd: Int32, identity: FileIdentity, path: String, offset: Int64, size: Int64,
        skipLines: Int, sendsUnfinishedLine: Bool, readsCachedDataOnLoop: Bool, maxLineLength: Int
    ) {
        self.lastKnownSize = size
        self.follower = follower
        self.fd = fd
        self.identity = identity
        self.path = path
        self.head = identity.fingerprint
        self.offset = offset
        self.lineStart = offset
        self.skipLines = skipLines
        self.sendsUnfinishedLineAtFirstEnd = sendsUnfinishedLine
        self.readsCachedDataOnLoop = readsCachedDataOnLoop
        self.lines = LineBuffer(maxLength: maxLineLength)
        self.lastData = csys_monotonic_ns()
        self.bornAt = follower.nextGeneration()
        request = FileRequest(loop: follower.loop)
    }

    /// Whether the file is being read (not yet finished or closed).
    var isOpen: Bool { !closed && !stopping }

    /// Idle at an end found before `reader` was opened: its end must be looked at again
    /// before `reader` may read (see ``endCheckedAt``).
    func endIsStale(for reader: TailFileReader) -> Bool {
        isOpen && !held && !busy && reachedEnd && endCheckedAt < reader.bornAt
    }

    // MARK: - Events

    /// Whether the last step ended at the end of the file (nothing known to be unread).
    private(set) var reachedEnd = false
    /// The follower's ``TailFollower/generation`` when this reader was made: every reader
    /// with a smaller one was opened before this file was (and every file older than this
    /// one was complete, for a writer that finishes a file before making the next).
    let bornAt: UInt64
    /// The follower's generation at the `fstat` that last found the end of the file. An end
    /// found before a younger file was opened says nothing about what was written to this
    /// file before that younger one existed (a file opened the moment it was created, still
    /// empty, and written in one `write()` just before its rotation): a younger reader
    /// waits until an end is found with a generation at least its own.
    private(set) var endCheckedAt: UInt64 = 0
    /// A poke waits for an older file to be read to its end (see ``poke()``).
    var deferred = false

    /// Something may have changed: read or check now, or after the step under way.
    ///
    /// While an older file of the tail (one that was at the path before this one) still has
    /// lines to read, this one waits: files are read in the order they were at the path, so
    /// a writer's lines keep their order across a rotation, and only a reader that lags
    /// (with the old file not read to its end yet) makes the new file wait — never the
    /// rotation quiet period. "Read to its end" means an end found after this file was
    /// opened (``endCheckedAt``): an older reader idle at an end it found earlier is poked
    /// to look again, and this one goes on when it has.
    func poke() {
        if closed || stopping { return }
        if busy {
            // A change while a step is under way (its reads follow each other as long as
            // they find data, with no end-of-file check between them): the file may have
            // been truncated and written past our position meanwhile, so the step's next
            // read is checked too, before its bytes go out — not only a step's first.
            checksFirstRead = true
            return
        }
        if held { return }
        if follower.olderReaderIsReading(before: self) {
            deferred = true
            follower.confirmEnds(before: self)
            return
        }
        deferred = false
        busy = true
        reachedEnd = false
        // The file may have been truncated and written again past our position since the
        // last look: the step's first read is checked before its bytes go out.
        checksFirstRead = true
        readNext(onPool: false)
    }

    /// ``poke()`` on the loop's next turn (the first read of a subscription: lines never
    /// arrive inside `subscribe`, before the caller holds its disposable).
    func pokeOnNextTurn() {
        if closed || stopping || busy || held { return }
        if follower.olderReaderIsReading(before: self) {
            deferred = true
            follower.confirmEnds(before: self)
            return
        }
        busy = true
        waitingForTurn = true
        follower.waitForNextTurn(self)
    }

    /// The file left the path (renamed away or deleted).
    func leftPath() {
        if rotatedAt == nil { rotatedAt = csys_monotonic_ns() }
    }

    /// The file is at the path again (renamed back).
    func returnedToPath() {
        rotatedAt = nil
        superseded = false
    }

    /// The loop's next turn, asked for by a read on the loop thread.
    func turnCame() {
        waitingForTurn = false
        if stopping { return closeWhenIdle() }
        readNext(onPool: false)
    }

    // MARK: - Reading

    private func readNext(onPool: Bool) {
        if stopping { return closeWhenIdle() }
        var carried = lines.takePartialLine()
        if !onPool && readsCachedDataOnLoop {
            // At least as much as is carried: a line longer than a chunk then doubles what
            // each read holds (linear copying, not quadratic).
            let count = max(TailFollower.cachedChunkSize, carried.count)
            switch FileRequest.readIfCached(fd, count: count, at: offset, after: carried, splittingAtLastLineBreak: true) {
            case .read(let read):
                return readDone(read, requested: count, onLoop: true)
            case .wouldWait(let prefix):
                carried = prefix
            case .unsupported(let prefix):
                readsCachedDataOnLoop = false
                carried = prefix
            }
        }
        let count = max(TailFollower.chunkSize, carried.count)
        request.read(fd, count: count, at: offset, after: carried, splittingAtLastLineBreak: true) { [self] read in
            readDone(read, requested: count, onLoop: false)
        }
    }

    /// A read came back: its lines are delivered, then the reader reads on or waits.
    ///
    /// The steps, in order: the reader stopping, an error or the end of the file end it
    /// here; a file cut under our first read is read again from its new position
    /// (``truncatedUnderFirstRead()``); else the chunk is split into lines
    /// (``acceptLines(_:)``), delivered (``deliverAccepted(_:at:skipped:)``), and the
    /// reader goes on (``readOnAfterChunk(onLoop:)``).
    private func readDone(_ read: ArrayReadResult, requested: Int, onLoop: Bool) {
        let n = read.count
        if stopping {
            busy = false
            return closeWhenIdle()
        }
        if n < 0 {
            busy = false
            return follower.readerFailed(UVError(code: Int32(n), operation: "read", target: path))
        }
        if n == 0 {
            lines.restorePartialLine(read.bytes)
            return atEnd()
        }
        if truncatedUnderFirstRead() { return readNext(onPool: false) }
        offset += Int64(n)
        lastData = csys_monotonic_ns()
        let wholeStart = lineStart
        guard let accepted = acceptLines(read) else { return }
        // A full read on the pool: more is very likely there, so the next read starts
        // before this chunk is delivered (a pool thread reads while the loop delivers).
        let readAhead = !onLoop && n == requested
        if readAhead { startReadAhead() }
        deliverAccepted(accepted.whole, at: wholeStart, skipped: accepted.skipped)
        if readAhead { return }  // the read-ahead's completion carries on (or closes)
        readOnAfterChunk(onLoop: onLoop)
    }

    /// Whether the file was cut under the first read after an open or a truncation: then
    /// the truncation is handled here and the bytes just read are dropped. Read on from
    /// our position, they were (most likely) the middle of the new content: the tail of
    /// some line, then lines read again from 0. Checked once per such read.
    private func truncatedUnderFirstRead() -> Bool {
        guard checksFirstRead else { return false }
        checksFirstRead = false
        guard let size = sizeIfTruncated() else { return false }
        truncated(size: size)
        return true
    }

    /// Splits a chunk into the whole lines to deliver (and the steps over lines too long
    /// to keep, when those are skipped); the unfinished rest stays in the line buffer.
    ///
    /// - Returns: the lines, or `nil` when a line over the limit ended the tail (the lines
    ///   before it were delivered first, as a line reader would have sent them one by one
    ///   before meeting it).
    private func acceptLines(_ read: ArrayReadResult) -> (whole: [UInt8]?, skipped: [SkippedLineStep])? {
        if skippingLongLineFrom != nil { return (nil, acceptSkippingLongLines(read)) }
        do {
            let whole: [UInt8]?
            if let partial = read.partialLine {
                whole = try lines.acceptWholeLines(read.bytes, partial: partial)
            } else {
                whole = try lines.acceptWholeLines([], partial: read.bytes)
            }
            if let whole { lineStart += Int64(whole.count) }
            return (whole, [])
        } catch {
            if follower.options.longLines == .skip { return (nil, acceptSkippingLongLines(read)) }
            let valid = TailFileReader.prefixOfLines(read.bytes[...], within: lines.maxLength)
            if valid > 0 { deliver(Array(read.bytes[..<valid]), at: lineStart) }
            busy = false
            follower.readerFailed(error)
            return nil
        }
    }

    /// Delivers what ``acceptLines(_:)`` found: the whole lines starting at `start`, then
    /// the lines and skipped ranges around lines too long (each skip a
    /// ``TailLossReason/lineTooLong`` loss), until the reader stops.
    private func deliverAccepted(_ whole: [UInt8]?, at start: Int64, skipped: [SkippedLineStep]) {
        if let whole { deliver(whole, at: start) }
        for step in skipped where !stopping {
            switch step {
            case .lines(let bytes, let at): deliver(bytes, at: at)
            case .skipped(let range):
                follower.lost(.lost(path: path, identity: identity, range: range, reason: .lineTooLong))
            }
        }
    }

    /// After a chunk was delivered (and no read-ahead carries on): close if stopping; after
    /// a read on the loop, read on at the next turn (more may be cached); after one on the
    /// pool, the file's end was reached.
    private func readOnAfterChunk(onLoop: Bool) {
        if stopping {
            busy = false
            return closeWhenIdle()
        }
        if onLoop {
            // More may be cached: read on at the next turn.
            waitingForTurn = true
            return follower.waitForNextTurn(self)
        }
        atEnd()
    }

    /// How many leading bytes of `bytes` are whole lines within `maxLength` (not counting
    /// one `\r` before a break): the part of a chunk before a line over the limit.
    static func prefixOfLines(_ bytes: ArraySlice<UInt8>, within maxLength: Int) -> Int {
        var lineStart = bytes.startIndex
        var index = bytes.startIndex
        while index < bytes.endIndex {
            if bytes[index] == 10 {
                let length = index - lineStart - (index > lineStart && bytes[index - 1] == 13 ? 1 : 0)
                if length > maxLength { return lineStart - bytes.startIndex }
                lineStart = index + 1
            }
            index += 1
        }
        return lineStart - bytes.startIndex
    }

    /// What a read gives under ``TailLongLines/skip``, in file order.
    enum SkippedLineStep {
        /// Whole lines within the limit, and the offset of their first byte.
        case lines([UInt8], Int64)
        /// A line over the limit, left out.
        case skipped(TailByteRange)
    }

    /// The lines of `read` (its bytes start at ``lineStart``) with every line over the limit
    /// left out, moving ``lineStart`` past what it consumes. A partial line over the limit
    /// is dropped, and so is everything read after it up to its break (``skippingLongLineFrom``);
    /// a partial line within the limit is kept as usual. The slow path: only reads that hold
    /// such a line, or follow one, come here.
    private func acceptSkippingLongLines(_ read: ArrayReadResult) -> [SkippedLineStep] {
        var steps: [SkippedLineStep] = []
        // `whole` ends with a break (or is empty); `partial` holds none.
        var whole: ArraySlice<UInt8> = read.partialLine != nil ? read.bytes[...] : []
        let partial = read.partialLine ?? read.bytes
        if let from = skippingLongLineFrom {
            // The line being left out goes on to the first break read.
            guard let end = whole.firstIndex(of: 10) else {
                lineStart += Int64(whole.count + partial.count)
                return steps
            }
            lineStart += Int64(end - whole.startIndex + 1)
            steps.append(.skipped(TailByteRange(from, lineStart)))
            skippingLongLineFrom = nil
            whole = whole[(end + 1)...]
        }
        while !whole.isEmpty {
            let valid = TailFileReader.prefixOfLines(whole, within: lines.maxLength)
            if valid > 0 {
                steps.append(.lines(Array(whole.prefix(valid)), lineStart))
                lineStart += Int64(valid)
                whole = whole.dropFirst(valid)
            }
            // A line over the limit, ending at the next break (`whole` ends with one).
            guard let end = whole.firstIndex(of: 10) else { break }
            let length = Int64(end - whole.startIndex + 1)
            steps.append(.skipped(TailByteRange(lineStart, lineStart + length)))
            lineStart += length
            whole = whole[(end + 1)...]
        }
        let limit = lines.maxLength + (partial.last == 13 ? 1 : 0)
        if partial.count > limit {
            skippingLongLineFrom = lineStart
            lineStart += Int64(partial.count)
        } else {
            lines.restorePartialLine(partial)
        }
        return steps
    }

    /// Sends whole lines that start at `start`, minus lines still to be skipped.
    private func deliver(_ whole: [UInt8], at start: Int64) {
        learnHead(whole, at: start)
        var bytes = whole
        var from = start
        if skipLines > 0 {
            var cut = 0
            bytes.withUnsafeBufferPointer { buffer in
                guard let base = buffer.baseAddress else { return }
                while skipLines > 0, cut < buffer.count, let hit = memchrNewline(base + cut, buffer.count - cut) {
                    skipLines -= 1
                    cut = hit - base + 1
                }
            }
            if cut == bytes.count { return }
            bytes = Array(bytes[cut...])
            from += Int64(cut)
        }
        follower.deliver(TailChunk(identity: identity, path: path, offset: from, endOffset: from + Int64(bytes.count), bytes: bytes))
    }

    /// Takes what `bytes` (the file's, read from `start`) add to the known first bytes, and
    /// tells the store before they go out: a consumer acknowledges only bytes it was sent,
    /// so a saved position past the first bytes is saved with them (the end-of-file check
    /// would tell the store too, but maybe after the consumer acknowledged and saved).
    private func learnHead(_ bytes: [UInt8], at start: Int64) {
        let known = head.count
        guard known < FileIdentity.fingerprintLength, start <= Int64(known), start + Int64(bytes.count) > Int64(known) else {
            return
        }
        let upTo = min(bytes.count, FileIdentity.fingerprintLength - Int(start))
        head += bytes[(known - Int(start))..<upTo]
        follower.store?.headGrew(identity, to: head)
    }

    /// Starts the read after a full one on the spare request, which becomes the step's.
    private func startReadAhead() {
        let next = spareRequest ?? FileRequest(loop: follower.loop)
        spareRequest = request
        request = next
        // On the pool even if the next chunk is cached: read on the loop thread it would
        // be delivered before this one.
        readNext(onPool: true)
    }

    /// At the end of what was there: check for truncation, growth, and the end of a
    /// rotated file; then idle until the next poke.
    private func atEnd() {
        var info = stat()
        if fstat(fd, &info) != 0 {
            busy = false
            return follower.readerFailed(UVError(code: errno, operation: "fstat", target: path))
        }
        let size = Int64(info.st_size)
        if isTruncated(size: size) {
            truncated(size: size)
            return readNext(onPool: false)
        }
        lastKnownSize = max(lastKnownSize, size)
        if size > offset { return readNext(onPool: false) }
        deleted = info.st_nlink == 0
        // (Not while `.line(k)` still has breaks to skip: the unfinished line is before line k.)
        if sendsUnfinishedLineAtFirstEnd && skipLines == 0 {
            sendsUnfinishedLineAtFirstEnd = false
            let partial = lines.takePartialLine()
            if !partial.isEmpty {
                let at = lineStart
                lineStart += Int64(partial.count)
                learnHead(partial, at: at)
                follower.deliver(TailChunk(identity: identity, path: path, offset: at, endOffset: lineStart, bytes: partial))
                if stopping {
                    busy = false
                    return closeWhenIdle()
                }
            }
        }
        busy = false
        reachedEnd = true
        endCheckedAt = follower.generation
        follower.readerReachedEnd(self)
        if closed || stopping { return }
        if let rotatedAt {
            let quietSince = max(rotatedAt, lastData)
            if deleted || superseded || csys_monotonic_ns() &- quietSince >= follower.quietNanoseconds {
                if deleted || superseded || follower.hasCurrentFile { follower.finish(self) }
            }
        }
    }

    /// Whether a file of `size` bytes is not the one read so far: shorter than our
    /// position, or starting with other bytes.
    private func isTruncated(size: Int64) -> Bool { size < offset || headChanged(size: size) }

    /// The file's size if ``isTruncated(size:)`` (one `fstat`, and one read of at most 64
    /// bytes), else `nil` (also when `fstat` fails: the end-of-file check reports that).
    private func sizeIfTruncated() -> Int64? {
        var info = stat()
        guard fstat(fd, &info) == 0 else { return nil }
        let size = Int64(info.st_size)
        return isTruncated(size: size) ? size : nil
    }

    /// Whether the file's first bytes are no longer the ones it started with: truncated
    /// and written again past our position between two looks (`fstat` alone would see
    /// growth). One read of at most 64 bytes.
    private func headChanged(size: Int64) -> Bool {
        if head.isEmpty && size == 0 { return false }
        let want = Int(min(Int64(FileIdentity.fingerprintLength), size))
        if want < head.count { return true }  // shorter than its known head: truncated
        var now = [UInt8](repeating: 0, count: want)
        // A read that fails counts as no change (what this check has always done).
        guard let n = try? readAt(fd, into: &now, count: want, at: 0) else { return false }
        now.removeSubrange(n...)
        if !now.starts(with: head) { return true }
        if now.count > head.count { follower.store?.headGrew(identity, to: now) }
        head = now
        return false
    }

    /// Starts again at 0 after a truncation, reporting what was not read.
    private func truncated(size: Int64) {
        endSkippedLine()
        let lostUpTo = max(offset, lastKnownSize)
        // What a copy of the content being cut is a copy of, taken before the store counts
        // the cut (a consumer names the copy's lines by it).
        let origin = follower.store?.originOfContent(of: identity)
        // The store first: a consumer told of the truncation may save it at once (logcast's
        // edge names the new content by the store's count of truncations).
        follower.store?.truncated(identity)
        follower.notify(.truncated(path: path, identity: identity, at: offset))
        // copytruncate made a copy first: what we had not read yet is read from there.
        let recoveredUpTo = follower.recoverFromCopy(head: head, from: lineStart, origin: origin) ?? lineStart
        if lostUpTo > recoveredUpTo {
            follower.lost(TailNotice.lost(
                path: path, identity: identity, range: TailByteRange(recoveredUpTo, lostUpTo), reason: .truncatedBeforeRead))
        }
        follower.rememberHead(head)
        offset = 0
        lineStart = 0
        lastKnownSize = size
        lines.reset()
        skipLines = 0
        head = []
        sendsUnfinishedLineAtFirstEnd = false
        lastData = csys_monotonic_ns()
    }

    /// A line over the limit being left out ends without its break (the file was truncated,
    /// or is finished): what was dropped of it is reported.
    private func endSkippedLine() {
        guard let from = skippingLongLineFrom else { return }
        skippingLongLineFrom = nil
        follower.lost(.lost(path: path, identity: identity, range: TailByteRange(from, lineStart), reason: .lineTooLong))
    }

    // MARK: - Finishing and stopping

    /// The rotated file is done: its unfinished last line is as complete as it will get
    /// and is sent with a line break added.
    func finishLines() {
        endSkippedLine()
        if let partial = lines.finishWholeLines() {
            let at = lineStart
            lineStart = offset
            follower.deliver(TailChunk(identity: identity, path: path, offset: at, endOffset: offset, bytes: partial))
        }
    }

    /// The bytes known to be unread (for a reader given up): from the carried line to the
    /// last known size.
    var unreadRange: TailByteRange {
        var info = stat()
        let size = fstat(fd, &info) == 0 ? Int64(info.st_size) : lastKnownSize
        return TailByteRange(lineStart, max(size, offset))
    }

    /// Stops reading and closes the descriptor once nothing is in flight.
    func stop() {
        if closed || stopping { return }
        stopping = true
        if waitingForTurn { waitingForTurn = false; busy = false }
        if request.inFlight || (spareRequest?.inFlight ?? false) {
            request.cancel()
            spareRequest?.cancel()
            return
        }
        busy = false
        closeWhenIdle()
    }

    private func closeWhenIdle() {
        if closed || request.inFlight || (spareRequest?.inFlight ?? false) || waitingForTurn { return }
        closed = true
        _ = Glibc.close(fd)
        follower.readerClosed(self)
    }
}

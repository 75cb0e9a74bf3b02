import CLibUV
import CSystemShims
import Glibc

/// One subscription of ``File/tail(_:from:pollInterval:rotationQuietPeriod:maxLineLength:on:)``:
/// the `tail -F` state machine, on the loop's thread.
///
/// **Passes.** All work happens in *passes*, one at a time, each a chain of requests to
/// libuv's thread pool through a ``FileRequest`` (two of them, taking turns, while a
/// catch-up read runs ahead; never two requests in flight), reads of cached data on the
/// loop thread, and waits for the loop's next turn:
///
/// 1. `stat` the path. If it names a file we do not have open (the first file, or a new
///    one after a rotation), `open` it and `fstat` the descriptor (the identity that
///    counts is the descriptor's: the path may change again between `stat` and `open`),
///    and queue it behind the files we already follow.
/// 2. Read the **head** of the queue from our offset to its end in large chunks, splitting
///    lines as they come; then `fstat` it: smaller than our offset means it was truncated
///    (start again at 0), larger means it grew meanwhile (read on). A read first takes
///    what the page cache holds, on the loop thread and without waiting for storage
///    (``FileRequest/readIfCached(_:count:at:after:splittingAtLastLineBreak:)``), one
///    chunk per loop turn; what is not cached is read on libuv's pool, where a read that
///    fills its chunk (catching up) starts the next one at once, on a second request,
///    before its own lines are delivered: a pool thread reads while the loop thread
///    delivers. Each read makes a new array; for whole-line chunks it starts with the
///    partial line carried over, and is itself the chunk sent.
/// 3. At the head's end, if a newer file is queued and the head has been quiet (no new
///    data) for the rotation quiet period, the head is finished: its unfinished last line
///    is sent, its descriptor closed, and the next file becomes the head (read from 0).
///
/// A pass is requested by every inotify event in the path's directory (`uv_fs_event` on
/// the directory: it sees creations, renames and writes by name), by a repeating timer
/// (the polling fallback: inotify misses events on some file systems and never sees a
/// directory that does not exist yet), and once at the start. A request during a pass
/// runs one more pass right after it, so no notification is lost and passes never overlap.
///
/// **Why keep old descriptors.** After a rotation by rename, the writer may still write a
/// few lines to the old file before it reopens the path. Keeping the old descriptor and
/// finishing it only once it has gone quiet *and* a newer file exists reads those lines
/// too (GNU `tail -F` switches at once and loses them). Files are read strictly one after
/// another, so lines keep the order in which a single writer wrote them.
///
/// **Stopping.** ``stop()`` (disposal, an error, loop shutdown) stops the timer, closes the
/// watch and next-turn handles, cancels the request in flight if libuv still can, and once
/// the current pass has unwound closes every descriptor (one async close after another),
/// then unregisters from the loop.
///
/// Thread-safety: loop-thread confined; ``File`` reaches the loop with
/// ``EventLoop/performOnLoop(_:)``.
final class TailFollower: LoopResource, LoopSourceWatcher, @unchecked Sendable {
    /// Bytes per read on libuv's pool: large, because a catch-up from storage is dominated
    /// by how many requests (each a trip through the pool and back) it needs.
    static let chunkSize = 256 * 1024
    /// Bytes per read of cached data on the loop thread: small, since such a read costs no
    /// trip anywhere, only a loop turn (a few microseconds). It holds the loop for a few
    /// microseconds at most, and a chunk this size is half of a default 64 KiB pipe
    /// buffer: a subscriber that writes chunks to a pipe or socket (`ruv-tail | grep`)
    /// finds room for the next one while the reader on the other side is still busy with
    /// the last, so reading here and reading there overlap instead of taking turns
    /// (measured in Benchmarks/README.md, "Tail throughput").
    static let cachedChunkSize = 32 * 1024

    /// A file being followed: its open descriptor, identity and read position.
    final class TailFile {
        let fd: Int32
        let identity: FileIdentity
        /// Bytes consumed so far (the next read's position).
        var offset: Int64 = 0
        /// When a read last returned data (or the file was opened), monotonic ns.
        var lastData: UInt64
        /// Whether reads try the page cache on the loop thread first
        /// (``FileRequest/readIfCached(_:count:at:after:splittingAtLastLineBreak:)``);
        /// cleared for good when the file system cannot promise not to wait.
        var readsCachedDataOnLoop: Bool

        init(fd: Int32, identity: FileIdentity, readsCachedDataOnLoop: Bool) {
            self.fd = fd
            self.identity = identity
            self.readsCachedDataOnLoop = readsCachedDataOnLoop
            lastData = csys_monotonic_ns()
        }
    }

    let loop: EventLoop
    let path: String
    /// The directory whose inotify events wake us (the path's parent).
    let directory: String
    let startPosition: TailStart
    let pollNanoseconds: UInt64
    let quietNanoseconds: UInt64
    /// Where lines go (the caller checks for disposal): one `String` per line, or whole
    /// lines as byte chunks (``File/tailChunks(_:from:pollInterval:rotationQuietPeriod:maxLineLength:on:)``).
    enum Output {
        case lines((String) -> Void)
        case chunks(([UInt8]) -> Void)
    }

    let output: Output
    /// Sends the error and ends the subscription (which calls ``stop()``).
    let fail: (any Error) -> Void

    /// The request the pass runs on (at most one of the two is in flight at a time).
    private var request: FileRequest
    /// The other request, for the read-ahead: the next read starts on it while the chunk
    /// just read is delivered, and the two swap roles. Made at the first full read.
    private var spareRequest: FileRequest?
    private var lines: LineBuffer
    /// The files being followed, oldest (the one being read) first.
    private var files: [TailFile] = []
    /// Line breaks still to skip before lines count (for `.line(k)`).
    private var skipLines = 0
    /// Whether the first stat has happened (it decides whether the start position applies).
    private var checkedPathOnce = false
    /// Whether the next file opened gets the start position (the path existed at start).
    private var applyStartToNextOpen = false

    private var passRunning = false
    private var passRequested = false
    private var stopped = false
    private var registered = false
    /// A close is in flight: never cancel it (a cancelled close leaks the descriptor).
    private var closingDescriptor = false
    private var cleaningUp = false

    private var timer: Disposable?
    private var watch: UnsafeMutablePointer<uv_fs_event_t>?
    private var watchActive = false
    /// Brings the pass back on the loop's next turn (made at the first need; see
    /// ``readOnNextTurn()``).
    private var nextTurn: UnsafeMutablePointer<uv_idle_t>?
    /// The pass waits for the next turn: its only outstanding step (no request in flight).
    private var waitingForNextTurn = false
    /// Whether new files start out reading cached data on the loop thread (tests turn it
    /// off to run every read through the pool).
    let readsCachedDataOnLoop: Bool

    init(
        loop: EventLoop, path: String, start: TailStart, pollInterval: Double, quietPeriod: Double,
        maxLineLength: Int, output: Output, readsCachedDataOnLoop: Bool = true, fail: @escaping (any Error) -> Void
    ) {
        self.readsCachedDataOnLoop = readsCachedDataOnLoop
        self.loop = loop
        self.path = path
        self.directory = TailFollower.parentDirectory(of: path)
        self.startPosition = start
        self.pollNanoseconds = UInt64(max(1_000_000, SchedulerTime.nanoseconds(pollInterval)))
        self.quietNanoseconds = UInt64(max(0, SchedulerTime.nanoseconds(quietPeriod)))
        self.output = output
        self.fail = fail
        self.lines = LineBuffer(maxLength: maxLineLength)
        request = FileRequest(loop: loop)
    }

    /// `dirname(path)`, without touching the file system.
    static func parentDirectory(of path: String) -> String {
        var bytes = Array(path.utf8)
        while bytes.count > 1 && bytes.last == UInt8(ascii: "/") { bytes.removeLast() }
        guard let slash = bytes.lastIndex(of: UInt8(ascii: "/")) else { return "." }
        if slash == 0 { return "/" }
        return String(decoding: bytes[..<slash], as: UTF8.self)
    }

    // MARK: - Starting and stopping

    /// Starts watching and polling, and runs the first pass (loop thread).
    func start() {
        if stopped { return }
        loop.register(self)
        registered = true

        let handle = UnsafeMutablePointer<uv_fs_event_t>.allocate(capacity: 1)
        uv_fs_event_init(loop.uvLoop, handle)
        // The handle holds us until its close callback.
        handle.pointee.data = Unmanaged.passRetained(self).toOpaque()
        watch = handle
        startWatch()

        let now = csys_monotonic_ns()
        timer = loop.scheduleTimer(at: now &+ pollNanoseconds, repeatEvery: pollNanoseconds) { [self] in
            requestPass()
        }
        requestPass()
    }

    /// Ends the subscription without another event (loop thread; re-entrant from inside a
    /// line callback).
    func stop() {
        if stopped { return }
        stopped = true
        timer?.dispose()
        timer = nil
        if let handle = watch {
            watch = nil
            watchActive = false
            TailFollower.close(handle)
        }
        if let handle = nextTurn {
            nextTurn = nil
            TailFollower.close(handle)
        }
        if passRunning {
            if waitingForNextTurn {
                // Nothing is in flight and the turn will not come: unwind the pass now.
                waitingForNextTurn = false
                endPass()
            } else if !closingDescriptor {
                // The pass unwinds at its next step and then cleans up.
                request.cancel()
            }
        } else {
            cleanUp()
        }
    }

    func closeForLoopShutdown() { stop() }

    /// Closes one of our handles, whose `data` holds a retain on us: the close callback
    /// lets go of it and frees the handle's memory.
    private static func close<Handle>(_ handle: UnsafeMutablePointer<Handle>) {
        uv_close(EventLoop.handle(handle)) { h in
            guard let h else { return }
            if let data = h.pointee.data { Unmanaged<TailFollower>.fromOpaque(data).release() }
            UnsafeMutableRawPointer(h).deallocate()
        }
    }

    /// Closes the descriptors one after another, then lets go of the loop.
    private func cleanUp() {
        if cleaningUp { return }
        cleaningUp = true
        closeRemaining()
    }

    private func closeRemaining() {
        if let file = files.popLast() {
            closingDescriptor = true
            request.close(file.fd) { [self] _ in
                closingDescriptor = false
                closeRemaining()
            }
            return
        }
        if registered {
            registered = false
            loop.unregister(self)
        }
    }

    // MARK: - Watching the directory

    /// Starts the inotify watch on the directory if it is not running (it fails while the
    /// directory does not exist; polling covers that time, and the next pass tries again).
    private func startWatch() {
        guard let handle = watch, !watchActive, !stopped else { return }
        let rc = directory.withCString { dir in
            uv_fs_event_start(handle, { h, _, _, status in
                guard let h, let data = h.pointee.data else { return }
                Unmanaged<TailFollower>.fromOpaque(data).takeUnretainedValue().watchFired(status: status)
            }, dir, 0)
        }
        watchActive = rc == 0
    }

    /// Restarts the watch: after the path went missing, its directory may have been
    /// removed and made again, and an inotify watch does not follow a new directory.
    private func restartWatch() {
        if let handle = watch, watchActive {
            uv_fs_event_stop(handle)
            watchActive = false
        }
        startWatch()
    }

    private func watchFired(status: Int32) {
        if stopped { return }
        if status < 0, let handle = watch {
            // The watch broke (the directory went away): poll until a pass restarts it.
            uv_fs_event_stop(handle)
            watchActive = false
        }
        requestPass()
    }

    // MARK: - Passes

    /// Runs a pass now, or right after the one under way.
    private func requestPass() {
        if stopped { return }
        if passRunning {
            passRequested = true
            return
        }
        beginPass()
    }

    private func beginPass() {
        passRunning = true
        passRequested = false
        request.stat(path) { [self] rc in pathChecked(rc) }
    }

    private func endPass() {
        passRunning = false
        if stopped {
            cleanUp()
        } else if passRequested {
            beginPass()
        }
    }

    /// Sends `error` (which ends the subscription and stops us) and unwinds the pass.
    private func failPass(_ error: any Error) {
        if !stopped { fail(error) }
        stopped = true
        endPass()
    }

    private func pathChecked(_ rc: Int) {
        if stopped { return endPass() }
        let first = !checkedPathOnce
        checkedPathOnce = true
        if rc == Int(UV_ENOENT.rawValue) {
            // Missing (or its directory is): wait for it. Whatever appears later is a new
            // file and is read from its beginning.
            restartWatch()
            return readHead()
        }
        if rc < 0 { return failPass(UVError(code: Int32(rc), operation: "stat", target: path)) }
        if first { applyStartToNextOpen = true }
        startWatch()
        let identity = FileIdentity(request.lastStat)
        if files.contains(where: { $0.identity == identity }) { return readHead() }
        request.open(path, flags: O_RDONLY) { [self] rc in opened(rc) }
    }

    private func opened(_ rc: Int) {
        if stopped {
            if rc >= 0 { return closeDescriptor(Int32(rc)) { [self] in endPass() } }
            return endPass()
        }
        if rc == Int(UV_ENOENT.rawValue) {
            // Gone between stat and open: the next file to appear is a new one.
            applyStartToNextOpen = false
            return readHead()
        }
        if rc < 0 { return failPass(UVError(code: Int32(rc), operation: "open", target: path)) }
        let fd = Int32(rc)
        request.fstat(fd) { [self] rc in openedFileChecked(fd, rc) }
    }

    private func openedFileChecked(_ fd: Int32, _ rc: Int) {
        if stopped { return closeDescriptor(fd) { [self] in endPass() } }
        if rc < 0 {
            let error = UVError(code: Int32(rc), operation: "fstat", target: path)
            return closeDescriptor(fd) { [self] in failPass(error) }
        }
        let stat = request.lastStat
        if isDirectory(stat) {
            let error = UVError(code: UV_EISDIR.rawValue, operation: "open", target: path)
            return closeDescriptor(fd) { [self] in failPass(error) }
        }
        let identity = FileIdentity(stat)
        if files.contains(where: { $0.identity == identity }) {
            // The path changed back to a file we follow between our stat and open.
            return closeDescriptor(fd) { [self] in readHead() }
        }
        let file = TailFile(fd: fd, identity: identity, readsCachedDataOnLoop: readsCachedDataOnLoop)
        files.append(file)
        if applyStartToNextOpen {
            applyStartToNextOpen = false
            if files.count == 1 { return applyStart(to: file, size: Int64(clamping: stat.st_size)) }
        }
        readHead()
    }

    // MARK: Start position

    private func applyStart(to file: TailFile, size: Int64) {
        switch startPosition {
        case .beginning:
            readHead()
        case .line(let k):
            skipLines = k <= 1 ? 0 : k - 1
            readHead()
        case .end:
            scanBack(file, before: size, breaksWanted: 1, found: 0)
        case .lastLines(let n):
            // The last n complete lines start after the (n+1)-th line break from the end.
            scanBack(file, before: size, breaksWanted: n <= 0 ? 1 : (n == Int.max ? n : n + 1), found: 0)
        }
    }

    /// Reads backwards from `end` in chunks, counting line breaks, and sets the file's
    /// offset just after the `breaksWanted`-th one from the end (or to 0 if there are fewer).
    private func scanBack(_ file: TailFile, before end: Int64, breaksWanted: Int, found: Int) {
        if end <= 0 {
            file.offset = 0
            return readHead()
        }
        let length = Int(min(Int64(TailFollower.chunkSize), end))
        let from = end - Int64(length)
        request.read(file.fd, count: length, at: from, after: []) { [self] read in
            let n = read.count
            let window = read.bytes
            if stopped { return endPass() }
            if n < 0 { return failPass(UVError(code: Int32(n), operation: "read", target: path)) }
            if n < length {
                // The file shrank while we looked: start at 0 and let truncation handling
                // and the normal reads sort it out.
                file.offset = 0
                return readHead()
            }
            var found = found
            var index = n - 1
            while index >= 0 {
                if window[index] == 10 {
                    found += 1
                    if found == breaksWanted {
                        file.offset = from + Int64(index) + 1
                        return readHead()
                    }
                }
                index -= 1
            }
            scanBack(file, before: from, breaksWanted: breaksWanted, found: found)
        }
    }

    // MARK: Reading

    /// Reads the next chunk of the head: what the page cache holds at once, on the loop
    /// thread, and otherwise (or with `onPool`) on libuv's pool. For whole-line chunks, the
    /// partial line the last chunk ended with goes into the read, so the new bytes land
    /// right after it, and the read cuts the array at its last line break: that array is
    /// the chunk sent (see ``FileRequest/read(_:count:at:after:splittingAtLastLineBreak:_:)``).
    private func readHead(onPool: Bool = false) {
        if stopped { return endPass() }
        guard let head = files.first else { return endPass() }
        var carried: [UInt8]
        let wholeLines: Bool
        switch output {
        case .chunks: (carried, wholeLines) = (lines.takePartialLine(), true)
        case .lines: (carried, wholeLines) = ([], false)
        }
        if !onPool && head.readsCachedDataOnLoop {
            // At least as much as is carried: a line longer than a chunk then doubles what
            // each read holds, so carrying it on costs copies in proportion to its length,
            // not to its length squared.
            let count = max(TailFollower.cachedChunkSize, carried.count)
            switch FileRequest.readIfCached(
                head.fd, count: count, at: head.offset, after: carried, splittingAtLastLineBreak: wholeLines)
            {
            case .read(let read):
                return headRead(head, read, requested: count, onLoop: true)
            case .wouldWait(let prefix):
                carried = prefix
            case .unsupported(let prefix):
                head.readsCachedDataOnLoop = false
                carried = prefix
            }
        }
        let count = max(TailFollower.chunkSize, carried.count)
        request.read(
            head.fd, count: count, at: head.offset, after: carried, splittingAtLastLineBreak: wholeLines
        ) { [self] read in
            headRead(head, read, requested: count, onLoop: false)
        }
    }

    /// A read of the head is back: for whole-line chunks, the carried partial line and the
    /// bytes read, split at the last line break; otherwise the bytes read. `requested`: the
    /// byte count asked for; `onLoop`: read from the page cache on the loop thread, rather
    /// than on the pool.
    private func headRead(_ head: TailFile, _ read: ArrayReadResult, requested: Int, onLoop: Bool) {
        let n = read.count
        if stopped { return endPass() }
        if n < 0 { return failPass(UVError(code: Int32(n), operation: "read", target: path)) }
        if n == 0 {
            // Nothing new: the carried partial line waits on.
            if case .chunks = output { lines.restorePartialLine(read.bytes) }
            return request.fstat(head.fd) { [self] rc in headChecked(head, rc) }
        }
        head.offset += Int64(n)
        head.lastData = csys_monotonic_ns()
        // A full read on the pool: more is very likely there, so the next read starts
        // before this chunk's lines are delivered, and a pool thread reads while the loop
        // thread delivers. Nothing else is in flight (this is the completion of the pass's
        // only request), so the pass still has exactly one request out: the read-ahead,
        // whose completion carries the pass on. A truncation or rotation is noticed as
        // before, at the first short read. (A read on the loop thread is followed by the
        // next one on the next turn instead, below.)
        let readAhead = !onLoop && n == requested
        var failure: (any Error)?
        switch output {
        case .chunks(let emit):
            // Check first: the read-ahead starts with this chunk's partial line.
            let whole: [UInt8]?
            do {
                if let partial = read.partialLine {
                    whole = try lines.acceptWholeLines(skipLeadingLines(read.bytes), partial: partial)
                } else {
                    // No line break in what was read: all of it is one unfinished line.
                    whole = try lines.acceptWholeLines([], partial: read.bytes)
                }
            } catch {
                return failPass(error)
            }
            if readAhead { startReadAhead() }
            if let whole, !stopped { emit(whole) }
        case .lines(let emit):
            if readAhead { startReadAhead() }
            if stopped { break }
            read.bytes.withUnsafeBytes { raw in
                let start = skipLeadingLines(in: raw)
                do {
                    try lines.append(UnsafeRawBufferPointer(rebasing: raw[start...]), emit)
                } catch {
                    failure = error
                }
            }
        }
        if readAhead {
            if let failure {
                // Fail now; the read-ahead's completion sees `stopped` and ends the pass,
                // and only then are descriptors closed (never under a read in flight).
                if !stopped { fail(failure) }
                stopped = true
            }
            // If a line callback disposed the subscription, `stop()` has tried to cancel
            // the read-ahead, and its completion (cancelled or not) ends the pass.
            return
        }
        if let failure { return failPass(failure) }
        // A line callback may have disposed the subscription.
        if stopped { return endPass() }
        // From the page cache: more may be cached (a short read there can also mean the
        // rest is not cached yet), so read on, on the next turn; the read at the end gets
        // 0 and leads to the `fstat` below.
        if onLoop { return readOnNextTurn() }
        // Short: the end for now. `fstat` for truncation and growth.
        request.fstat(head.fd) { [self] rc in headChecked(head, rc) }
    }

    /// Reads the head again on the loop's next turn, after one round of IO polling: a
    /// catch-up on cached data (read on the loop thread) takes one chunk per turn, so the
    /// loop's sockets and timers keep their turns while a big file is read.
    private func readOnNextTurn() {
        let handle = nextTurn ?? {
            let made = UnsafeMutablePointer<uv_idle_t>.allocate(capacity: 1)
            uv_idle_init(loop.uvLoop, made)
            // The handle holds us until its close callback (in `stop()`).
            made.pointee.data = Unmanaged.passRetained(self).toOpaque()
            nextTurn = made
            return made
        }()
        waitingForNextTurn = true
        uv_idle_start(handle) { h in
            guard let h, let data = h.pointee.data else { return }
            uv_idle_stop(h)
            Unmanaged<TailFollower>.fromOpaque(data).takeUnretainedValue().nextTurnCame()
        }
    }

    private func nextTurnCame() {
        waitingForNextTurn = false
        readHead()
    }

    /// Starts the read after a full one on the spare request, which becomes the pass's.
    private func startReadAhead() {
        let next = spareRequest ?? FileRequest(loop: loop)
        spareRequest = request
        request = next
        // libuv refusing the read outright fails the pass at once (`stopped` is set then,
        // and the chunk in hand has no one to go to). On the pool even if the next chunk is
        // cached: read on the loop thread, it would be delivered before this one.
        readHead(onPool: true)
    }

    private func headChecked(_ head: TailFile, _ rc: Int) {
        if stopped { return endPass() }
        if rc < 0 { return failPass(UVError(code: Int32(rc), operation: "fstat", target: path)) }
        let size = Int64(clamping: request.lastStat.st_size)
        if size < head.offset {
            // Truncated (copy-truncate rotation): what we delivered stays delivered, the
            // unfinished line before the cut is dropped, and reading starts again at 0.
            head.offset = 0
            lines.reset()
            skipLines = 0
            return readHead()
        }
        if size > head.offset { return readHead() }
        if files.count > 1 && csys_monotonic_ns() &- head.lastData >= quietNanoseconds {
            return retireHead()
        }
        endPass()
    }

    /// Finishes the head after a rotation: its writer has moved on, so its unfinished last
    /// line is as complete as it will get and is sent; the next file is read from 0.
    private func retireHead() {
        let head = files.removeFirst()
        switch output {
        case .lines(let emit): if let partial = lines.finish(), !stopped { emit(partial) }
        case .chunks(let emit): if let partial = lines.finishWholeLines(), !stopped { emit(partial) }
        }
        skipLines = 0
        closeDescriptor(head.fd) { [self] in readHead() }
    }

    /// While lines are still to be skipped (a start at line k): skips them in `raw` and
    /// returns where the lines to deliver begin (`raw.count` when all of it was skipped).
    private func skipLeadingLines(in raw: UnsafeRawBufferPointer) -> Int {
        guard skipLines > 0, let base = raw.baseAddress?.assumingMemoryBound(to: UInt8.self) else {
            return skipLines > 0 ? raw.count : 0
        }
        var start = 0
        while skipLines > 0, start < raw.count, let hit = memchrNewline(base + start, raw.count - start) {
            skipLines -= 1
            start = hit - base + 1
        }
        return skipLines > 0 ? raw.count : start
    }

    /// ``skipLeadingLines(in:)`` for a whole-line chunk: the rest of `bytes` (a copy only
    /// while lines are being skipped, at the start of a `.line(k)` tail).
    private func skipLeadingLines(_ bytes: [UInt8]) -> [UInt8] {
        if skipLines == 0 { return bytes }
        let start = bytes.withUnsafeBytes { skipLeadingLines(in: $0) }
        return Array(bytes[start...])
    }

    private func closeDescriptor(_ fd: Int32, then next: @escaping () -> Void) {
        closingDescriptor = true
        request.close(fd) { [self] _ in
            closingDescriptor = false
            next()
        }
    }
}

import CLibUV
import CSystemShims
import Glibc

/// One subscription of ``File/follow(_:from:checkpoints:options:notices:on:)`` (and so of
/// `File.tail` and `File.tailChunks`): follows every file that lives at a path, by
/// identity, on the loop's thread.
///
/// **Files, not a path.** Each file the path ever names while we follow it gets a
/// ``TailFileReader`` of its own, opened the moment it is seen and read to its end
/// independently of the others. The file at the path is the *current* one; when another
/// file takes the path (a rotation by rename, or delete-and-create) the old reader goes on
/// reading its file — including lines its writer appends after the rename, before it
/// reopens the path (GNU `tail -F` loses those) — until it is deleted, replaced once more,
/// or quiet for the rotation quiet period while a newer file is at the path. However many
/// rotations happen while a reader lags behind, every file is opened when it appears and
/// read to its end, in the order the files were at the path (a newer file waits only while an
/// older one still has lines to read). Each chunk is tagged
/// with its file's identity and byte offset.
///
/// **Seeing changes.** An inotify watch on the path's directory (`uv_fs_event`): an event
/// naming the path (created, moved in, moved out, deleted) makes us `stat` the path and
/// open a new file at once; a change event pokes the current reader (which also checks
/// for truncation); an event naming another entry pokes the rotated readers (their files
/// have other names now). A timer every poll interval does both for every reader, covering
/// missed events and the quiet periods. Where inotify cannot work — network and FUSE file
/// systems, where other hosts' writes never raise an event; a watch that fails — a
/// `uv_fs_poll` on the path takes the watch's place (as `tail -F` reverts to polling), and
/// a notice says so. `TailOptions.usePolling` or `RUV_TAIL_POLL=1` forces it.
///
/// **Start.** What the path holds when `subscribe` runs is opened there and then
/// (``plan(_:start:store:sendsUnfinishedLastLine:)``), with the start position applied;
/// anything that appears later is read from byte 0. With a ``TailCheckpointStore``, the
/// files it remembers are resumed first, the current file only after them.
///
/// **Stopping.** ``stop()`` (disposal, an error, loop shutdown) stops the timer, closes the
/// watch, poll and next-turn handles, and stops every reader (each closes its descriptor
/// once its request in flight, if any, is back); the last one unregisters from the loop.
///
/// Thread-safety: loop-thread confined; reached through ``EventLoop/perform(_:)``.
final class TailFollower: LoopResource, LoopSourceWatcher, @unchecked Sendable {
    /// Bytes per read on libuv's pool: large, because a catch-up from storage is dominated
    /// by how many requests (each a trip through the pool and back) it needs.
    static let chunkSize = 256 * 1024
    /// Bytes per read of cached data on the loop thread: small, since such a read costs no
    /// trip anywhere, only a loop turn. It holds the loop for a few microseconds at most,
    /// and a chunk this size is half of a default 64 KiB pipe buffer: a subscriber that
    /// writes chunks to a pipe (`ruv-tail | grep`) finds room for the next one while the
    /// reader on the other side is still busy with the last, so both sides overlap
    /// (measured in Benchmarks/README.md, "Tail throughput").
    static let cachedChunkSize = 32 * 1024

    let loop: EventLoop
    let path: String
    /// Where the path's file lives (``fileLocation(of:)``: the path, or the target of the
    /// symbolic link it is), and that location's directory (watched, searched for rotated
    /// files) and last component (what rotated files are named after). Taken again when
    /// another file appears at the path (a link may now point elsewhere).
    private(set) var location: String
    private(set) var directory: String
    private(set) var basename: String
    /// The path's own last component when the path is a link in the watched directory (a
    /// `current` link retargeted by renaming a new link over it): an event naming it is
    /// about the path too.
    private var linkName: String?
    let options: TailOptions
    let quietNanoseconds: UInt64
    let pollNanoseconds: UInt64
    let store: TailCheckpointStore?
    private var plan: TailPlan?
    private let emit: (TailChunk) -> Void
    private let notices: ((TailNotice) -> Void)?
    private let fail: (any Error) -> Void

    /// Every open file, oldest first.
    private var readers: [TailFileReader] = []
    /// The reader of the file now at the path.
    private var current: TailFileReader?
    /// Readers waiting for the loop's next turn (see ``waitForNextTurn(_:)``).
    private var turnQueue: [TailFileReader] = []
    /// "missing" was said and nothing has appeared since.
    private var saidMissing = false
    /// The reason of the last ``TailNotice/unfollowable(path:reason:)`` sent, while the
    /// path still names something that cannot be followed (said once, not at every look).
    private var saidUnfollowable: String?
    /// Files read to their end and closed (the most recent few hundred): never opened again
    /// as "missed" files.
    private var finishedFiles: [FileIdentity] = []
    /// Wall-clock seconds when following began (less one): a sibling modified since may be
    /// a file that was at the path while we were not looking.
    private let startedAt: Int
    /// The path's rotated siblings when the subscription was made (its plan), each with its
    /// modification time then. Such a file was not at the path while we followed, so it is
    /// no missed file, unless written since: a restart within a second of a rotated file's
    /// last write (its record dropped by the store once it was read to its end) otherwise
    /// took it for one at the next rotation and read it all again.
    private let siblingsAtPlan: [SiblingKey: SiblingStamp]

    private(set) var stopped = false
    private var started = false
    private var registered = false
    private var timer: Disposable?
    // The handles, each through the one handle lifecycle (``UVHandle``): each holds us as
    // its owner until its close callback, and registers with the loop itself.
    private var watch: UVHandle<uv_fs_event_t>?
    private var watchActive = false
    private var poller: UVHandle<uv_fs_poll_t>?
    private var idle: UVHandle<uv_idle_t>?

    init(
        loop: EventLoop, path: String, plan: TailPlan, options: TailOptions, store: TailCheckpointStore?,
        emit: @escaping (TailChunk) -> Void, notices: ((TailNotice) -> Void)?, fail: @escaping (any Error) -> Void
    ) {
        self.loop = loop
        self.path = path
        self.location = path
        self.directory = TailFollower.parentDirectory(of: path)
        self.basename = TailFollower.lastComponent(of: path)
        self.plan = plan
        self.options = options
        self.store = store
        self.emit = emit
        self.notices = notices
        self.fail = fail
        self.quietNanoseconds = UInt64(max(0, SchedulerTime.nanoseconds(options.rotationQuietPeriod)))
        self.pollNanoseconds = UInt64(max(1_000_000, SchedulerTime.nanoseconds(options.pollInterval)))
        self.siblingsAtPlan = plan.siblings
        self.startedAt = plan.startedAt
    }

    // MARK: - Starting and stopping

    /// Starts readers for the planned files, the watch (or poll) and the timer.
    func start() {
        guard !stopped, let plan else { return }
        self.plan = nil
        started = true
        loop.register(self)
        registered = true
        for notice in plan.notices {
            if case .unfollowable(_, let reason) = notice { saidUnfollowable = reason }
            notify(notice)
            if stopped { break }
        }
        let resumedOlder = plan.files.contains { !$0.isCurrent }
        for file in plan.files {
            let reader = TailFileReader(
                follower: self, fd: file.fd, identity: file.identity, path: file.path, offset: file.offset,
                size: file.size, skipLines: file.skipLines, sendsUnfinishedLine: file.isCurrent && plan.unfinishedLineAtStart,
                readsCachedDataOnLoop: options.readsCachedDataOnLoop, maxLineLength: options.maxLineLength)
            readers.append(reader)
            if file.isCurrent {
                current = reader
                reader.held = resumedOlder
            } else {
                store?.register(file.identity, path: path, offset: file.offset)
                reader.leftPath()
                reader.superseded = true
            }
        }
        if stopped { return cleanUpIfDone() }
        saidMissing = current == nil && saidUnfollowable == nil
        relocate()
        startWatching()
        timer = loop.scheduleTimer(at: csys_monotonic_ns() &+ pollNanoseconds, repeatEvery: pollNanoseconds) { [self] in
            tick()
        }
        for reader in readers where !stopped { reader.pokeOnNextTurn() }
    }

    /// Ends the subscription without another event (loop thread; re-entrant from a
    /// subscriber's callback).
    func stop() {
        if stopped { return }
        stopped = true
        if !started {
            plan?.closeAll()
            plan = nil
            return
        }
        timer?.dispose()
        timer = nil
        watch?.close()
        watch = nil
        watchActive = false
        poller?.close()
        poller = nil
        idle?.close()
        idle = nil
        turnQueue.removeAll()
        for reader in readers { reader.stop() }
        cleanUpIfDone()
    }

    func closeForLoopShutdown() { stop() }

    /// Unregisters once every reader is closed (each handle unregisters itself when its
    /// close callback ran).
    private func cleanUpIfDone() {
        guard stopped, registered, readers.isEmpty else { return }
        registered = false
        loop.unregister(self)
    }

    /// A reader closed its descriptor (stopped or finished).
    func readerClosed(_ reader: TailFileReader) {
        readers.removeAll { $0 === reader }
        if current === reader { current = nil }
        if stopped { return cleanUpIfDone() }
        releaseHeldReaders()
        pokeDeferredReaders()
    }

    /// A read or check failed: the subscription ends with `error`.
    func readerFailed(_ error: any Error) {
        if stopped { return }
        fail(error)
        stop()
    }

    // MARK: - Handles

    /// A handle of ours: initialised through ``UVHandle`` (which names the operation and
    /// target in an error), owned by us until its close callback.
    private func makeHandle<Handle>(
        _ type: uv_handle_type, _ operation: String, _ initialize: (UnsafeMutablePointer<Handle>) -> Int32
    ) -> UVHandle<Handle>? {
        do {
            let handle = try UVHandle<Handle>(loop: loop, type: type, operation: operation, target: path, initialize: initialize)
            handle.owner = self
            return handle
        } catch {
            readerFailed(error)
            return nil
        }
    }

    // MARK: - Watching

    /// Starts the inotify watch on the directory, or polling where inotify cannot work.
    private func startWatching() {
        if let reason = pollingReason() { return startPolling(reason) }
        watch = makeHandle(UV_FS_EVENT, "uv_fs_event_init") { uv_fs_event_init(loop.uvLoop, $0) }
        startWatch()
    }

    /// Why inotify will not do for the directory, or `nil` when it will.
    private func pollingReason() -> String? {
        if options.usePolling { return "polling was asked for" }
        if let value = getenv("RUV_TAIL_POLL"), String(cString: value) == "1" { return "RUV_TAIL_POLL=1" }
        // libuv's synchronous `uv_fs_statfs` (no callback): Glibc's module map leaves out
        // `statfs(2)`, and this is one call at start.
        var request = uv_fs_t()
        defer { uv_fs_req_cleanup(&request) }
        guard directory.withCString({ uv_fs_statfs(loop.uvLoop, &request, $0, nil) }) == 0,
            let result = request.ptr?.assumingMemoryBound(to: uv_statfs_t.self)
        else { return nil }
        if let name = TailFollower.remoteFileSystems[result.pointee.f_type] {
            return "inotify cannot see changes made by other hosts on \(name)"
        }
        return nil
    }

    /// `statfs` magic numbers of file systems where inotify sees only this host's changes
    /// (or none), from GNU coreutils' `tail.c` and Linux's `magic.h`.
    static let remoteFileSystems: [UInt64: String] = [
        0x6969: "NFS", 0x517B: "SMB", 0xFF53_4D42: "CIFS", 0xFE53_4D42: "SMB2", 0x6573_5546: "FUSE",
        0x00C3_6400: "CephFS", 0x0102_1997: "9P", 0x5346_414F: "AFS", 0x0116_1970: "GFS2",
        0x0BD0_0BD0: "Lustre", 0x7461_636F: "OCFS2", 0x1373: "devfs", 0x6B41_4653: "AFS (kAFS)",
    ]

    private func startWatch() {
        guard let handle = watch, !watchActive, !stopped else { return }
        let rc = directory.withCString { dir in
            uv_fs_event_start(handle.pointer, { h, filename, events, status in
                guard let h else { return }
                UVHandleCore.owner(of: h, as: TailFollower.self)
                    .watchFired(filename.map { String(cString: $0) }, events: events, status: status)
            }, dir, 0)
        }
        if rc == 0 {
            watchActive = true
        } else if rc != UV_ENOENT.rawValue && rc != UV_ENOTDIR.rawValue {
            // inotify is unavailable (ENOSPC: the watch limit; ENOSYS, EPERM): poll.
            watch = nil
            handle.close()
            startPolling("inotify cannot watch \(directory) (\(UVError(code: rc).name))")
        }
        // ENOENT: the directory does not exist (yet); the timer tries again.
    }

    private func restartWatch() {
        if let handle = watch, watchActive {
            uv_fs_event_stop(handle.pointer)
            watchActive = false
        }
        startWatch()
    }

    private func watchFired(_ filename: String?, events: Int32, status: Int32) {
        if stopped { return }
        if status < 0, let handle = watch {
            // The watch broke (the directory went away): the timer restarts it.
            uv_fs_event_stop(handle.pointer)
            watchActive = false
            return tick()
        }
        guard let filename, !filename.isEmpty else { return tick() }
        if filename == basename || filename == linkName {
            // Without a file (something unfollowable is there, or a file we may not read
            // yet), any change may be the one that makes it followable (a `chmod`).
            if events & Int32(UV_RENAME.rawValue) != 0 || current == nil { checkPath() }
            if !stopped { current?.poke() }
        } else {
            // A sibling moved: every missed sibling is looked for, not only the one named
            // (an older one may have moved on to another name already, and must be read
            // before this one). Renames of unrelated entries cost nothing.
            if events & Int32(UV_RENAME.rawValue) != 0 { adoptMissedFiles(named: filename) }
            for reader in readers where reader !== current && !stopped { reader.poke() }
        }
    }

    /// Polls the path's status with `uv_fs_poll` instead of watching the directory.
    private func startPolling(_ reason: String) {
        notify(.polling(path: path, reason: reason))
        if stopped { return }
        guard let handle: UVHandle<uv_fs_poll_t> = makeHandle(UV_FS_POLL, "uv_fs_poll_init", { uv_fs_poll_init(loop.uvLoop, $0) })
        else { return }
        poller = handle
        let interval = UInt32(clamping: max(1, EventLoop.milliseconds(pollNanoseconds)))
        let rc = path.withCString { p in
            uv_fs_poll_start(handle.pointer, { h, _, _, _ in
                guard let h else { return }
                let follower = UVHandleCore.owner(of: h, as: TailFollower.self)
                if follower.stopped { return }
                follower.checkPath()
                if !follower.stopped { follower.current?.poke() }
            }, p, interval)
        }
        if rc != 0 {
            poller = nil
            handle.close()
            readerFailed(UVError(code: rc, operation: "uv_fs_poll_start", target: path))
        }
    }

    /// The timer: the path and every reader, for missed events and quiet periods.
    private func tick() {
        if stopped { return }
        if watch != nil && !watchActive { startWatch() }
        checkPath()
        for reader in readers where !stopped { reader.poke() }
    }

    // MARK: - The path

    /// Looks at what the path names now: a new file is opened at once and read from 0;
    /// the file that was there becomes a rotated one.
    ///
    /// The steps, in order: nothing (or nothing we may look at) at the path
    /// (``pathCannotBeStated(_:)``); still the current file (nothing to do); something that
    /// is not a regular file (``cannotFollow(_:)``); a rotated file renamed back
    /// (``takeBackRotatedFile(_:)``); else a new file (``openNewFile()``, ``followNewFile(_:)``).
    func checkPath() {
        if stopped { return }
        var info = stat()
        if stat(path, &info) != 0 { return pathCannotBeStated(errno) }
        if let current, current.identity.device == UInt64(info.st_dev) && current.identity.inode == UInt64(info.st_ino) {
            return
        }
        if info.st_mode & S_IFMT != S_IFREG { return cannotFollow(TailFollower.kindReason(info.st_mode)) }
        if takeBackRotatedFile(info) { return }
        guard let file = openNewFile() else { return }
        followNewFile(file)
    }

    /// What `stat` of the path failing with `code` means: nothing there (the current file
    /// left the path; ``TailNotice/missing(path:)`` once, and the watch is set again so the
    /// next file's creation is seen), a path we may not look into (waited on), or an error
    /// that ends the tail.
    private func pathCannotBeStated(_ code: Int32) {
        if code == ENOENT {
            if let old = current {
                old.leftPath()
                current = nil
            }
            saidUnfollowable = nil
            if !saidMissing {
                saidMissing = true
                notify(.missing(path: path))
            }
            if watch != nil { restartWatch() }
            return
        }
        if code == EACCES { return cannotFollow(TailFollower.unreadableReason(code)) }
        readerFailed(UVError(code: code, operation: "stat", target: path))
    }

    /// Whether the path names a rotated file we still read (`info`: the path's `stat`):
    /// one renamed back to the path, which becomes the current file again.
    private func takeBackRotatedFile(_ info: stat) -> Bool {
        guard let back = readers.first(where: {
            $0.isOpen && $0.identity.device == UInt64(info.st_dev) && $0.identity.inode == UInt64(info.st_ino)
        }) else { return false }
        current?.leftPath()
        back.returnedToPath()
        current = back
        return true
    }

    /// Opens the new file at the path and takes its identity and size.
    ///
    /// - Returns: the file, or `nil` when there is nothing new to follow: the path is
    ///   empty again or names a file we read (both between our `stat` and `open`; the next
    ///   event says what came instead), it cannot be followed for now (noticed), or an
    ///   error ended the tail.
    private func openNewFile() -> (fd: Int32, identity: FileIdentity, size: Int64)? {
        let fd: Int32
        switch TailFollower.openRegularFile(path) {
        case .opened(let opened): fd = opened
        case .missing: return nil  // gone again: the next event says what came instead
        case .unfollowable(let reason):
            cannotFollow(reason)
            return nil
        case .failed(let code):
            readerFailed(UVError(code: code, operation: "open", target: path))
            return nil
        }
        switch FileIdentity.of(descriptor: fd) {
        case .failure(let error):
            _ = Glibc.close(fd)
            readerFailed(UVError(code: error.code, operation: error.operation, target: path))
            return nil
        case .success(let (identity, size, _)):
            if readers.contains(where: { $0.isOpen && $0.identity.sameInode(identity) }) {
                // The path changed back to a file we read between our stat and open.
                _ = Glibc.close(fd)
                return nil
            }
            return (fd, identity, size)
        }
    }

    /// Follows a new file found at the path: says so (``TailNotice/replaced(path:old:new:)``
    /// or ``TailNotice/appeared(path:identity:)``), makes it the current file (the one that
    /// was there is read to its end as a rotated one), then reads first the files rotated
    /// away before we looked, and then it.
    ///
    /// It is read from 0, or from its position when the store knows it (it was here before).
    private func followNewFile(_ file: (fd: Int32, identity: FileIdentity, size: Int64)) {
        relocate()
        if let old = current {
            // The files rotated away before are replaced once more: done at their end.
            for reader in readers where reader !== old { reader.superseded = true }
            old.leftPath()
            notify(.replaced(path: path, old: old.identity, new: file.identity))
        } else {
            notify(.appeared(path: path, identity: file.identity))
        }
        saidMissing = false
        saidUnfollowable = nil
        if stopped {
            _ = Glibc.close(file.fd)
            return
        }
        // A file the store knows (it was here before) goes on from its position.
        let offset = store?.offset(for: file.identity) ?? 0
        store?.register(file.identity, path: path, offset: offset)
        let reader = TailFileReader(
            follower: self, fd: file.fd, identity: file.identity, path: path, offset: offset, size: file.size,
            skipLines: 0, sendsUnfinishedLine: false, readsCachedDataOnLoop: options.readsCachedDataOnLoop,
            maxLineLength: options.maxLineLength)
        reader.held = readers.contains { $0.isOpen && $0.held }
        readers.append(reader)
        current = reader
        enforceOpenFileLimit()
        // Files that were at the path and rotated away before we looked (the loop was busy
        // for longer than a rotation, or polling): found among the siblings — before the
        // new file is first read, since they are older and their lines come first. Also
        // when the path was empty at our last look (we may have looked between a rename
        // and the next file's creation).
        if !stopped { adoptMissedFiles(named: nil) }
        if !stopped { reader.poke() }
    }

    /// What the path names cannot be followed for now (``TailNotice/unfollowable(path:reason:)``):
    /// the file that was there has left the path (it is read to its end as a rotated one),
    /// the notice is sent once per reason, and the path is looked at again at each change
    /// event and each tick until a readable regular file is there.
    private func cannotFollow(_ reason: String) {
        if let old = current {
            old.leftPath()
            current = nil
        }
        saidMissing = false
        if saidUnfollowable != reason {
            saidUnfollowable = reason
            notify(.unfollowable(path: path, reason: reason))
        }
    }

    /// Takes the path's file location again (``fileLocation(of:)``) and moves the watch to
    /// its directory if it changed.
    private func relocate() {
        let now = TailFollower.fileLocation(of: path)
        let pathDirectory = TailFollower.parentDirectory(of: path)
        if now != location {
            location = now
            let moved = TailFollower.parentDirectory(of: now) != directory
            directory = TailFollower.parentDirectory(of: now)
            basename = TailFollower.lastComponent(of: now)
            if moved && watch != nil { restartWatch() }
        }
        linkName = now != path && pathDirectory == directory ? TailFollower.lastComponent(of: path) : nil
    }

    /// Opens rotated files we never saw at the path: entries of the directory named like
    /// the path plus a suffix (`app.log.3`, `app.log-20260101`; not compressed ones),
    /// modified since we started following, that are no file we read or have read. Such a
    /// file was created at the path and renamed away while the loop could not look (a
    /// subscriber holding the loop thread longer than a rotation takes, or between two
    /// polls); it is read from its start like any rotated file, placed among the readers
    /// in rotation order (``oldestFirst(_:prefix:)``). `name`: the entry an inotify event
    /// named (nothing is done unless it is a sibling), or `nil`; every sibling is looked at
    /// either way, since an older missed file may have moved on to another name already.
    private func adoptMissedFiles(named name: String?) {
        if stopped { return }
        let prefix = TailFollower.joined(directory, basename)
        if let name, !(name.hasPrefix(basename) && name != basename) { return }
        // A writer may be renaming while we look (`app.log.1` to `.2`, the path to `.1`):
        // the ranks come from a snapshot of the siblings taken twice alike, and a candidate
        // whose name names another file by the time we open it starts the look again.
        for _ in 0..<16 {
            if stopped { return }
            if !adoptMissedFilesOnce(prefix: prefix) { return }
        }
    }

    /// One look of ``adoptMissedFiles(named:)``; returns whether the directory changed
    /// under it (look again).
    ///
    /// The steps: a steady snapshot of the siblings (``steadySiblings(prefix:)``), their
    /// rotation order (``rotationRanks(of:ordered:)``), then, oldest first, each sibling
    /// that is a missed file (``openMissedFile(_:expected:)``) is announced and placed
    /// among the readers (``readMissedFile(_:age:ranks:)``).
    private func adoptMissedFilesOnce(prefix: String) -> Bool {
        let siblings = steadySiblings(prefix: prefix)
        // Every rotated sibling in the order it was at the path (oldest first): a missed
        // file goes among the readers before the first file younger than it, so files are
        // read in that order even when some rotated ones were seen and others missed.
        let ordered = TailFollower.oldestFirst(siblings.map(\.name), prefix: prefix)
        let (rank, keyOf) = TailFollower.rotationRanks(of: siblings, ordered: ordered)
        for candidate in ordered {
            if stopped { return false }
            let file: (fd: Int32, identity: FileIdentity, size: Int64)
            switch openMissedFile(candidate, expected: keyOf[candidate]) {
            case .notMissed: continue
            case .directoryChanged: return true
            case .opened(let fd, let identity, let size): file = (fd, identity, size)
            }
            guard let age = rank[SiblingKey(device: file.identity.device, inode: file.identity.inode)] else {
                _ = Glibc.close(file.fd)
                return true  // another file by now
            }
            notify(.appeared(path: candidate, identity: file.identity))
            if stopped {
                _ = Glibc.close(file.fd)
                return false
            }
            readMissedFile(file, age: age, ranks: rank)
        }
        return false
    }

    /// The directory's entries named like the path plus a suffix, listed until two
    /// listings in a row agree (at most 16 more times): a writer may be renaming while we
    /// look, and ranks taken from a moving listing would misplace files.
    private func steadySiblings(prefix: String) -> [TailDirectoryEntry] {
        func snapshot() -> [TailDirectoryEntry] {
            TailFollower.directoryEntries(directory).filter { $0.name != prefix && $0.name.hasPrefix(prefix) }
        }
        var siblings = snapshot()
        for _ in 0..<16 {
            let again = snapshot()
            let same = again.count == siblings.count
                && zip(again, siblings).allSatisfy { $0.name == $1.name && $0.device == $1.device && $0.inode == $1.inode }
            siblings = again
            if same { break }
        }
        return siblings
    }

    /// Each sibling's place in rotation order (by its file, so a reader finds its own), and
    /// the file each name named in the snapshot.
    static func rotationRanks(
        of siblings: [TailDirectoryEntry], ordered: [String]
    ) -> (rank: [SiblingKey: Int], keyOf: [String: SiblingKey]) {
        var rank: [SiblingKey: Int] = [:]
        var keyOf: [String: SiblingKey] = [:]
        for entry in siblings { keyOf[entry.name] = SiblingKey(device: entry.device, inode: entry.inode) }
        for (index, name) in ordered.enumerated() {
            if let key = keyOf[name] { rank[key] = index }
        }
        return (rank, keyOf)
    }

    /// Opens `candidate` if it is a missed file: a regular file (not a compressed one)
    /// modified since we started following and changed since the plan's listing, that is
    /// no file we read, have read, or whose content we have seen (a copy).
    ///
    /// - Parameters:
    ///   - expected: the file the name named in the snapshot; another one now means the
    ///     directory changed under the look.
    private func openMissedFile(_ candidate: String, expected: SiblingKey?) -> MissedFileLook {
        if TailFollower.compressedSuffixes.contains(where: { candidate.hasSuffix($0) }) { return .notMissed }
        var info = stat()
        guard stat(candidate, &info) == 0 else { return .directoryChanged }
        if SiblingKey(info) != expected { return .directoryChanged }  // renamed meanwhile
        guard info.st_mode & S_IFMT == S_IFREG, Int(info.st_mtim.tv_sec) >= startedAt,
            siblingsAtPlan[SiblingKey(info)] != SiblingStamp(info),
            !readers.contains(where: { $0.isOpen && $0.identity.device == UInt64(info.st_dev) && $0.identity.inode == UInt64(info.st_ino) })
        else { return .notMissed }
        let fd = open(candidate, O_RDONLY | O_CLOEXEC)
        if fd < 0 { return .notMissed }
        guard case .success(let (identity, size, isDir)) = FileIdentity.of(descriptor: fd), !isDir,
            !finishedFiles.contains(where: { $0.isSameFile(as: identity) }),
            !isKnownContent(identity.fingerprint)
        else {
            _ = Glibc.close(fd)
            return .notMissed
        }
        return .opened(fd, identity, size)
    }

    /// Reads a missed file as a rotated one, from its stored position or 0, placed before
    /// the first reader of a younger file: a sibling ranked younger, or the current file if
    /// it is still at the path (a current file found among the siblings was rotated away
    /// before we noticed, and is ranked like them). Readers of files gone from the
    /// directory are older.
    private func readMissedFile(_ file: (fd: Int32, identity: FileIdentity, size: Int64), age: Int, ranks rank: [SiblingKey: Int]) {
        let index = readers.firstIndex { reader in
            if let theirs = rank[SiblingKey(device: reader.identity.device, inode: reader.identity.inode)] {
                return theirs > age
            }
            return reader === current
        } ?? readers.count
        readRotated(
            file.fd, file.identity, size: file.size, from: store?.offset(for: file.identity) ?? 0, at: index,
            limitingOpenFiles: true)
    }

    /// Whether a file starting with `fingerprint` holds content we have seen: the start of
    /// a file we read or have read, or what a file held before a truncation. Such a file
    /// is a copy (copytruncate's `app.log.1`, a `cp`), not a file that was at the path, and
    /// is not adopted as a missed one. An empty file tells nothing and is not adopted.
    private func isKnownContent(_ fingerprint: [UInt8]) -> Bool {
        if fingerprint.isEmpty { return true }
        func overlaps(_ known: [UInt8]) -> Bool {
            let n = min(known.count, fingerprint.count)
            return n > 0 && known.prefix(n) == fingerprint.prefix(n)
        }
        return readers.contains { overlaps($0.identity.fingerprint) || overlaps($0.head) }
            || finishedFiles.contains { overlaps($0.fingerprint) } || knownHeads.contains(where: overlaps)
    }

    /// First bytes files had before they were truncated (for ``isKnownContent(_:)``).
    private var knownHeads: [[UInt8]] = []

    func rememberHead(_ head: [UInt8]) {
        if head.isEmpty { return }
        knownHeads.append(head)
        if knownHeads.count > 512 { knownHeads.removeFirst(256) }
    }

    /// After a truncation of a file whose content started with `head`, finds the copy
    /// copytruncate made just before (a sibling named like the path whose first bytes are
    /// `head` and that is longer than `offset`) and reads it from `offset` to its end with
    /// a reader of its own, so the lines we had not read before the cut are not lost.
    /// Returns the copy's size (what is recovered up to), or `nil` without a copy.
    ///
    /// - Parameter origin: the truncated file's content, as the store knew it before the
    ///   cut (what the copy's record names as its origin).
    func recoverFromCopy(head: [UInt8], from offset: Int64, origin: TailCopyOrigin?) -> Int64? {
        if stopped { return nil }
        let copy = TailFollower.findCopy(in: directory, basename: basename, head: head, longerThan: offset) { identity in
            readers.contains { $0.isOpen && $0.identity.device == identity.device && $0.identity.inode == identity.inode }
                || finishedFiles.contains { $0.isSameFile(as: identity) }
        }
        guard let copy else { return nil }
        notify(.resumed(path: copy.name, identity: copy.identity, offset: offset))
        // (Not held to `maxOpenFiles` here: this runs inside the truncated reader's step.)
        readRotated(copy.fd, copy.identity, size: copy.size, from: offset, at: 0, limitingOpenFiles: false, copyOf: origin)
        return copy.size
    }

    /// Reads a file that is not at the path (found missed, or a copy) from `offset` to its
    /// end with a reader of its own, placed at `index` among the readers (the order files
    /// are delivered in); with `limitingOpenFiles`, the oldest readers beyond
    /// ``TailOptions/maxOpenFiles`` are then given up.
    private func readRotated(
        _ fd: Int32, _ identity: FileIdentity, size: Int64, from offset: Int64, at index: Int, limitingOpenFiles: Bool,
        copyOf origin: TailCopyOrigin? = nil
    ) {
        store?.register(identity, path: path, offset: offset, copyOf: origin)
        let reader = TailFileReader(
            follower: self, fd: fd, identity: identity, path: path, offset: offset, size: size, skipLines: 0,
            sendsUnfinishedLine: false, readsCachedDataOnLoop: options.readsCachedDataOnLoop,
            maxLineLength: options.maxLineLength)
        reader.leftPath()
        reader.superseded = true
        readers.insert(reader, at: index)
        if limitingOpenFiles { enforceOpenFileLimit() }
        reader.poke()
    }

    /// Names of compressed rotated files, never read as text.
    static let compressedSuffixes = [".gz", ".bz2", ".xz", ".zst", ".lz4", ".zip", ".Z", ".lzma"]

    /// Gives up the oldest rotated files beyond ``TailOptions/maxOpenFiles``, reporting
    /// their unread bytes as lost.
    private func enforceOpenFileLimit() {
        var open = readers.filter { $0.isOpen }
        while open.count > max(1, options.maxOpenFiles), let oldest = open.first, oldest !== current {
            open.removeFirst()
            let unread = oldest.unreadRange
            if unread.knownCount == 0 {
                // Read to its end, only waiting out the quiet period: closed as finished,
                // nothing lost (it was reported lost with an empty range).
                finish(oldest)
                if stopped { return }
                continue
            }
            lost(.lost(path: oldest.path, identity: oldest.identity, range: unread, reason: .fellBehind))
            store?.finished(oldest.identity, at: 0)
            rememberFinished(oldest)
            oldest.stop()
        }
    }

    /// A rotated reader has read its file to the end and may stop.
    func finish(_ reader: TailFileReader) {
        reader.finishLines()
        if stopped { return }
        rememberFinished(reader)
        store?.finished(reader.identity, at: reader.offset)
        reader.stop()
    }

    /// Remembers `reader`'s file as finished (never adopted again as a missed file), by
    /// its inode and the first bytes it was seen to hold: a file opened the moment it was
    /// created has an empty identity fingerprint, which would match any later file given
    /// the same inode once this one is deleted (file systems reuse freed inodes at once),
    /// and such a file — a rotated file created and renamed away between two looks — was
    /// never adopted, its lines lost. A file finished empty is not remembered.
    private func rememberFinished(_ reader: TailFileReader) {
        let known = reader.head.count > reader.identity.fingerprint.count ? reader.head : reader.identity.fingerprint
        if known.isEmpty { return }
        finishedFiles.append(FileIdentity(device: reader.identity.device, inode: reader.identity.inode, fingerprint: known))
        if finishedFiles.count > 512 { finishedFiles.removeFirst(256) }
    }

    /// Lets the current file be read once no resumed older file is left.
    private func releaseHeldReaders() {
        if readers.contains(where: { $0.isOpen && !$0.held && $0.rotatedAt != nil && $0.superseded }) { return }
        for reader in readers where reader.held {
            reader.held = false
            reader.poke()
        }
    }

    var hasCurrentFile: Bool { current != nil }

    /// Counts readers made (``TailFileReader/bornAt``) and ends found
    /// (``TailFileReader/endCheckedAt``): an order of events on the loop thread.
    private(set) var generation: UInt64 = 0

    /// The next generation, for a reader being made.
    func nextGeneration() -> UInt64 {
        generation &+= 1
        return generation
    }

    /// Whether a file older than `reader` (before it in ``readers``) is still being read, or
    /// has not been seen at its end since `reader`'s file was opened: `reader` then waits
    /// (see ``TailFileReader/poke()``). An end found earlier proves nothing: the older file
    /// may have been written after that look and before the newer one was created.
    func olderReaderIsReading(before reader: TailFileReader) -> Bool {
        for other in readers {
            if other === reader { return false }
            if other.isOpen && !other.held && (!other.reachedEnd || other.endCheckedAt < reader.bornAt) { return true }
        }
        return false
    }

    /// Pokes the readers older than `reader` that are idle at an end found before `reader`
    /// was opened, so that each looks again (and `reader`, deferred, is poked when they
    /// have: ``readerReachedEnd(_:)``).
    func confirmEnds(before reader: TailFileReader) {
        let older = readers.prefix { $0 !== reader }.filter { $0.endIsStale(for: reader) }
        for other in older where !stopped { other.poke() }
    }

    /// `reader` read its file to the end for now: younger files waiting for it go on.
    func readerReachedEnd(_ reader: TailFileReader) {
        pokeDeferredReaders()
    }

    private func pokeDeferredReaders() {
        for waiting in readers where waiting.deferred && !stopped { waiting.poke() }
    }

    // MARK: - Output

    func deliver(_ chunk: TailChunk) {
        if !stopped { emit(chunk) }
    }

    func notify(_ notice: TailNotice) {
        if !stopped { notices?(notice) }
    }

    /// A loss: counted by the caller through its notice.
    func lost(_ notice: TailNotice) { notify(notice) }

    // MARK: - Next turn

    /// Brings `reader` back on the loop's next turn, after one round of IO polling: a
    /// catch-up on cached data takes one chunk per turn per file.
    func waitForNextTurn(_ reader: TailFileReader) {
        if stopped { return }
        if idle == nil {
            idle = makeHandle(UV_IDLE, "uv_idle_init") { uv_idle_init(loop.uvLoop, $0) }
        }
        guard let idle else { return }
        turnQueue.append(reader)
        if turnQueue.count == 1 {
            uv_idle_start(idle.pointer) { h in
                guard let h else { return }
                UVHandleCore.owner(of: h, as: TailFollower.self).turnCame()
            }
        }
    }

    private func turnCame() {
        let due = turnQueue
        turnQueue.removeAll(keepingCapacity: true)
        if turnQueue.isEmpty, let idle { uv_idle_stop(idle.pointer) }
        for reader in due {
            if stopped { break }
            reader.turnCame()
        }
    }
}

/// What ``TailFollower`` found looking at a sibling for a missed rotated file.
private enum MissedFileLook {
    /// Not a missed file (or it cannot be opened): look at the next one.
    case notMissed
    /// The name names another file than in the snapshot, or nothing: look again.
    case directoryChanged
    /// A missed file, opened; the caller owns the descriptor.
    case opened(Int32, FileIdentity, Int64)
}

import Glibc
import Logging
import ReactiveUV

/// The files every pattern has read, by identity, shared by all patterns of one logcast:
/// a file is followed by one follow only, whatever paths and patterns name it.
final class GlobRegistry {
    // Main loop only.
    /// Identity → the path whose follow read (or reads) that file.
    var owners: [GlobFileKey: String] = [:]
}

/// Follows every file a ``GlobPattern`` matches, as files appear and disappear: one
/// library follow (`File.follow`, through ``LogcastServer/startFile(_:from:onNotice:ended:)``)
/// per matching path, each with its own position, exactly as a FILE given by name.
///
/// **Finding files: a scan every second, not inotify.** The library's directory watch
/// (`File.watch`, one `uv_fs_event` per directory) does not see into subdirectories, so
/// `**` would need a watch per directory of the tree, each taking one of inotify's
/// per-user watches (`fs.inotify.max_user_watches`, shared with every follower's own
/// watch) and each to be added and removed as directories come and go, with the races
/// that brings (files made in a new directory before its watch exists). A scan
/// (``GlobScan``, bounded to 10,000 directories) every second finds every file, whatever
/// the file system, at a cost of a few microseconds per directory entry; a new file is
/// found within a second and read from its first byte, so no line is lost to the delay.
/// Files already there when logcast starts are followed from their end, as FILEs are.
///
/// **Rotated siblings are not new files.** With a pattern such as `'*.log*'`, a rotation
/// renames `app.log` to `app.log.1`: a new path, but a file the follow of `app.log` has
/// read and reads to its end. The rule: *a file (device and inode) that a follow has read
/// is not followed again under another path* as long as it exists (it is forgotten once no
/// matching path holds it and no descriptor of the process has it open, so an inode the
/// file system gives to a later file is not mistaken for it). It applies to a followed
/// path too: when a rotation moves an already followed file onto it (`app.log.1` →
/// `app.log.2`, then `app.log` → `app.log.1`), that path's follow ends before it reads a
/// byte of the moved file, which the follow of `app.log` has read.
///
/// **Files that go away.** A path that no longer exists ends its follow once the file it
/// named was read to its end: the library keeps a deleted file's descriptor until it has
/// read the file's last byte, so the follow ends when no descriptor of the process names
/// the file any more (``GlobOpenFiles``). A file renamed to a name the pattern does not
/// match keeps its follow (and waits, as a FILE does, for a new file at its path).
///
/// **Limits.** At most `maxFiles` paths per pattern are followed; the rest are named in a
/// warning (again whenever their number changes) and followed as followed paths go away.
final class GlobFollower {
    // Main loop only.
    let pattern: GlobPattern
    let maxFiles: Int
    /// Paths given as FILEs by name: followed already, never again by the pattern.
    let named: Set<String>
    let registry: GlobRegistry
    let logger: Logger
    /// Starts one path's follow: `(path, start, notices, ended)` → its disposable.
    let follow: (String, TailStart, @escaping (TailNotice) -> Void, @escaping (String) -> Void) -> Disposable

    /// Seconds between scans.
    static let interval = 1.0

    private struct Entry {
        var follow: Disposable
        /// The identity at the path at the last look.
        var current: GlobFileKey
    }

    /// Path → its follow.
    private var followed: [String: Entry] = [:]
    /// Identities this pattern's follows have read (a subset of the registry's).
    private var mine: Set<GlobFileKey> = []
    /// Paths whose follow failed, with the file they held then: not tried again until
    /// another file is there.
    private var failed: [String: GlobFileKey] = [:]
    /// How many matching paths were left out for the limit when that was last said.
    private var saidOverLimit = 0
    private var saidTruncated = false
    private var timer: Disposable?
    private var scanned = false

    init(
        pattern: GlobPattern, maxFiles: Int, named: Set<String>, registry: GlobRegistry, logger: Logger,
        follow: @escaping (String, TailStart, @escaping (TailNotice) -> Void, @escaping (String) -> Void) -> Disposable
    ) {
        self.pattern = pattern
        self.maxFiles = maxFiles
        self.named = named
        self.registry = registry
        self.logger = logger
        self.follow = follow
    }

    /// The paths followed now (for tests through the log, and `STATS`-like reports).
    var followedCount: Int { followed.count }

    /// Scans now (files there now are followed from their end) and every second after.
    func start() {
        guard timer == nil else { return }
        scan()
        timer = Signal.interval(GlobFollower.interval, on: Scheduler.main).subscribeNext { [weak self] _ in self?.scan() }
    }

    /// Stops scanning and every follow.
    func stop() {
        timer?.dispose()
        timer = nil
        for entry in followed.values { entry.follow.dispose() }
        followed = [:]
    }

    /// One look: ends the follows of paths that are gone (once read to their end), starts
    /// follows for new paths, forgets identities no longer anywhere.
    func scan() {
        let first = !scanned
        scanned = true
        let found = GlobScan.run(pattern)
        if found.truncated && !saidTruncated {
            saidTruncated = true
            logger.warning("pattern '\(pattern)': a scan stops after \(GlobScan.maxDirectories) directories; files beyond are not found")
        }
        var open: Set<GlobFileKey>?
        func openKeys() -> Set<GlobFileKey> {
            if let open { return open }
            let keys = GlobOpenFiles.keys()
            open = keys
            return keys
        }

        for (path, entry) in followed where found.files[path] == nil {
            var info = stat()
            // Still there (not a regular file now, or beyond a truncated scan): its follow
            // says what it is and waits, as a FILE's does.
            if stat(path, &info) == 0 { continue }
            let read = mine.filter { registry.owners[$0] == path }
            if read.isDisjoint(with: openKeys()) {
                end(path, entry, why: "is gone and was read to its end")
            }
        }

        var left: [String] = []
        for (path, key) in found.files.sorted(by: { $0.key < $1.key }) {
            if var entry = followed[path] {
                if entry.current != key {
                    entry.current = key
                    followed[path] = entry
                    own(key, path)
                }
                continue
            }
            if named.contains(path) { continue }
            if registry.owners[key] != nil { continue }  // read under another path: a rotated sibling
            if let was = failed[path] {
                if was == key { continue }
                failed[path] = nil
            }
            if followed.count >= maxFiles {
                left.append(path)
                continue
            }
            start(path, key, from: first ? .end : .beginning)
        }
        if left.count != saidOverLimit {
            saidOverLimit = left.count
            if !left.isEmpty {
                let shown = left.prefix(5).joined(separator: ", ") + (left.count > 5 ? " and \(left.count - 5) more" : "")
                logger.warning("pattern '\(pattern)' matches \(followed.count + left.count) files, more than --glob-max-files \(maxFiles): \(left.count) not followed (\(shown)); they are followed as followed files go away")
            }
        }
        if first && found.files.isEmpty {
            Output.err("logcast: pattern '\(pattern)' matches no file yet; waiting for files to appear\n")
        }
        forget(matched: Set(found.files.values), open: openKeys)
    }

    private func start(_ path: String, _ key: GlobFileKey, from start: TailStart) {
        own(key, path)
        logger.notice("pattern '\(pattern)': following \(path)\(start == .end ? " from its end" : " from its start")")
        // Set before the follow starts: its notices may come at once.
        followed[path] = Entry(follow: Disposable {}, current: key)
        let disposable = follow(
            path, start,
            { [weak self] notice in self?.noticed(notice, at: path) },
            { [weak self] reason in self?.failed(path, reason) })
        if followed[path] != nil {
            followed[path]?.follow = disposable
        } else {
            disposable.dispose()  // ended by a notice while starting
        }
    }

    /// A follow's notice: a new file at its path is either one more file it reads, or a
    /// file another follow has read (a rotation moved it here): then this follow ends.
    private func noticed(_ notice: TailNotice, at path: String) {
        let identity: FileIdentity
        switch notice {
        case .appeared(_, let new): identity = new
        case .replaced(_, _, let new): identity = new
        case .resumed(_, let resumed, _): identity = resumed
        default: return
        }
        let key = GlobFileKey(device: identity.device, inode: identity.inode)
        guard let entry = followed[path] else { return }
        if let owner = registry.owners[key], owner != path {
            logger.notice("pattern '\(pattern)': \(path) now holds the file read as \(owner) (rotated); no longer followed under this name")
            followed[path] = nil
            entry.follow.dispose()
            return
        }
        own(key, path)
    }

    private func failed(_ path: String, _ reason: String) {
        guard let entry = followed.removeValue(forKey: path) else { return }
        logger.error("pattern '\(pattern)': \(reason); no longer followed")
        failed[path] = entry.current
        entry.follow.dispose()
    }

    private func end(_ path: String, _ entry: Entry, why: String) {
        logger.notice("pattern '\(pattern)': \(path) \(why); no longer followed")
        followed[path] = nil
        entry.follow.dispose()
    }

    private func own(_ key: GlobFileKey, _ path: String) {
        registry.owners[key] = path
        mine.insert(key)
    }

    /// Forgets the identities no matching path holds and no descriptor has open: the file
    /// is gone, and its inode may be given to a new file, which must not pass for it.
    private func forget(matched: Set<GlobFileKey>, open: () -> Set<GlobFileKey>) {
        let current = Set(followed.values.map(\.current))
        let candidates = mine.filter { !matched.contains($0) && !current.contains($0) }
        if candidates.isEmpty { return }
        let stillOpen = open()
        for key in candidates where !stillOpen.contains(key) {
            mine.remove(key)
            registry.owners[key] = nil
        }
    }
}

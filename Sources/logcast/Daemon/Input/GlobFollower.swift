import Glibc
import Logging
import ReactiveUV

/// The files every pattern has read, by identity, shared by all patterns of one logcast:
/// a file is followed by one follow only, whatever paths and patterns name it.
///
/// A device and inode name a file only while it exists: file systems give a freed inode to
/// the next file made, at once (logrotate's delete of `app.log.5` and create of a new log
/// a millisecond later). So each file is also known by its first bytes (up to 64), and a
/// file at a known inode is the known file only if one of the two heads begins the other.
final class GlobRegistry {
    // Main loop only.
    struct Owner {
        /// The path whose follow read (or reads) the file.
        let path: String
        /// The file's first bytes when last looked at (empty: it was empty then).
        var head: [UInt8]
    }

    /// Identity → who read it.
    private(set) var owners: [GlobFileKey: Owner] = [:]

    /// Bytes of a file's head compared.
    static let headLength = 64

    /// The path that read the file `key` names now, if that file is one a follow read.
    ///
    /// - Parameters:
    ///   - key: the file's device and inode.
    ///   - head: its first bytes now (``head(of:)``), or nil when unknown.
    /// - Returns: the owning path, or nil for a file no follow read.
    func owner(of key: GlobFileKey, head: [UInt8]?) -> String? {
        guard let owner = owners[key] else { return nil }
        guard let head else { return owner.path }
        // The known file was not empty and this one is (a new file given its inode), or
        // their first bytes differ: another file.
        if !owner.head.isEmpty && head.isEmpty { return nil }
        let shorter = min(owner.head.count, head.count)
        return owner.head.prefix(shorter) == head.prefix(shorter) ? owner.path : nil
    }

    /// Records that `path`'s follow reads the file `key`, with its first bytes.
    func own(_ key: GlobFileKey, path: String, head: [UInt8]) {
        if let known = owners[key], known.path == path, known.head.count > head.count,
            known.head.starts(with: head)
        {
            return  // what is known says more
        }
        owners[key] = Owner(path: path, head: head)
    }

    /// Whether some follow read a file with this device and inode (maybe another file).
    func knows(_ key: GlobFileKey) -> Bool { owners[key] != nil }

    /// Forgets `key` (the file is gone).
    func forget(_ key: GlobFileKey) { owners[key] = nil }

    /// Whether the head known for `key` is shorter than ``headLength`` (worth reading again).
    func headIsShort(_ key: GlobFileKey) -> Bool { (owners[key]?.head.count ?? 0) < GlobRegistry.headLength }

    /// The first bytes (up to ``headLength``) of the regular file at `path`, or nil when it
    /// cannot be read. Opened non-blocking (the scan saw a regular file, but something else
    /// may be there by now: a FIFO must not hold the loop).
    static func head(of path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        var bytes = [UInt8](repeating: 0, count: headLength)
        let n = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, headLength, 0) }
        guard n >= 0 else { return nil }
        return Array(bytes.prefix(n))
    }
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
/// matching path holds it and no descriptor of the process has it open; and a file at a
/// known inode whose first bytes differ is another file, ``GlobRegistry``). It applies to a followed
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

    /// Where a file found by the first scan starts (`.end`, or with kept positions
    /// `.beginning` for a file that appeared while logcast was down: GlobSources.swift).
    var firstStart: (GlobFileKey) -> TailStart = { _ in .end }

    /// Seconds between scans.
    static let interval = 1.0

    private struct Entry {
        var follow: Disposable
        /// The identity at the path at the last look.
        var current: GlobFileKey
    }

    /// Path → its follow.
    private var followed: [String: Entry] = [:]

    /// The paths this pattern follows now, sorted (the web view's file chooser lists them).
    var followedPaths: [String] { followed.keys.sorted() }
    /// Identities this pattern's follows have read (a subset of the registry's).
    private var mine: Set<GlobFileKey> = []
    /// Paths whose follow failed, with the file they held then: not tried again until
    /// another file is there.
    private var failed: [String: GlobFileKey] = [:]
    /// How many matching paths were left out for the limit when that was last said.
    private var saidOverLimit = 0
    /// Matching paths left alone as rotated siblings, with the file they held when said.
    private var siblings: [String: GlobFileKey] = [:]
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
            let read = mine.filter { registry.owners[$0]?.path == path }
            if read.isDisjoint(with: openKeys()) {
                end(path, entry, why: "is gone and was read to its end")
            }
        }

        var left: [String] = []
        for (path, key) in found.files.sorted(by: { $0.key < $1.key }) {
            if followed[path] != nil {
                // Usually the follow's notice said so first; a scan between a rename and
                // the follow's look at it sees it first.
                if followed[path]?.current != key {
                    arrived(key, head: GlobRegistry.head(of: path), at: path)
                } else if registry.headIsShort(key), let head = GlobRegistry.head(of: path) {
                    registry.own(key, path: path, head: head)  // the file has grown since
                }
                continue
            }
            if named.contains(path) { continue }
            if siblings[path] == key { continue }  // decided when first seen
            if registry.knows(key), let owner = registry.owner(of: key, head: GlobRegistry.head(of: path)) {
                // Read under another path: a rotated sibling (said once per path and file).
                siblings[path] = key
                logger.notice("pattern '\(pattern)': \(path) holds the file read as \(owner) (rotated); not followed again")
                continue
            }
            if let was = failed[path] {
                if was == key { continue }
                failed[path] = nil
            }
            if followed.count >= maxFiles {
                left.append(path)
                continue
            }
            start(path, key, head: GlobRegistry.head(of: path) ?? [], from: first ? firstStart(key) : .beginning)
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
        siblings = siblings.filter { found.files[$0.key] == $0.value }
        failed = failed.filter { found.files[$0.key] != nil }
        forget(matched: Set(found.files.values), open: openKeys)
    }

    private func start(_ path: String, _ key: GlobFileKey, head: [UInt8], from start: TailStart) {
        own(key, path, head: head)
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
        arrived(GlobFileKey(device: identity.device, inode: identity.inode), head: identity.fingerprint, at: path)
    }

    /// Another file is at a followed path: one more file its follow reads, or one another
    /// follow has read (a rotation moved it here), which ends this path's follow before it
    /// reads a byte of it (a notice comes before the chunks of its file).
    private func arrived(_ key: GlobFileKey, head: [UInt8]?, at path: String) {
        guard let entry = followed[path] else { return }
        if let owner = registry.owner(of: key, head: head), owner != path {
            logger.notice("pattern '\(pattern)': \(path) now holds the file read as \(owner) (rotated); no longer followed under this name")
            followed[path] = nil
            entry.follow.dispose()
            return
        }
        followed[path]?.current = key
        own(key, path, head: head ?? [])
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

    private func own(_ key: GlobFileKey, _ path: String, head: [UInt8]) {
        registry.own(key, path: path, head: head)
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
            registry.forget(key)
        }
    }
}

import Glibc

/// A file by identity: its device and inode (what a rename keeps).
struct GlobFileKey: Hashable, Sendable, CustomStringConvertible {
    let device: UInt64
    let inode: UInt64

    init(device: UInt64, inode: UInt64) {
        self.device = device
        self.inode = inode
    }

    init(_ info: stat) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
    }

    var description: String { "\(device):\(inode)" }
}

/// One look at the file system for a ``GlobPattern``: every regular file its components
/// match now, with the file's identity.
///
/// **Bounded.** A scan reads at most ``maxDirectories`` directories (a `**` over a huge
/// tree stops there, and ``GlobScan/truncated`` says so) and never follows a symbolic link
/// to a directory under `**`. It runs on the loop thread: `opendir`/`readdir`/`stat` on a
/// local file system cost microseconds per entry, so a scan of a few hundred entries a
/// second is far below what following the files themselves costs. A directory that cannot
/// be read (gone meanwhile, `EACCES`) matches nothing this time.
struct GlobScan {
    /// The most directories one scan reads.
    static let maxDirectories = 10_000

    /// The files matched: path → identity.
    private(set) var files: [String: GlobFileKey] = [:]
    /// The scan stopped at ``maxDirectories``.
    private(set) var truncated = false
    private var directoriesRead = 0

    /// Scans the file system for `pattern`.
    ///
    /// - Parameter pattern: what to match.
    /// - Returns: the scan's result.
    static func run(_ pattern: GlobPattern) -> GlobScan {
        var scan = GlobScan()
        var info = stat()
        if stat(pattern.base, &info) == 0, info.st_mode & S_IFMT == S_IFDIR {
            scan.walk(pattern.base, pattern.components[...])
        }
        return scan
    }

    private mutating func walk(_ directory: String, _ rest: ArraySlice<GlobPattern.Component>) {
        guard let first = rest.first else { return }
        let after = rest.dropFirst()
        let last = after.isEmpty
        switch first {
        case .literal(let name):
            let path = GlobPattern.join(directory, name)
            var info = stat()
            guard stat(path, &info) == 0 else { return }
            if last {
                if info.st_mode & S_IFMT == S_IFREG { files[path] = GlobFileKey(info) }
            } else if info.st_mode & S_IFMT == S_IFDIR {
                walk(path, after)
            }
        case .pattern(let pattern):
            for (name, _) in entries(of: directory) where GlobPattern.matches(pattern, name) {
                let path = GlobPattern.join(directory, name)
                var info = stat()
                guard stat(path, &info) == 0 else { continue }
                if last {
                    if info.st_mode & S_IFMT == S_IFREG { files[path] = GlobFileKey(info) }
                } else if info.st_mode & S_IFMT == S_IFDIR {
                    walk(path, after)
                }
            }
        case .anyDepth:
            // Zero directories: the rest matched right here; then one more level down.
            walk(directory, after)
            for (name, isDirectory) in entries(of: directory) where isDirectory && !name.hasPrefix(".") {
                walk(GlobPattern.join(directory, name), rest)
            }
        }
    }

    /// The entries of `directory` (not `.` and `..`), each with whether it is a directory
    /// itself (not a link to one: `**` does not follow links, which could make a cycle).
    private mutating func entries(of directory: String) -> [(String, Bool)] {
        if directoriesRead >= GlobScan.maxDirectories {
            truncated = true
            return []
        }
        directoriesRead += 1
        guard let handle = opendir(directory) else { return [] }
        defer { closedir(handle) }
        var result: [(String, Bool)] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
            }
            if name == "." || name == ".." { continue }
            var isDirectory = entry.pointee.d_type == UInt8(DT_DIR)
            if entry.pointee.d_type == UInt8(DT_UNKNOWN) {
                // Some file systems do not fill d_type: ask (without following a link).
                var info = stat()
                isDirectory = lstat(GlobPattern.join(directory, name), &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
            }
            result.append((name, isDirectory))
        }
        return result
    }
}

/// Which files this process has open now, by identity: `/proc/self/fd`, each descriptor
/// `stat`ed through its link (which reaches the file even once it is deleted).
///
/// Why: a followed file that is deleted is still read to its end by its follower (the
/// library's `File.follow` keeps the descriptor and closes it once it has read the last
/// byte of a deleted file). The library says nothing when that happens, but the descriptor
/// closing is exactly it: a pattern ends a gone file's follow once no descriptor of the
/// process names the file any more, so every line it held came first.
enum GlobOpenFiles {
    /// The identities of the regular files open in this process.
    static func keys() -> Set<GlobFileKey> {
        var keys: Set<GlobFileKey> = []
        guard let handle = opendir("/proc/self/fd") else { return keys }
        defer { closedir(handle) }
        let own = dirfd(handle)
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
            }
            guard let fd = Int32(name), fd != own else { continue }
            var info = stat()
            if fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG { keys.insert(GlobFileKey(info)) }
        }
        return keys
    }
}

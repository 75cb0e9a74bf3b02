import Glibc

// Where a followed path's files live. A rotation renames and creates files in the directory
// that holds the file, which is not the path's directory when the path is a symbolic link:
// Kubernetes' `/var/log/containers/<pod>.log` links to `/var/log/pods/<pod>/<container>/0.log`,
// which the kubelet rotates by rename (`0.log` → `0.log.<time>`) beside it. Watching the
// link's directory saw none of that, and the files rotated away while the loop could not
// look were searched for among the link's siblings: a subscriber lagging behind rotations
// lost whole files (a quarter of 40,000 lines in `testAThrottledSubscriberLosesNothing…
// BehindASymbolicLink`).

extension TailFollower {
    /// `dirname(path)`, without touching the file system.
    static func parentDirectory(of path: String) -> String {
        var bytes = Array(path.utf8)
        while bytes.count > 1 && bytes.last == UInt8(ascii: "/") { bytes.removeLast() }
        guard let slash = bytes.lastIndex(of: UInt8(ascii: "/")) else { return "." }
        if slash == 0 { return "/" }
        return String(decoding: bytes[..<slash], as: UTF8.self)
    }

    /// `basename(path)`, without touching the file system.
    static func lastComponent(of path: String) -> String {
        var bytes = Array(path.utf8)
        while bytes.count > 1 && bytes.last == UInt8(ascii: "/") { bytes.removeLast() }
        guard let slash = bytes.lastIndex(of: UInt8(ascii: "/")) else { return String(decoding: bytes, as: UTF8.self) }
        return String(decoding: bytes[(slash + 1)...], as: UTF8.self)
    }

    /// `directory/name`.
    static func joined(_ directory: String, _ name: String) -> String {
        directory == "/" ? "/" + name : directory + "/" + name
    }

    /// Where the file `path` names lives: `path` itself, or, when its last component is a
    /// symbolic link (or a chain of them), the last link's target — also one that does not
    /// exist yet; the target's directory is then resolved (`realpath`). For a path that is
    /// no link the directories are left as they are: the kernel follows a link to a
    /// directory for a watch and for `opendir` alike.
    static func fileLocation(of path: String) -> String {
        var location = path
        for _ in 0..<40 {  // Linux's limit of links followed in one lookup
            var info = stat()
            guard lstat(location, &info) == 0, info.st_mode & S_IFMT == S_IFLNK else { break }
            var buffer = [UInt8](repeating: 0, count: Int(PATH_MAX))
            let n = buffer.withUnsafeMutableBufferPointer { raw in
                raw.baseAddress!.withMemoryRebound(to: CChar.self, capacity: raw.count) { readlink(location, $0, raw.count) }
            }
            guard n > 0 else { break }
            let target = String(decoding: buffer[..<n], as: UTF8.self)
            location = target.hasPrefix("/") ? target : joined(parentDirectory(of: location), target)
        }
        // A relative target (`../pods/0.log`) makes names like `containers/../pods/0.log.1`
        // in notices: the target's directory is written as the path it resolves to.
        if location != path, let resolved = realpath(parentDirectory(of: location), nil) {
            defer { free(resolved) }
            location = joined(String(cString: resolved), lastComponent(of: location))
        }
        return location
    }
}

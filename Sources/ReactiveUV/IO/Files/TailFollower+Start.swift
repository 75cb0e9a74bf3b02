import CLibUV
import Glibc

// What a tail starts with, decided synchronously in `subscribe` from what the path holds
// at that moment.
//
// Why synchronously: the choice between "from the start position" (a file that was there)
// and "from byte 0" (a file that appeared later) used to be made by an asynchronous first
// `stat` on the loop; a file created between `subscribe` and that `stat` was taken for one
// that had been there, and its first lines were skipped (logcast: every time lines were
// appended right after it said it was listening). Opening the path in `subscribe` itself
// makes the rule exact: what `subscribe` found gets the start position; anything that
// appears after it returns is new and is read from its beginning. The cost is an `open`,
// an `fstat`, a 64-byte read and, for "the last n lines", reads backwards from the end
// (one 64 KiB read for usual line lengths), on the subscribing thread.

/// The files a tail starts with and the notices to send once it runs.
struct TailPlan {
    /// A file opened at subscription and where to start reading it.
    struct Opened {
        let fd: Int32
        let identity: FileIdentity
        let path: String
        var offset: Int64
        /// Its size when opened.
        let size: Int64
        /// Line breaks still to skip when `.line(k)` reaches beyond the file's end now.
        var skipLines = 0
        /// The file at the path (the rest were rotated away while we were down).
        let isCurrent: Bool
    }

    /// Rotated files resumed from the checkpoint store (oldest first), then the current file.
    var files: [Opened] = []
    var notices: [TailNotice] = []
    /// Whether an unfinished last line counts as one of `.lastLines(n)` (then the reader
    /// sends it at its first end of file).
    var unfinishedLineAtStart = false
    /// The path's rotated siblings when the plan was made, with their modification times
    /// (``TailFollower/siblingStamps(ofFileAt:)``), and the wall-clock second before it:
    /// taken here, in `subscribe`, not when the follower starts on the loop — files a
    /// writer rotated in between are missed files to read, not ones that were already there.
    var siblings: [SiblingKey: SiblingStamp] = [:]
    var startedAt = 0

    /// Closes every descriptor (a subscription disposed before it started).
    func closeAll() {
        for file in files { _ = Glibc.close(file.fd) }
    }
}

extension TailFollower {
    /// Opens what `path` holds now (and, with a store, the files it remembers for the
    /// path) and works out where each is read from.
    ///
    /// The phases, in order, each a step of its own (their notices keep this order): find
    /// the file at the path (`TailPlan.findCurrentFile`), resume what the store remembers
    /// (`TailPlan.resumeRemembered`), then decide where the current file is read from
    /// (`TailPlan.addCurrent`).
    ///
    /// - Returns: the plan, or the error that ends the subscription at once (`ENOTDIR
    ///   during stat`, an I/O error, ...). Something that cannot be followed for now (a
    ///   directory, FIFO, socket or device, a file we may not read) is no error: the plan
    ///   holds a notice and no current file, and the follower waits.
    static func plan(
        _ path: String, start: TailStart, store: TailCheckpointStore?, sendsUnfinishedLastLine: Bool
    ) -> Result<TailPlan, UVError> {
        var plan = TailPlan()
        plan.startedAt = Int(time(nil)) - 1
        plan.siblings = siblingStamps(ofFileAt: fileLocation(of: path))
        let current: TailPlan.Current?
        switch plan.findCurrentFile(path) {
        case .failure(let error): return .failure(error)
        case .success(let found): current = found
        }
        let remembered = store?.records(for: path) ?? []
        let resumedAt = plan.resumeRemembered(remembered, current: current, path: path, store: store)
        guard let current else { return .success(plan) }
        if case .failure(let error) = plan.addCurrent(
            current, resumedAt: resumedAt, storeKnowsPath: { !remembered.isEmpty || store?.hasFollowed(path) == true },
            path: path, start: start, store: store, sendsUnfinishedLastLine: sendsUnfinishedLastLine)
        {
            return .failure(error)
        }
        return .success(plan)
    }
}

extension TailPlan {
    /// The file at the path when the plan is made, before it is known where it is read from.
    struct Current {
        let fd: Int32
        let identity: FileIdentity
        let size: Int64
    }

    /// Finds the file a tail starts on: opens what `path` holds now and takes its identity
    /// and size.
    ///
    /// Nothing there, or something that cannot be followed for now, is no error: it is a
    /// notice and no current file, and the follower waits, as `tail -F` does (it looks
    /// again at each change).
    ///
    /// - Returns: the file, `nil` (with a notice), or the error that ends the subscription
    ///   (`ENOTDIR` during `stat`, an I/O error, ...).
    mutating func findCurrentFile(_ path: String) -> Result<Current?, UVError> {
        switch TailFollower.openRegularFile(path) {
        case .opened(let fd):
            switch FileIdentity.of(descriptor: fd) {
            case .failure(let error):
                _ = Glibc.close(fd)
                return .failure(UVError(code: error.code, operation: error.operation, target: path))
            case .success(let (identity, size, _)):
                return .success(Current(fd: fd, identity: identity, size: size))
            }
        case .missing:
            notices.append(.missing(path: path))
        case .unfollowable(let reason):
            notices.append(.unfollowable(path: path, reason: reason))
        case .failed(let code):
            // ENOTDIR: a path through something that is not a directory.
            return .failure(UVError(code: code, operation: code == ENOTDIR ? "stat" : "open", target: path))
        }
        return .success(nil)
    }

    /// Decides where the current file is read from, registers it with the store and adds
    /// it to the plan (after the rotated files, which are read first).
    ///
    /// Where: the offset its record resumes it at; else byte 0 when the store knew the path
    /// but not this file (it appeared while we were down — also when every file the store
    /// had of the path was done and dropped); else where `start` puts it.
    ///
    /// - Parameters:
    ///   - storeKnowsPath: asked only when no record resumes the file.
    /// - Returns: the error of reading the file to find `start`'s position; then every
    ///   descriptor of the plan is closed.
    mutating func addCurrent(
        _ current: Current, resumedAt: Int64?, storeKnowsPath: () -> Bool, path: String, start: TailStart,
        store: TailCheckpointStore?, sendsUnfinishedLastLine: Bool
    ) -> Result<Void, UVError> {
        var opened = Opened(
            fd: current.fd, identity: current.identity, path: path, offset: 0, size: current.size, isCurrent: true)
        if let resumedAt {
            opened.offset = resumedAt
        } else if storeKnowsPath() {
            opened.offset = 0
        } else {
            switch TailFollower.startOffset(
                current.fd, size: current.size, start: start, unfinishedCounts: sendsUnfinishedLastLine)
            {
            case .failure(let error):
                closeAll()
                _ = Glibc.close(current.fd)
                return .failure(UVError(code: error.code, operation: error.operation, target: path))
            case .success(let (offset, skip)):
                opened.offset = offset
                opened.skipLines = skip
                if sendsUnfinishedLastLine { unfinishedLineAtStart = TailPlan.unfinishedLineCounts(from: start) }
            }
        }
        store?.register(current.identity, path: path, offset: opened.offset)
        files.append(opened)
        return .success(())
    }

    /// Whether an unfinished last line is sent when the tail starts at `start` (for a tail
    /// that sends unfinished last lines at all): `tail -n N` counts it as a line and prints
    /// it; `tail -n +K` prints it too (it is past line K). `tail -n 0` does not, nor does a
    /// tail from the end.
    static func unfinishedLineCounts(from start: TailStart) -> Bool {
        switch start {
        case .lastLines(let n): return n > 0
        case .line, .beginning: return true
        case .end: return false
        }
    }
}

extension TailFollower {
    /// Where `start` puts the first read of a file of `size` bytes, and how many line
    /// breaks are still to be skipped after it (`.line(k)` past the end).
    static func startOffset(
        _ fd: Int32, size: Int64, start: TailStart, unfinishedCounts: Bool
    ) -> Result<(Int64, Int), UVError> {
        switch start {
        case .beginning:
            return .success((0, 0))
        case .line(let k):
            if k <= 1 { return .success((0, 0)) }
            return scanForward(fd, size: size, breaks: k - 1)
        case .end:
            return scanBack(fd, before: size, breaksWanted: 1, skipTrailingBreak: false).map { ($0, 0) }
        case .lastLines(let n):
            if n <= 0 { return scanBack(fd, before: size, breaksWanted: 1, skipTrailingBreak: false).map { ($0, 0) } }
            if n == Int.max { return .success((0, 0)) }
            // The last n complete lines start after the (n+1)-th break from the end. When
            // an unfinished last line counts as a line (GNU tail's `-n`), the break ending
            // the file is the first of those n+1 only if there is one: an unfinished line
            // takes the place of the first complete one.
            return scanBack(fd, before: size, breaksWanted: n + 1, skipTrailingBreak: unfinishedCounts).map { ($0, 0) }
        }
    }

    /// Reads backwards from `end`, counting line breaks, and returns the offset just after
    /// the `breaksWanted`-th one from the end (0 if there are fewer). With
    /// `skipTrailingBreak`, a file that does not end with a break counts its unfinished
    /// last line as one line (one break fewer is wanted).
    static func scanBack(_ fd: Int32, before end: Int64, breaksWanted: Int, skipTrailingBreak: Bool) -> Result<Int64, UVError> {
        var wanted = breaksWanted
        var found = 0
        var end = end
        let chunk = 64 * 1024
        var buffer = [UInt8](repeating: 0, count: chunk)
        var first = true
        while end > 0 {
            let length = Int(min(Int64(chunk), end))
            let from = end - Int64(length)
            let n: Int
            do { n = try readAt(fd, into: &buffer, count: length, at: from) } catch { return .failure(error) }
            if n < length { return .success(0) }  // shrank meanwhile: truncation handling sorts it out
            if first {
                first = false
                if skipTrailingBreak && buffer[n - 1] != 10 { wanted -= 1 }
                if wanted <= 0 { return .success(from + Int64(n)) }
            }
            var index = n - 1
            while index >= 0 {
                if buffer[index] == 10 {
                    found += 1
                    if found == wanted { return .success(from + Int64(index) + 1) }
                }
                index -= 1
            }
            end = from
        }
        return .success(0)
    }

    /// Reads forwards from 0, counting `breaks` line breaks; returns the offset after the
    /// last one found and how many are still missing.
    static func scanForward(_ fd: Int32, size: Int64, breaks: Int) -> Result<(Int64, Int), UVError> {
        var remaining = breaks
        var position: Int64 = 0
        var after: Int64 = 0
        let chunk = 64 * 1024
        var buffer = [UInt8](repeating: 0, count: chunk)
        while remaining > 0 && position < size {
            let n: Int
            do { n = try readAt(fd, into: &buffer, count: chunk, at: position) } catch { return .failure(error) }
            if n == 0 { break }
            var index = 0
            while index < n && remaining > 0 {
                if buffer[index] == 10 {
                    remaining -= 1
                    after = position + Int64(index) + 1
                }
                index += 1
            }
            position += Int64(n)
        }
        return .success((after, remaining))
    }

    /// Every entry of `directory` with its device and inode (`stat`, following links),
    /// as full paths; empty when the directory cannot be read.
    static func directoryEntries(_ directory: String) -> [(name: String, device: UInt64, inode: UInt64)] {
        guard let dir = opendir(directory) else { return [] }
        defer { closedir(dir) }
        var entries: [(String, UInt64, UInt64)] = []
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: &entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name == "." || name == ".." { continue }
            let full = directory == "/" ? "/" + name : directory + "/" + name
            var info = stat()
            if stat(full, &info) == 0 && info.st_mode & S_IFMT == S_IFREG {
                entries.append((full, UInt64(info.st_dev), UInt64(info.st_ino)))
            }
        }
        return entries
    }
}

/// What ``TailFollower/openRegularFile(_:)`` found at a path.
enum TailOpenResult {
    /// A regular file, opened for reading (blocking mode, close-on-exec).
    case opened(Int32)
    /// Nothing is there (`ENOENT`).
    case missing
    /// Something that cannot be followed for now: not a regular file, or not readable.
    case unfollowable(String)
    /// Another error (`errno`).
    case failed(Int32)
}

extension TailFollower {
    /// Opens what `path` names if it is a regular file we may read, without ever waiting:
    /// the type is checked with `stat` first, and the `open` itself is non-blocking and
    /// checked again with `fstat` (something else may have taken the name in between) —
    /// a FIFO's `open` waits for a writer (the kernel's `wait_for_partner`) and would hold
    /// the loop thread, and a device's may have effects of its own.
    static func openRegularFile(_ path: String) -> TailOpenResult {
        var info = stat()
        if stat(path, &info) != 0 {
            let code = errno
            if code == ENOENT { return .missing }
            if code == EACCES { return .unfollowable(unreadableReason(code)) }
            return .failed(code)
        }
        if info.st_mode & S_IFMT != S_IFREG { return .unfollowable(kindReason(info.st_mode)) }
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        if fd < 0 {
            let code = errno
            if code == ENOENT { return .missing }
            if code == EACCES || code == EPERM { return .unfollowable(unreadableReason(code)) }
            return .failed(code)
        }
        if fstat(fd, &info) != 0 {
            let code = errno
            _ = close(fd)
            return .failed(code)
        }
        if info.st_mode & S_IFMT != S_IFREG {
            _ = close(fd)
            return .unfollowable(kindReason(info.st_mode))
        }
        // Back to blocking reads (the pool's reads and RWF_NOWAIT's cached reads expect it).
        let flags = fcntl(fd, F_GETFL)
        if flags >= 0 { _ = fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) }
        return .opened(fd)
    }

    /// "is a directory", "is a FIFO", ... for a notice.
    static func kindReason(_ mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFDIR: return "is a directory"
        case S_IFIFO: return "is a FIFO"
        case S_IFSOCK: return "is a socket"
        case S_IFCHR: return "is a character device"
        case S_IFBLK: return "is a block device"
        default: return "is not a regular file"
        }
    }

    /// "cannot be read (EACCES: permission denied)" for a notice.
    static func unreadableReason(_ code: Int32) -> String {
        let error = UVError(code: -code)
        return "cannot be read (\(error.name): \(error.message))"
    }
}


import Glibc
import ReactiveUV

/// What the file says about a stored copy found under a batch's id.
enum StoredCopyCheck: Sendable, Equatable {
    /// The file holds the copy's bytes where the copy says: the edge's own message, sent
    /// before a restart.
    case same
    /// It holds other bytes there, or ends before the copy's end: an older content of the
    /// file (truncated and written again with the same first line), or another file that
    /// had its inode.
    case different
    /// The file cannot be read (deleted, moved out of its directory, a read error): why.
    case unknown(String)
}

extension EdgeFile {
    /// Whether the file `identity` names (at `path`, or a rotated sibling of it) holds
    /// `expected` at `offset`. Blocking: an `open`, an `fstat` and reads of
    /// `expected.count` bytes (at most one batch), so the edge runs it off the loop.
    ///
    /// Why the file and not the batch: after a restart the batch may hold fewer lines
    /// than the stored copy (batches are cut by what was read), so its bytes cannot
    /// confirm the copy's end; a content written again with the same first lines agrees
    /// with the old copy on those lines and then differs, or ends sooner.
    static func check(_ expected: [UInt8], at offset: Int64, path: String, identity: FileIdentity) -> StoredCopyCheck {
        // By device and inode at the path first: a file truncated and written again no
        // longer starts with its fingerprint, so `locate` would not know it there.
        guard let fd = openSameInode(path, identity) ?? identity.locate(near: path).flatMap({ openSameInode($0, identity) }) else {
            return .unknown("\(path) (\(identity)) is no longer there or beside it")
        }
        defer { close(fd) }
        var info = stat()
        if fstat(fd, &info) != 0 { return .unknown("fstat of \(path): \(String(cString: strerror(errno)))") }
        if Int64(info.st_size) < offset + Int64(expected.count) { return .different }
        var bytes = [UInt8](repeating: 0, count: expected.count)
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeMutableBytes { raw in
                pread(fd, raw.baseAddress! + done, raw.count - done, off_t(offset) + off_t(done))
            }
            if n < 0 {
                if errno == EINTR { continue }
                return .unknown("pread of \(path): \(String(cString: strerror(errno)))")
            }
            if n == 0 { return .different }  // shorter than `fstat` said a moment ago
            done += n
        }
        return bytes == expected ? .same : .different
    }

    /// A descriptor of `path` if the file there has `identity`'s device and inode.
    private static func openSameInode(_ path: String, _ identity: FileIdentity) -> Int32? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 { return nil }
        var info = stat()
        if fstat(fd, &info) == 0 && UInt64(info.st_dev) == identity.device && UInt64(info.st_ino) == identity.inode {
            return fd
        }
        close(fd)
        return nil
    }
}

import CLibUV
import Glibc

/// Which file a tail reads: its device and inode, plus a fingerprint of its first bytes.
///
/// Device and inode name a file while it exists, whatever path it has (a rename keeps
/// them). They do not name it forever: once a file is deleted its inode number may be
/// given to the next file made on the device, which is exactly what a log rotation does
/// (delete `app.log.3`, create `app.log`). The fingerprint — the file's first
/// ``FileIdentity/fingerprintLength`` bytes, as they were when the file was first opened —
/// tells such a reused inode from the file that had it before, as Filebeat's
/// fingerprint file identity does.
///
/// A file shorter than ``FileIdentity/fingerprintLength`` when first opened has a shorter
/// fingerprint (an empty one for an empty file); two identities whose device and inode
/// agree and one of whose fingerprints begins with the other are the same file grown
/// (``isSameFile(as:)``), which is how ``TailCheckpointStore`` matches them. The store's
/// record of such a file takes the longer fingerprint as a tail reads the file's first
/// bytes (an empty fingerprint would match any later content of the inode). `==` compares
/// all three exactly: the identity a ``TailChunk`` carries stays the same for the whole
/// life of one follower of the file.
public struct FileIdentity: Hashable, Sendable, CustomStringConvertible {
    /// How many leading bytes make the fingerprint: enough to hold a timestamp and the
    /// start of a first log line, which differ between one rotated file and the next.
    public static let fingerprintLength = 64

    /// The file's device (`st_dev`).
    public let device: UInt64
    /// The file's inode number on its device (`st_ino`).
    public let inode: UInt64
    /// The file's first bytes (at most ``fingerprintLength``) when it was first opened.
    public let fingerprint: [UInt8]

    /// Creates an identity from its parts (for stores and tests; a tail makes its own).
    ///
    /// - Parameters:
    ///   - device: `st_dev`.
    ///   - inode: `st_ino`.
    ///   - fingerprint: the file's first bytes; more than ``fingerprintLength`` are cut.
    public init(device: UInt64, inode: UInt64, fingerprint: [UInt8]) {
        self.device = device
        self.inode = inode
        self.fingerprint = fingerprint.count > FileIdentity.fingerprintLength
            ? Array(fingerprint.prefix(FileIdentity.fingerprintLength)) : fingerprint
    }

    /// Whether `other` is this file, possibly grown since one of the two was taken: same
    /// device and inode, and one fingerprint is a prefix of the other.
    ///
    /// - Parameter other: the identity to compare with.
    /// - Returns: `true` for the same file; `false` for another file, including one that
    ///   reuses this file's inode number.
    public func isSameFile(as other: FileIdentity) -> Bool {
        guard device == other.device && inode == other.inode else { return false }
        let n = min(fingerprint.count, other.fingerprint.count)
        return fingerprint.prefix(n) == other.fingerprint.prefix(n)
    }

    /// `dev 2049 ino 1234567 fp 3f2a…(64)`: device and inode, then a hash of the fingerprint
    /// and its length (the bytes themselves may be anything).
    public var description: String {
        "dev \(device) ino \(inode) fp \(hexHash)(\(fingerprint.count))"
    }

    /// FNV-1a of the fingerprint, as 16 hex digits (for descriptions only).
    var hexHash: String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in fingerprint {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        let digits = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }

    /// Where this file is now: `path` when the file there is this one, else another regular
    /// file of the directory the file at `path` lives in — `path`'s, or its link target's
    /// when `path` is a symbolic link — that is (a rotation renamed it: `app.log` → `app.log.1`,
    /// as ``File/follow(_:from:checkpoints:options:notices:on:)`` finds a resumed file),
    /// else `nil` (deleted, or moved out of the directory).
    ///
    /// A candidate is this file when device and inode agree and its first bytes agree with
    /// the fingerprint (``isSameFile(as:)``), so a file that reuses the inode is not taken
    /// for it. Blocking: a `stat` per directory entry and a small read per candidate; call
    /// it off the loop, or where a blocking `stat` is acceptable.
    ///
    /// - Parameter path: where the file was last seen.
    /// - Returns: the file's path now, or `nil`.
    public func locate(near path: String) -> String? {
        if isThisFile(at: path) { return path }
        let siblings = TailFollower.directoryEntries(TailFollower.parentDirectory(of: TailFollower.fileLocation(of: path)))
        return siblings.first { $0.name != path && $0.device == device && $0.inode == inode && isThisFile(at: $0.name) }?.name
    }

    /// Whether the file at `path` is this one (opened, then ``isSameFile(as:)``).
    private func isThisFile(at path: String) -> Bool {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        if fd < 0 { return false }
        defer { close(fd) }
        guard case .success(let (found, _, isDirectory)) = FileIdentity.of(descriptor: fd), !isDirectory else { return false }
        return isSameFile(as: found)
    }

    /// Whether two identities name the same inode (the fingerprints aside): enough while
    /// a descriptor of one is open, since an open file's inode cannot be reused.
    func sameInode(_ other: FileIdentity) -> Bool { device == other.device && inode == other.inode }

    /// The identity of an open descriptor: `fstat` for device and inode, and a `pread` of
    /// the first bytes (a blocking read of at most ``fingerprintLength`` bytes, on whatever
    /// thread calls: the subscribing thread at subscription, the loop thread when a new
    /// file appears — one small read of a page the writer just wrote).
    ///
    /// - Returns: the identity and the file's size then, or the error (`fstat` or `read` on
    ///   the descriptor; a caller that knows the path puts it in).
    static func of(descriptor fd: Int32) -> Result<(FileIdentity, Int64, isDirectory: Bool), UVError> {
        var info = stat()
        var head = [UInt8](repeating: 0, count: fingerprintLength)
        var n = 0
        let isDir: Bool
        do {
            try systemCall("fstat", on: describe(descriptor: fd)) { fstat(fd, &info) }
            isDir = info.st_mode & S_IFMT == S_IFDIR
            if !isDir { n = try readAt(fd, into: &head, count: head.count, at: 0) }
        } catch {
            return .failure(error)
        }
        head.removeSubrange(n...)
        let identity = FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino), fingerprint: head)
        return .success((identity, Int64(info.st_size), isDir))
    }
}

/// Whether a `uv_stat_t` describes a directory (`S_ISDIR`).
func isDirectory(_ stat: uv_stat_t) -> Bool {
    stat.st_mode & 0o170000 == 0o040000
}

import Glibc

// The durable positions of tails: per file identity, the offset up to which the consumer
// has acknowledged lines. Saved the way Filebeat's registry, Fluent Bit's and rsyslog's
// state files are: the whole state into a temporary file, `fsync`, `rename` over the old
// file, `fsync` of the directory — so a crash at any moment leaves either the old state
// or the new one on disk, never a torn mix.
//
// Why a text file of one record per line: it is a few records (the files of a few paths
// and their rotated siblings), it is read once at start, and an operator can read it.

/// One remembered position: a file, the path it was followed as, and the offset up to
/// which its lines were acknowledged.
public struct TailCheckpoint: Sendable, Equatable {
    /// The file (its fingerprint grown to the first bytes a tail has read, when the file
    /// was shorter than ``FileIdentity/fingerprintLength`` when first opened).
    public let identity: FileIdentity
    /// The path followed when the file was read (the file may have been renamed since).
    public let path: String
    /// The offset just after the last acknowledged byte: a resumed tail reads from here.
    public let offset: Int64
    /// Where the file ended when the tail finished it (rotated away and read to its end),
    /// or `nil` while it may still grow. Once the acknowledged offset reaches it, the
    /// record is dropped: nothing of that file is left to deliver.
    public let finalOffset: Int64?
    /// The first bytes (at most ``FileIdentity/fingerprintLength``) of what the file has
    /// held since a truncation seen while it was followed, or `nil` if none was: its
    /// fingerprint names the content before, which the file no longer starts with, so a
    /// tail started again knows the file by these (``describes(_:)``).
    var content: [UInt8]? = nil
    /// How many truncations of the file the store has seen (see
    /// ``TailCheckpointStore/truncations(for:)``).
    var truncations = 0
    /// The file and content this file is a copy of, when a tail read it as copytruncate's
    /// copy (see ``TailCheckpointStore/copyOrigin(of:)``).
    var copyOf: TailCopyOrigin? = nil

    /// The origin a copy of this record's content has: the record's own, or, for a record
    /// that is itself a copy, the first file's.
    var originOfItsContent: TailCopyOrigin {
        copyOf ?? TailCopyOrigin(device: identity.device, inode: identity.inode, truncations: truncations)
    }

    /// Whether `file` (an identity just taken of a file found on disk) is the file of this
    /// record: the same file grown (``FileIdentity/isSameFile(as:)``), or, after a
    /// truncation, the same device and inode whose first bytes agree with ``content``.
    func describes(_ file: FileIdentity) -> Bool {
        if identity.isSameFile(as: file) { return true }
        guard let content, identity.device == file.device, identity.inode == file.inode else { return false }
        let n = min(content.count, file.fingerprint.count)
        return content.prefix(n) == file.fingerprint.prefix(n)
    }
}

/// Durable tail positions in a state directory: what ``File/follow(_:from:checkpoints:options:notices:on:)``
/// resumes from after a restart.
///
/// **Acknowledge, then save.** ``acknowledge(_:through:)`` records in memory that the
/// consumer is done with a file's bytes up to an offset (``TailChunk/endOffset``); the
/// acknowledgement is the consumer's, made when its downstream has the lines (a line
/// written to a socket is not yet delivered; a line acknowledged by the peer is).
/// ``save()`` writes every position to `DIRECTORY/tail-checkpoints` durably (temporary file,
/// `fsync`, `rename`, `fsync` of the directory). After a crash, a resumed tail delivers
/// again at most what was acknowledged after the last save plus what was never
/// acknowledged, and loses nothing.
///
/// **Resuming.** A tail given the store looks up, at subscription, every file it has a
/// position for under the followed path: the file now at the path, or one rotated away
/// while the process was down, found by device, inode and fingerprint among the path's
/// directory entries (`app.log.1`, `app.log-20260101`, ...). Those are read on from their
/// positions, oldest first, before the current file. A remembered file found nowhere is
/// reported lost from its position on. A file the store does not know is new: it is read
/// from its start if the store knew other files of the path (it appeared while the process
/// was down), or from the tail's start position if the path is new to the store.
///
/// A follower also records in the store each file it opens (at the offset it starts at),
/// so a file whose lines were never acknowledged is resumed from where reading began.
///
/// Thread-safety: every method may be called from any thread (one lock guards the
/// records); ``save()`` does blocking file IO on the calling thread — call it where that is
/// acceptable (a timer every second on a loop thread costs one small write and two
/// `fsync`s).
public final class TailCheckpointStore: @unchecked Sendable {
    /// The state directory.
    public let directory: String
    /// The state file: `directory/tail-checkpoints`.
    public let file: String

    /// A record and the order it was made in (resumption goes oldest first).
    struct Record {
        var identity: FileIdentity
        var path: String
        var offset: Int64
        var finalOffset: Int64?
        var order: UInt64
        /// See ``TailCheckpoint/content``.
        var content: [UInt8]? = nil
        /// See ``TailCheckpointStore/truncations(for:)``.
        var truncations = 0
        /// See ``TailCheckpointStore/copyOrigin(of:)``.
        var copyOf: TailCopyOrigin? = nil
    }

    // Thread-safety: `lock` guards `records`, `nextOrder` and `dirty`.
    private let lock = UnsafeLock()
    private var records: [Record] = []
    /// The truncation counts of records forgotten since the store was opened, by device
    /// and inode: a file that takes such a record's place (the same inode with content the
    /// record no longer describes, found when a tail starts) counts on from there.
    private var forgottenTruncations: [FileInodeKey: Int] = [:]
    private var nextOrder: UInt64 = 0
    private var dirty = false
    /// Every path a tail has followed with this store. Kept when the path's last record is
    /// dropped (every file of it read to its end and acknowledged, or deleted): a file at
    /// the path the store does not know is then one that appeared while no tail ran, read
    /// from its start, not placed by the start position (`-n 10` skipped its first lines).
    private var followedPaths: Set<String> = []

    /// Opens (or creates) the store in `directory`, reading the positions saved there.
    ///
    /// - Parameter directory: the state directory; made (one level, mode 0700) if missing.
    /// - Throws: a ``UVError`` when the directory cannot be made or the state file cannot
    ///   be read, or `SignalError.invalidArgument` naming the line of a state file that is
    ///   not one of ours.
    public init(directory: String) throws {
        self.directory = directory
        file = directory + "/tail-checkpoints"
        // (A throw from here on still runs `deinit`, which destroys the lock.)
        if mkdir(directory, 0o700) != 0 && errno != EEXIST {
            throw UVError(code: errno, operation: "mkdir", target: directory)
        }
        try load()
    }

    deinit { lock.destroy() }

    /// Every remembered position, oldest record first.
    public var checkpoints: [TailCheckpoint] {
        lock.withLock { records.map(TailCheckpointStore.checkpoint) }
    }

    /// The acknowledged offset of `identity` (or of the same file, grown), if known.
    ///
    /// - Parameter identity: the file.
    /// - Returns: the offset to resume from, or `nil`.
    public func offset(for identity: FileIdentity) -> Int64? {
        lock.withLock { index(of: identity).map { records[$0].offset } }
    }

    /// How many times the file was found truncated — by a tail that was reading it, or by
    /// one started after it was cut while none was — since the store first recorded it, 0
    /// for an unknown file. A file that took the place of a forgotten record of the same
    /// inode (truncated and written again while no tail ran, with other first bytes) counts
    /// on from that record's count.
    ///
    /// The count changes with a truncation together with the file's position (both saved
    /// by the same ``save()``), so a consumer may name the file's content by it: the same
    /// bytes written again after a truncation get another count, and a consumer restarted
    /// after a crash gets the same count for the content it was reading — if it saved the
    /// store before handing on anything named by a new count: the count has changed when
    /// the tail's ``TailNotice/truncated(path:identity:at:)`` notice arrives, and after a
    /// tail started (a truncation found then is saved by the first ``save()``).
    ///
    /// - Parameter identity: the file (``TailChunk/identity``).
    /// - Returns: the count.
    public func truncations(for identity: FileIdentity) -> Int {
        lock.withLock { index(of: identity).map { records[$0].truncations } ?? 0 }
    }

    /// The file whose content `identity` is a copy of, when a tail read `identity` as the
    /// copy copytruncate made of a file it was following (the unread rest of a file cut
    /// while it was followed, or while no tail ran): that file's device and inode and its
    /// truncation count then. `nil` for any other file.
    ///
    /// A consumer that names lines by file and offset (logcast's message ids) names a
    /// copy's lines by its origin: they are the same bytes at the same offsets, and some may
    /// have been handed on from the original before a crash.
    ///
    /// - Parameter identity: the file (``TailChunk/identity``).
    /// - Returns: the origin, saved with the positions.
    public func copyOrigin(of identity: FileIdentity) -> TailCopyOrigin? {
        lock.withLock { index(of: identity).flatMap { records[$0].copyOf } }
    }

    /// The origin a copy of `identity`'s current content would have (taken before the
    /// truncation that makes the copy needed), or `nil` for an unknown file.
    func originOfContent(of identity: FileIdentity) -> TailCopyOrigin? {
        lock.withLock { index(of: identity).map { TailCheckpointStore.checkpoint(records[$0]).originOfItsContent } }
    }

    /// Records that the consumer is done with `identity`'s bytes before `offset` (pass a
    /// chunk's ``TailChunk/endOffset``). Takes effect on disk at the next ``save()``.
    ///
    /// Acknowledgements are positions, not increments: the last one given for a file
    /// counts, so acknowledge in the order chunks arrived. A file the store does not know
    /// yet is added under its chunk's path by the follower; here an unknown identity is
    /// added with an empty path (it is then never resumed by path, only by identity).
    ///
    /// - Parameters:
    ///   - identity: the file (``TailChunk/identity``).
    ///   - offset: the offset after the last acknowledged byte.
    public func acknowledge(_ identity: FileIdentity, through offset: Int64) {
        lock.withLock {
            if let i = index(of: identity) {
                records[i].offset = offset
                if let final = records[i].finalOffset, offset >= final { records.remove(at: i) }
            } else {
                appendRecord(Record(identity: identity, path: "", offset: offset, finalOffset: nil, order: 0))
            }
            dirty = true
        }
    }

    /// Forgets `identity` (the next tail treats the file as new).
    ///
    /// - Parameter identity: the file.
    public func forget(_ identity: FileIdentity) {
        lock.withLock {
            if let i = index(of: identity) {
                forgottenTruncations[FileInodeKey(records[i].identity)] = records[i].truncations
                records.remove(at: i)
                dirty = true
            }
        }
    }

    /// Writes every position to ``file`` durably: into `file.tmp`, `fsync`, `rename` over
    /// ``file``, `fsync` of the directory. Does nothing when nothing changed since the last
    /// save. Blocking IO on the calling thread.
    ///
    /// - Throws: a ``UVError`` naming the failing call and path (`ENOSPC during write on
    ///   …/tail-checkpoints.tmp`); the positions stay in memory, marked unsaved.
    public func save() throws {
        let (text, wasDirty): (String, Bool) = lock.withLock {
            let was = dirty
            dirty = false
            return (was ? serialize() : "", was)
        }
        if !wasDirty { return }
        do {
            try TailCheckpointStore.writeDurably(text, to: file, in: directory)
        } catch {
            lock.withLock { dirty = true }
            throw error
        }
    }

    // MARK: - For the follower

    /// Records for `path`, oldest first.
    func records(for path: String) -> [TailCheckpoint] {
        lock.withLock { records.filter { $0.path == path }.map(TailCheckpointStore.checkpoint) }
    }

    /// Whether a tail has followed `path` with this store (saved, or in this process).
    func hasFollowed(_ path: String) -> Bool {
        lock.withLock { followedPaths.contains(path) || records.contains { $0.path == path } }
    }

    /// Adds `identity` at `offset` unless the store knows it (a known file keeps its
    /// acknowledged offset); an unknown path of a known identity is filled in. A new record
    /// of a copy remembers what it is a copy of (`copyOf`).
    func register(_ identity: FileIdentity, path: String, offset: Int64, copyOf: TailCopyOrigin? = nil) {
        lock.withLock {
            if !path.isEmpty && followedPaths.insert(path).inserted { dirty = true }
            if let i = index(of: identity) {
                if records[i].path.isEmpty {
                    records[i].path = path
                    dirty = true
                }
                return
            }
            let truncations = forgottenTruncations.removeValue(forKey: FileInodeKey(identity)).map { $0 + 1 } ?? 0
            appendRecord(Record(
                identity: identity, path: path, offset: offset, finalOffset: nil, order: 0, truncations: truncations,
                copyOf: copyOf))
            dirty = true
        }
    }

    /// The file was truncated: its position starts again at 0 and the truncation is
    /// counted. Seen by a tail reading it (`whileFollowed`), the file is known by its new
    /// first bytes from now on (none read yet), not by its fingerprint; found shorter than
    /// its position when a tail starts, its fingerprint still describes it.
    func truncated(_ identity: FileIdentity, whileFollowed: Bool = true) {
        lock.withLock {
            if let i = index(of: identity) {
                records[i].offset = 0
                records[i].finalOffset = nil
                if whileFollowed { records[i].content = [] }
                records[i].truncations += 1
                records[i].copyOf = nil  // another content now
                dirty = true
            }
        }
    }

    /// The file's first bytes, as far as a reading tail has seen them (they only grow, up to
    /// ``FileIdentity/fingerprintLength``): after a truncation seen while followed, those of
    /// the new content (``TailCheckpoint/content``); otherwise the fingerprint itself grows.
    /// A file shorter than the fingerprint when first opened — empty, as a log is when its
    /// writer or logrotate's `create` has just made it — would otherwise keep that short
    /// fingerprint, which matches whatever the inode holds later (a content written after a
    /// truncation while no tail ran would be resumed at the old position).
    func headGrew(_ identity: FileIdentity, to head: [UInt8]) {
        let head = head.prefix(FileIdentity.fingerprintLength)
        lock.withLock {
            guard let i = index(of: identity) else { return }
            if let content = records[i].content {
                guard head.count > content.count else { return }
                records[i].content = Array(head)
            } else {
                let known = records[i].identity
                guard head.count > known.fingerprint.count, head.starts(with: known.fingerprint) else { return }
                records[i].identity = FileIdentity(device: known.device, inode: known.inode, fingerprint: Array(head))
            }
            dirty = true
        }
    }

    /// A tail started again found the file of a record made before a truncation by its new
    /// content (``TailCheckpoint/describes(_:)``): from now on the record is that file's
    /// under the identity just taken of it, which its new chunks carry.
    func rekey(_ old: FileIdentity, to new: FileIdentity) {
        lock.withLock {
            guard let i = index(of: old) else { return }
            records[i].identity = new
            records[i].content = nil
            records[i].copyOf = nil  // known by a content since a truncation
            dirty = true
        }
    }

    /// The follower finished the file at `offset` (rotated away, read to its end): once
    /// acknowledged that far, the record goes.
    func finished(_ identity: FileIdentity, at offset: Int64) {
        lock.withLock {
            guard let i = index(of: identity) else { return }
            if records[i].offset >= offset {
                records.remove(at: i)
            } else {
                records[i].finalOffset = offset
            }
            dirty = true
        }
    }

    // MARK: - Internals (under the lock unless said otherwise)

    private static func checkpoint(_ r: Record) -> TailCheckpoint {
        TailCheckpoint(identity: r.identity, path: r.path, offset: r.offset, finalOffset: r.finalOffset, content: r.content,
                       truncations: r.truncations, copyOf: r.copyOf)
    }

    private func index(of identity: FileIdentity) -> Int? {
        records.firstIndex { $0.identity.isSameFile(as: identity) }
    }

    private func appendRecord(_ record: Record) {
        var record = record
        record.order = nextOrder
        nextOrder += 1
        records.append(record)
    }

    static let header = "ruv-tail-checkpoints 4"
    /// The third version's header: records without the `copy-of` field.
    static let headerWithoutCopies = "ruv-tail-checkpoints 3"
    /// The second version's header: records only, no `path` lines (the followed paths are
    /// then the records' paths).
    static let headerWithoutPaths = "ruv-tail-checkpoints 2"
    /// The first version's header: records without the content and truncation fields
    /// (read as `nil` and 0), no `path` lines.
    static let headerWithoutContent = "ruv-tail-checkpoints 1"

    /// One line per record: `device inode offset final fingerprint-hex path-hex content
    /// truncations copy-of` (`final` is `-` while unknown; an empty fingerprint or path is
    /// `-`; `content` is `-` when the file was not truncated while followed, `=` when it was
    /// and nothing of its new content has been read, else the hex of its first bytes;
    /// `copy-of` is `device-inode-truncations` of the origin of a copy, else `-`); then one
    /// line `path path-hex` per followed path, sorted.
    private func serialize() -> String {
        var text = TailCheckpointStore.header + "\n"
        for r in records {
            let copyOf: String = r.copyOf.map { "\($0.device)-\($0.inode)-\($0.truncations)" } ?? "-"
            let fields: [String] = [
                String(r.identity.device), String(r.identity.inode), String(r.offset),
                r.finalOffset.map(String.init) ?? "-",
                hex(r.identity.fingerprint), hex(Array(r.path.utf8)),
                r.content.map { $0.isEmpty ? "=" : hex($0) } ?? "-", String(r.truncations),
                copyOf,
            ]
            text += fields.joined(separator: " ") + "\n"
        }
        for path in followedPaths.sorted() { text += "path " + hex(Array(path.utf8)) + "\n" }
        return text
    }

    /// Reads ``file`` (not under the lock: only `init` calls it).
    private func load() throws {
        let fd = open(file, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            if errno == ENOENT { return }
            throw UVError(code: errno, operation: "open", target: file)
        }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            // (`withUnsafeMutableBytes` rethrows untyped: the error crosses it as a `Result`.)
            let n = try buffer.withUnsafeMutableBytes { raw in
                Result { () throws(UVError) in
                    try systemCall("read", on: file) { read(fd, raw.baseAddress, raw.count) }
                }
            }.get()
            if n == 0 { break }
            bytes.append(contentsOf: buffer[0..<n])
        }
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: true)
        guard let first = lines.first else { return }
        let fieldCount = first == TailCheckpointStore.headerWithoutContent ? 6 : first == TailCheckpointStore.header ? 9 : 8
        let hasPaths = first == TailCheckpointStore.header || first == TailCheckpointStore.headerWithoutCopies
        guard hasPaths || first == TailCheckpointStore.headerWithoutPaths || first == TailCheckpointStore.headerWithoutContent
        else {
            throw SignalError.invalidArgument("\(file): not a tail checkpoint file (first line '\(first)')")
        }
        for (number, line) in lines.enumerated().dropFirst() {
            let fields = line.split(separator: " ", omittingEmptySubsequences: false)
            if hasPaths && fields.first == "path" {
                guard fields.count == 2, let path = unhex(fields[1]) else {
                    throw SignalError.invalidArgument("\(file):\(number + 1): malformed path '\(line)'")
                }
                followedPaths.insert(String(decoding: path, as: UTF8.self))
                continue
            }
            guard fields.count == fieldCount,
                let device = UInt64(fields[0]), let inode = UInt64(fields[1]), let offset = Int64(fields[2]), offset >= 0,
                let fingerprint = unhex(fields[4]), let path = unhex(fields[5])
            else {
                throw SignalError.invalidArgument("\(file):\(number + 1): malformed checkpoint '\(line)'")
            }
            // A final offset is "-" or a byte offset: a negative or unreadable one is a corrupt
            // file (it was taken for "not finished"; found by Fuzz/ checkpoint target).
            let final: Int64?
            if fields[3] == "-" { final = nil } else {
                guard let value = Int64(fields[3]), value >= 0 else {
                    throw SignalError.invalidArgument("\(file):\(number + 1): malformed checkpoint '\(line)'")
                }
                final = value
            }
            var content: [UInt8]?
            var truncations = 0
            if fieldCount >= 8 {
                guard let count = Int(fields[7]), count >= 0,
                      let bytes = fields[6] == "-" ? [] : fields[6] == "=" ? [] : unhex(fields[6]) else {
                    throw SignalError.invalidArgument("\(file):\(number + 1): malformed checkpoint '\(line)'")
                }
                if fields[6] != "-" { content = bytes }
                truncations = count
            }
            var copyOf: TailCopyOrigin?
            if fieldCount == 9 && fields[8] != "-" {
                let parts = fields[8].split(separator: "-", omittingEmptySubsequences: false)
                guard parts.count == 3, let device = UInt64(parts[0]), let inode = UInt64(parts[1]),
                      let count = Int(parts[2]), count >= 0 else {
                    throw SignalError.invalidArgument("\(file):\(number + 1): malformed checkpoint '\(line)'")
                }
                copyOf = TailCopyOrigin(device: device, inode: inode, truncations: count)
            }
            let followed = String(decoding: path, as: UTF8.self)
            if !followed.isEmpty { followedPaths.insert(followed) }
            appendRecord(Record(
                identity: FileIdentity(device: device, inode: inode, fingerprint: fingerprint),
                path: followed, offset: offset, finalOffset: final, order: 0, content: content,
                truncations: truncations, copyOf: copyOf))
        }
    }

    /// Temporary file, `fsync`, `rename`, `fsync` of the directory.
    static func writeDurably(_ text: String, to file: String, in directory: String) throws {
        let temporary = file + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        if fd < 0 { throw UVError(code: errno, operation: "open", target: temporary) }
        var bytes = Array(text.utf8)
        var done = 0
        while done < bytes.count {
            let n: Int
            do {
                n = try bytes.withUnsafeMutableBytes { raw in
                    Result { () throws(UVError) in
                        try systemCall("write", on: temporary) { write(fd, raw.baseAddress! + done, raw.count - done) }
                    }
                }.get()
            } catch {
                close(fd)
                throw error
            }
            done += n
        }
        if fsync(fd) != 0 {
            let code = errno
            close(fd)
            throw UVError(code: code, operation: "fsync", target: temporary)
        }
        close(fd)
        if rename(temporary, file) != 0 { throw UVError(code: errno, operation: "rename", target: file) }
        // The rename itself is durable only once the directory is.
        let dirFD = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dirFD >= 0 {
            _ = fsync(dirFD)
            close(dirFD)
        }
        bytes.removeAll()
    }
}

/// Lower-case hex, `-` for nothing.
private func hex(_ bytes: [UInt8]) -> String {
    if bytes.isEmpty { return "-" }
    let digits = Array("0123456789abcdef".utf8)
    var out = [UInt8]()
    out.reserveCapacity(bytes.count * 2)
    for b in bytes {
        out.append(digits[Int(b >> 4)])
        out.append(digits[Int(b & 15)])
    }
    return String(decoding: out, as: UTF8.self)
}

/// The bytes of ``hex(_:)``'s text, or `nil` for text that is not hex.
private func unhex(_ text: Substring) -> [UInt8]? {
    if text == "-" { return [] }
    let utf8 = Array(text.utf8)
    guard utf8.count % 2 == 0 else { return nil }
    func value(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        default: return nil
        }
    }
    var out = [UInt8]()
    out.reserveCapacity(utf8.count / 2)
    var i = 0
    while i < utf8.count {
        guard let hi = value(utf8[i]), let lo = value(utf8[i + 1]) else { return nil }
        out.append(hi << 4 | lo)
        i += 2
    }
    return out
}

/// The file a copy was made of (see ``TailCheckpointStore/copyOrigin(of:)``): its device
/// and inode, and how many truncations the store had counted of it when the copied content
/// was the one it held.
public struct TailCopyOrigin: Sendable, Hashable, CustomStringConvertible {
    /// The original file's device.
    public let device: UInt64
    /// The original file's inode.
    public let inode: UInt64
    /// The original's truncation count for the copied content
    /// (``TailCheckpointStore/truncations(for:)`` while it held it).
    public let truncations: Int

    /// Creates an origin.
    ///
    /// - Parameters:
    ///   - device: the original file's device.
    ///   - inode: the original file's inode.
    ///   - truncations: its truncation count for the copied content.
    public init(device: UInt64, inode: UInt64, truncations: Int) {
        self.device = device
        self.inode = inode
        self.truncations = truncations
    }

    /// `dev 65024 ino 1234, content 2`.
    public var description: String { "dev \(device) ino \(inode), content \(truncations)" }
}

/// A file's device and inode, without its fingerprint.
private struct FileInodeKey: Hashable {
    let device: UInt64
    let inode: UInt64

    init(_ identity: FileIdentity) {
        device = identity.device
        inode = identity.inode
    }
}

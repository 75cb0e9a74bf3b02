import Glibc

// The checkpoint phase of starting a tail (`TailFollower.plan`): every file the store
// remembers of the path is resumed where its record says — the file now at the path, a
// rotated sibling found by its device and inode, or the copy copytruncate made — and what
// cannot be found any more is reported lost. Each record is one of these cases, decided in
// that order; the notices go out in the order the records are read (oldest first).

/// A directory entry as ``TailFollower/directoryEntries(_:)`` lists it.
typealias TailDirectoryEntry = (name: String, device: UInt64, inode: UInt64)

extension TailPlan {
    /// Resumes every file the store remembers of `path` that is not done yet.
    ///
    /// The record of the file now at the path only decides where that file is read from
    /// (the caller adds it, after the rotated ones); each other record is a rotated file
    /// to read first, a copy of it, or a loss.
    ///
    /// - Parameters:
    ///   - remembered: the store's records for `path`, oldest first.
    ///   - current: the file at the path now, if there is one.
    /// - Returns: where the current file is resumed, when a record describes it.
    mutating func resumeRemembered(
        _ remembered: [TailCheckpoint], current: Current?, path: String, store: TailCheckpointStore?
    ) -> Int64? {
        // Files a copy is never taken from: the current one, and those remembered (read
        // under their own records).
        let excluded = remembered.map { ($0.identity.device, $0.identity.inode) }
            + (current.map { [($0.identity.device, $0.identity.inode)] } ?? [])
        var currentOffset: Int64?
        // Read once, and only when a record is not the current file's.
        var entries: [TailDirectoryEntry]?
        for record in remembered {
            if let finalOffset = record.finalOffset, record.offset >= finalOffset { continue }
            if let current, record.describes(current.identity) {
                currentOffset = resumeCurrent(current, from: record, path: path, store: store, excluded: excluded)
                continue
            }
            if entries == nil {
                entries = TailFollower.directoryEntries(TailFollower.parentDirectory(of: TailFollower.fileLocation(of: path)))
            }
            resumeRotated(record, among: entries ?? [], path: path, store: store, excluded: excluded)
        }
        return currentOffset
    }

    /// Decides where the file now at the path is resumed from its record: the record's
    /// offset, or 0 when the file was cut while we were down (then the copy copytruncate
    /// made, if any, is read first, and the cut is reported as a truncation instead of a
    /// loss).
    ///
    /// Why the record is rekeyed: a file truncated while followed is found by its new
    /// content, and its record becomes this file's under the identity taken now (its
    /// chunks carry it).
    ///
    /// - Returns: the offset the current file is read from.
    mutating func resumeCurrent(
        _ current: Current, from record: TailCheckpoint, path: String, store: TailCheckpointStore?,
        excluded: [(UInt64, UInt64)]
    ) -> Int64 {
        if !record.identity.isSameFile(as: current.identity) { store?.rekey(record.identity, to: current.identity) }
        guard record.offset > current.size else {
            notices.append(.resumed(path: path, identity: current.identity, offset: record.offset))
            return record.offset
        }
        // What was not read yet is in copytruncate's copy, if it made one: then nothing is
        // lost, and the notice says only that the file was cut (before the copy's notices).
        let before = notices.count
        if resumeCopy(of: record, path: path, store: store, excluded: excluded) {
            notices.insert(.truncated(path: path, identity: current.identity, at: record.offset), at: before)
        } else {
            notices.append(.lost(
                path: path, identity: current.identity, range: TailByteRange(current.size, record.offset),
                reason: .truncatedWhileStopped))
        }
        // Cut while stopped: what it holds now is another content, known from now on by its
        // first bytes as they are (empty, say; they grow as the tail reads them). Kept under
        // the old content's fingerprint, the record matched the empty file only, and the
        // next start took the rewritten file for an unknown one and read it again.
        // (Looked up by the file as it is now: the record, rekeyed above or not.)
        if record.identity.fingerprint != current.identity.fingerprint {
            store?.rekey(current.identity, to: current.identity)
        }
        store?.truncated(current.identity, whileFollowed: false)
        notices.append(.resumed(path: path, identity: current.identity, offset: 0))
        return 0
    }

    /// Resumes a file rotated away while we were down: from the sibling that is still it,
    /// else from a copy of it (copytruncate; `cp` then a delete), else reports its unread
    /// rest lost. A record that found no sibling is forgotten: the copy, if any, is read
    /// under its own record.
    mutating func resumeRotated(
        _ record: TailCheckpoint, among entries: [TailDirectoryEntry], path: String, store: TailCheckpointStore?,
        excluded: [(UInt64, UInt64)]
    ) {
        if let found = openRotated(record, among: entries, path: path, store: store) {
            files.append(found)
        } else if resumeCopy(of: record, path: path, store: store, excluded: excluded) {
            // Cut (and written again) or deleted while we were down, after a copy was made:
            // its unread rest is read from there, under the copy's own record.
            store?.forget(record.identity)
        } else {
            notices.append(.lost(
                path: path, identity: record.identity, range: TailByteRange(record.offset, record.finalOffset),
                reason: .deletedBeforeRead))
            store?.forget(record.identity)
        }
    }

    /// Finds the rotated file `record` describes among the directory's `entries` (same
    /// device and inode, and the content the record knows) and opens it at the record's
    /// offset — at 0, with a loss reported, if it was cut below that offset while we were
    /// down.
    ///
    /// - Returns: the file to read before the current one, or `nil` when no entry is it.
    mutating func openRotated(
        _ record: TailCheckpoint, among entries: [TailDirectoryEntry], path: String, store: TailCheckpointStore?
    ) -> Opened? {
        for entry in entries where entry.device == record.identity.device && entry.inode == record.identity.inode {
            let siblingFD = Glibc.open(entry.name, O_RDONLY | O_CLOEXEC)
            if siblingFD < 0 { continue }
            guard case .success(let (identity, size, isDir)) = FileIdentity.of(descriptor: siblingFD),
                !isDir, record.describes(identity)
            else {
                _ = Glibc.close(siblingFD)
                continue
            }
            var offset = record.offset
            if offset > size {
                notices.append(.lost(
                    path: entry.name, identity: identity, range: TailByteRange(size, offset),
                    reason: .truncatedWhileStopped))
                store?.truncated(record.identity, whileFollowed: false)
                offset = 0
            }
            // Keep the identity the store knows (and chunks were acknowledged under), unless
            // the file is known by its content since a truncation: then the record becomes
            // this file's under the identity taken now.
            var resumed = record.identity
            if !record.identity.isSameFile(as: identity) {
                store?.rekey(record.identity, to: identity)
                resumed = identity
            }
            notices.append(.resumed(path: entry.name, identity: resumed, offset: offset))
            return Opened(fd: siblingFD, identity: resumed, path: path, offset: offset, size: size, isCurrent: false)
        }
        return nil
    }
}

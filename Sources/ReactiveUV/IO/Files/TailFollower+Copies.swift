import Glibc

// copytruncate (logrotate's option for writers that never reopen their log) copies the file
// to a sibling (`app.log.1`, `app.log-20260101`) and then cuts it in place. The bytes a tail
// had not read yet when the file was cut are in that copy, from the same offset on: the copy
// starts with the same bytes. A truncation seen while following reads them from there
// (`recoverFromCopy`); so does a tail started after a truncation made while it was stopped
// (`TailFollower.plan`), where they used to be reported lost.

/// A sibling of a followed file that holds a copy of a content the tail was reading.
struct TailCopy {
    /// Open, read-only; the caller owns it.
    let fd: Int32
    let identity: FileIdentity
    let size: Int64
    /// Its full path.
    let name: String
}

extension TailFollower {
    /// Finds, in `directory`, a file named like `basename` with a suffix (not a compressed
    /// one) whose first bytes are `head` and that is longer than `offset`: the copy made of
    /// a content that started with `head`, which holds what came after `offset`.
    ///
    /// - Parameters:
    ///   - head: the content's first bytes (at most ``FileIdentity/fingerprintLength``); an
    ///     empty head tells nothing and finds nothing.
    ///   - skipping: files not to take (open readers, files already read, remembered ones).
    /// - Returns: the first such file, opened, or `nil`.
    static func findCopy(
        in directory: String, basename: String, head: [UInt8], longerThan offset: Int64,
        skipping: (FileIdentity) -> Bool
    ) -> TailCopy? {
        if head.isEmpty { return nil }
        let prefix = joined(directory, basename)
        for entry in directoryEntries(directory) where entry.name != prefix && entry.name.hasPrefix(prefix) {
            if compressedSuffixes.contains(where: { entry.name.hasSuffix($0) }) { continue }
            let fd = open(entry.name, O_RDONLY | O_CLOEXEC)
            if fd < 0 { continue }
            guard case .success(let (identity, size, isDir)) = FileIdentity.of(descriptor: fd), !isDir, size > offset,
                identity.fingerprint.count >= head.count, identity.fingerprint.starts(with: head), !skipping(identity)
            else {
                _ = Glibc.close(fd)
                continue
            }
            return TailCopy(fd: fd, identity: identity, size: size, name: entry.name)
        }
        return nil
    }
}

extension TailPlan {
    /// After finding the file `record` names cut below its position, or gone, while the
    /// tail was stopped: resumes the copy of its content (copytruncate's, or any `cp` named
    /// like the path) from the position, if there is one, as a rotated file read before
    /// the current one.
    ///
    /// - Parameters:
    ///   - excluded: devices and inodes not to take (the file now at the path, files the
    ///     store remembers: they are read under their own records).
    /// - Returns: whether a copy was found (then nothing of the content is lost).
    mutating func resumeCopy(
        of record: TailCheckpoint, path: String, store: TailCheckpointStore?, excluded: [(UInt64, UInt64)]
    ) -> Bool {
        let location = TailFollower.fileLocation(of: path)
        let head = record.content ?? record.identity.fingerprint
        guard let copy = TailFollower.findCopy(
            in: TailFollower.parentDirectory(of: location), basename: TailFollower.lastComponent(of: location),
            head: head, longerThan: record.offset,
            skipping: { identity in excluded.contains { $0 == (identity.device, identity.inode) } })
        else { return false }
        store?.register(copy.identity, path: path, offset: record.offset, copyOf: record.originOfItsContent)
        files.append(Opened(
            fd: copy.fd, identity: copy.identity, path: path, offset: record.offset, size: copy.size, isCurrent: false))
        notices.append(.resumed(path: copy.name, identity: copy.identity, offset: record.offset))
        return true
    }
}

import Glibc

/// A directory entry's file, by device and inode.
struct SiblingKey: Hashable {
    let device: UInt64
    let inode: UInt64

    init(_ info: stat) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
    }
}

/// A file's modification time, to the nanosecond: whether it was written since a look.
struct SiblingStamp: Equatable {
    let seconds: Int
    let nanoseconds: Int

    init(_ info: stat) {
        seconds = Int(info.st_mtim.tv_sec)
        nanoseconds = Int(info.st_mtim.tv_nsec)
    }
}

extension TailFollower {
    /// The regular files beside `location` whose names start with its name (its rotated
    /// siblings: `app.log.1`, `app.log-20260101`), with their modification times now.
    static func siblingStamps(ofFileAt location: String) -> [SiblingKey: SiblingStamp] {
        let directory = parentDirectory(of: location)
        let prefix = joined(directory, lastComponent(of: location))
        var stamps: [SiblingKey: SiblingStamp] = [:]
        for entry in directoryEntries(directory) where entry.name != prefix && entry.name.hasPrefix(prefix) {
            var info = stat()
            guard stat(entry.name, &info) == 0 else { continue }
            stamps[SiblingKey(info)] = SiblingStamp(info)
        }
        return stamps
    }
}

import Glibc

/// A directory entry's file, by device and inode.
struct SiblingKey: Hashable {
    let device: UInt64
    let inode: UInt64

    init(_ info: stat) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
    }

    init(device: UInt64, inode: UInt64) {
        self.device = device
        self.inode = inode
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

    /// Rotated siblings (full paths starting with `prefix`, the path's own) in the order
    /// they were at the path, oldest first. Two numbered ones (`app.log.3`, `app.log.1`) go
    /// by number, the higher the older (logrotate's and `savelog`'s scheme: a file moves
    /// up at each rotation); any other pair by modification time, then by name (dated
    /// suffixes sort by name). Time alone does not do: files written within one clock tick
    /// of the kernel's coarse file times share it.
    static func oldestFirst(_ candidates: [String], prefix: String) -> [String] {
        struct Entry {
            let name: String
            let number: Int?
            let seconds: Int
            let nanoseconds: Int
        }
        let entries = candidates.map { name -> Entry in
            let suffix = name.dropFirst(prefix.count)
            var number: Int?
            if suffix.first == ".", suffix.count > 1, suffix.count <= 10, suffix.dropFirst().allSatisfy(\.isASCII),
                suffix.dropFirst().allSatisfy(\.isNumber)
            {
                number = Int(suffix.dropFirst())
            }
            var info = stat()
            let found = stat(name, &info) == 0
            return Entry(
                name: name, number: number, seconds: found ? Int(info.st_mtim.tv_sec) : 0,
                nanoseconds: found ? Int(info.st_mtim.tv_nsec) : 0)
        }
        return entries.sorted { a, b in
            if let x = a.number, let y = b.number, x != y { return x > y }
            if (a.seconds, a.nanoseconds) != (b.seconds, b.nanoseconds) {
                return (a.seconds, a.nanoseconds) < (b.seconds, b.nanoseconds)
            }
            return a.name < b.name
        }.map(\.name)
    }
}

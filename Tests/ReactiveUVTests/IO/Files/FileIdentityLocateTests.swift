import Glibc
import Testing

@testable import ReactiveUV

/// `FileIdentity.locate(near:)` on real files: found at its path, found under a rotated
/// name when another file took the path, not found once deleted, and a file whose first
/// bytes differ from the fingerprint (an inode reused by a new file) is not taken for it.
@Suite("FileIdentity.locate")
struct FileIdentityLocateTests {
    func identity(of path: String) throws -> FileIdentity {
        let fd = open(path, O_RDONLY)
        #expect(fd >= 0)
        defer { close(fd) }
        return try FileIdentity.of(descriptor: fd).get().0
    }

    @Test func findsTheFileAtItsPathThenUnderItsRotatedNameThenNowhere() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let log = directory.file("app.log")
        writeFile(log, "2026-11-24 first line of the first file\n")
        writeFile(directory.file("other.log"), "2026-11-24 an unrelated file\n")
        let first = try identity(of: log)
        #expect(first.locate(near: log) == log)

        // Rotated by rename, a new file at the path: the old one is found by identity.
        #expect(rename(log, directory.file("app.log.1")) == 0)
        writeFile(log, "2026-11-24 first line of the second file\n")
        #expect(first.locate(near: log) == directory.file("app.log.1"))
        #expect(try identity(of: log).locate(near: log) == log)

        // Deleted: nowhere.
        #expect(unlink(directory.file("app.log.1")) == 0)
        #expect(first.locate(near: log) == nil)
    }

    @Test func aFileWithTheInodeButOtherFirstBytesIsNotThisFile() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let log = directory.file("app.log")
        writeFile(log, "2026-11-24 the file now at this inode\n")
        let now = try identity(of: log)
        // The identity an earlier file with the same inode number had (as after a rotation
        // deleted it and the inode was given to the next file made).
        let earlier = FileIdentity(device: now.device, inode: now.inode, fingerprint: Array("2026-11-23 gone\n".utf8))
        #expect(earlier.locate(near: log) == nil)
        // A fingerprint taken while the file was young (a prefix) is the same file grown.
        let young = FileIdentity(device: now.device, inode: now.inode, fingerprint: Array("2026-11-24 the".utf8))
        #expect(young.locate(near: log) == log)
    }
}

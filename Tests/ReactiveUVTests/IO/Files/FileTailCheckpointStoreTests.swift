import Glibc
import Testing

@testable import ReactiveUV

/// The checkpoint store on its own: durable save and reload in a fresh directory, identity
/// matching by fingerprint prefix, finished files dropped once acknowledged, bad state
/// files refused with an error naming the line.
@Suite("FileTailCheckpointStore")
struct FileTailCheckpointStoreTests {
    let identityA = FileIdentity(device: 7, inode: 100, fingerprint: Array("2026-11-23 first line of a\n".utf8))
    let identityB = FileIdentity(device: 7, inode: 101, fingerprint: Array("2026-11-23 first line of b\n".utf8))

    @Test func acknowledgedPositionsSurviveASaveAndAReload() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let state = directory.file("state")
        let store = try TailCheckpointStore(directory: state)
        store.register(identityA, path: "/var/log/app.log", offset: 0)
        store.register(identityB, path: "/var/log/app.log", offset: 40)
        store.acknowledge(identityA, through: 1234)
        try store.save()
        // The temporary file was renamed away.
        #expect(access(state + "/tail-checkpoints.tmp", F_OK) != 0)

        let reloaded = try TailCheckpointStore(directory: state)
        #expect(reloaded.checkpoints == [
            TailCheckpoint(identity: identityA, path: "/var/log/app.log", offset: 1234, finalOffset: nil),
            TailCheckpoint(identity: identityB, path: "/var/log/app.log", offset: 40, finalOffset: nil),
        ])
        #expect(reloaded.records(for: "/var/log/app.log").map(\.offset) == [1234, 40])
        #expect(reloaded.records(for: "/var/log/other.log").isEmpty)
    }

    @Test func aGrownFingerprintIsTheSameFileAndAReusedInodeIsNot() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try TailCheckpointStore(directory: directory.file("state"))
        let young = FileIdentity(device: 7, inode: 100, fingerprint: Array("2026-11".utf8))
        store.register(young, path: "/p", offset: 0)
        store.acknowledge(identityA, through: 99)  // the same file, its fingerprint longer now
        #expect(store.offset(for: young) == 99)
        #expect(store.checkpoints.count == 1)
        let reused = FileIdentity(device: 7, inode: 100, fingerprint: Array("another file entirely".utf8))
        #expect(store.offset(for: reused) == nil)
        #expect(!reused.isSameFile(as: identityA))
    }

    @Test func aFinishedFileIsDroppedOnceAcknowledgedToItsEnd() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try TailCheckpointStore(directory: directory.file("state"))
        store.register(identityA, path: "/p", offset: 0)
        store.finished(identityA, at: 500)
        #expect(store.checkpoints.first?.finalOffset == 500)
        store.acknowledge(identityA, through: 499)
        #expect(store.checkpoints.count == 1)
        store.acknowledge(identityA, through: 500)
        #expect(store.checkpoints.isEmpty)
    }

    @Test func savingTwiceWithoutChangesWritesOnceAndTruncationResetsTheOffset() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let state = directory.file("state")
        let store = try TailCheckpointStore(directory: state)
        store.acknowledge(identityA, through: 10)
        try store.save()
        var first = stat()
        #expect(stat(state + "/tail-checkpoints", &first) == 0)
        #expect(unlink(state + "/tail-checkpoints") == 0)
        try store.save()  // nothing changed: not written again
        #expect(access(state + "/tail-checkpoints", F_OK) != 0)
        store.truncated(identityA)
        try store.save()
        #expect(try TailCheckpointStore(directory: state).offset(for: identityA) == 0)
    }

    @Test func aForeignStateFileIsAnErrorNamingIt() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let state = directory.file("state")
        #expect(mkdir(state, 0o700) == 0)
        writeFile(state + "/tail-checkpoints", "something else\n")
        #expect(throws: SignalError.self) { try TailCheckpointStore(directory: state) }
        writeFile(state + "/tail-checkpoints", TailCheckpointStore.header + "\n1 2 x - - -\n")
        do {
            _ = try TailCheckpointStore(directory: state)
            Issue.record("a malformed line must be refused")
        } catch {
            #expect("\(error)".contains("tail-checkpoints:2"))
        }
    }

    @Test func aTruncatedFilesNewContentIsSavedAndKnowsTheFileByItsNewFirstBytes() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let state = directory.file("state")
        let store = try TailCheckpointStore(directory: state)
        store.register(identityA, path: "/p", offset: 0)
        store.acknowledge(identityA, through: 300)
        store.truncated(identityA)
        try store.save()
        // Truncated, nothing of the new content read yet: saved as such ("="), any first
        // bytes of the same inode are the file's.
        var reloaded = try TailCheckpointStore(directory: state)
        #expect(reloaded.checkpoints.first?.content == [])
        #expect(reloaded.checkpoints.first?.offset == 0)
        let rewritten = FileIdentity(device: 7, inode: 100, fingerprint: Array("2026-11-24 the new first line\n".utf8))
        #expect(!identityA.isSameFile(as: rewritten))
        #expect(reloaded.checkpoints.first?.describes(rewritten) == true)

        store.headGrew(identityA, to: Array("2026-11-24 the new".utf8))
        store.headGrew(identityA, to: Array("2026-11".utf8))  // never shrinks
        try store.save()
        reloaded = try TailCheckpointStore(directory: state)
        let record = try #require(reloaded.checkpoints.first)
        #expect(record.content == Array("2026-11-24 the new".utf8))
        #expect(record.describes(rewritten))
        #expect(record.describes(identityA), "acknowledgements still name the old identity")
        #expect(!record.describes(FileIdentity(device: 7, inode: 100, fingerprint: Array("2026-11-25 yet another".utf8))))
        #expect(!record.describes(FileIdentity(device: 7, inode: 999, fingerprint: rewritten.fingerprint)))

        // Found again by a tail: the record is the file's under its identity taken now.
        reloaded.rekey(identityA, to: rewritten)
        reloaded.acknowledge(rewritten, through: 40)
        #expect(reloaded.checkpoints == [TailCheckpoint(identity: rewritten, path: "/p", offset: 40, finalOffset: nil, truncations: 1)])
    }

    @Test func aFileFirstSeenShortIsKnownByItsFirstBytesAsTheyGrow() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let state = directory.file("state")
        let store = try TailCheckpointStore(directory: state)
        let empty = FileIdentity(device: 7, inode: 200, fingerprint: [])
        store.register(empty, path: "/young", offset: 0)
        store.acknowledge(empty, through: 12)
        // An empty fingerprint is the start of anything: before its first bytes are known,
        // any content of the inode is taken for the file.
        let other = FileIdentity(device: 7, inode: 200, fingerprint: Array("other content\n".utf8))
        #expect(store.checkpoints.first?.describes(other) == true)

        store.headGrew(empty, to: Array("0 a\n1 a\n2 a\n".utf8))
        store.headGrew(empty, to: Array("0 a\n".utf8))  // never shrinks
        store.headGrew(empty, to: Array("X a\n1 a\n2 a\n3 a\n".utf8))  // not this file's bytes: a rewrite, not growth
        try store.save()
        let reloaded = try TailCheckpointStore(directory: state)
        let record = try #require(reloaded.checkpoints.first)
        #expect(record.identity == FileIdentity(device: 7, inode: 200, fingerprint: Array("0 a\n1 a\n2 a\n".utf8)))
        #expect(!record.describes(other))
        #expect(record.describes(FileIdentity(device: 7, inode: 200, fingerprint: Array("0 a\n1 a\n2 a\n3 a\n".utf8))))
        // The follower's chunks still carry the identity taken at the first open.
        #expect(reloaded.offset(for: empty) == 12)
        reloaded.acknowledge(empty, through: 16)
        #expect(reloaded.offset(for: record.identity) == 16)
        // Past the fingerprint's length only its first bytes are kept.
        let long = Array(repeating: UInt8(ascii: "z"), count: 100)
        let fresh = FileIdentity(device: 7, inode: 300, fingerprint: [])
        reloaded.register(fresh, path: "/long", offset: 0)
        reloaded.headGrew(fresh, to: long)
        #expect(reloaded.checkpoints.last?.identity.fingerprint == Array(long.prefix(FileIdentity.fingerprintLength)))
    }

    @Test func truncationsAreCountedSavedAndCountedOnByAFileTakingAForgottenRecordsInode() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let state = directory.file("state")
        let store = try TailCheckpointStore(directory: state)
        store.register(identityA, path: "/p", offset: 0)
        #expect(store.truncations(for: identityA) == 0)
        store.truncated(identityA)
        store.acknowledge(identityA, through: 10)
        store.truncated(identityA, whileFollowed: false)
        #expect(store.truncations(for: identityA) == 2)
        #expect(store.offset(for: identityA) == 0)
        try store.save()
        let reloaded = try TailCheckpointStore(directory: state)
        #expect(reloaded.truncations(for: identityA) == 2)
        // Rewritten with other first bytes while no tail ran: the record is forgotten and
        // the file under its new identity counts on.
        reloaded.forget(identityA)
        let rewritten = FileIdentity(device: 7, inode: 100, fingerprint: Array("something else".utf8))
        reloaded.register(rewritten, path: "/p", offset: 0)
        #expect(reloaded.truncations(for: rewritten) == 3)
        reloaded.register(identityB, path: "/p", offset: 0)
        #expect(reloaded.truncations(for: identityB) == 0)
        #expect(reloaded.truncations(for: FileIdentity(device: 1, inode: 1, fingerprint: [])) == 0)
    }

    @Test func aStateFileOfTheFirstVersionIsReadWithoutContents() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let state = directory.file("state")
        #expect(mkdir(state, 0o700) == 0)
        writeFile(state + "/tail-checkpoints", TailCheckpointStore.headerWithoutContent + "\n7 100 1234 - 6162 2f70\n")
        let store = try TailCheckpointStore(directory: state)
        #expect(store.checkpoints == [
            TailCheckpoint(identity: FileIdentity(device: 7, inode: 100, fingerprint: Array("ab".utf8)), path: "/p", offset: 1234, finalOffset: nil),
        ])
    }

    /// A path stays known after its last record is dropped (its file read to its end and
    /// acknowledged), across a save and a load; a version-2 file knows its records' paths.
    @Test func aFollowedPathIsRememberedAfterItsLastRecordIsDropped() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let state = directory.file("state")
        let store = try TailCheckpointStore(directory: state)
        let file = FileIdentity(device: 7, inode: 100, fingerprint: Array("ab".utf8))
        #expect(!store.hasFollowed("/var/log/app.log"))
        store.register(file, path: "/var/log/app.log", offset: 0)
        store.finished(file, at: 10)
        store.acknowledge(file, through: 10)
        #expect(store.checkpoints.isEmpty)
        #expect(store.hasFollowed("/var/log/app.log"))
        try store.save()
        let reloaded = try TailCheckpointStore(directory: state)
        #expect(reloaded.checkpoints.isEmpty)
        #expect(reloaded.hasFollowed("/var/log/app.log"))
        #expect(!reloaded.hasFollowed("/var/log/other.log"))

        writeFile(state + "/tail-checkpoints", TailCheckpointStore.headerWithoutPaths + "\n7 100 1234 - 6162 2f70 - 0\n")
        let second = try TailCheckpointStore(directory: state)
        #expect(second.hasFollowed("/p"))
        #expect(second.checkpoints.count == 1)
    }

    /// A copy's record names its origin (device, inode, the content's truncation count)
    /// across a save and a load; a truncation of the copy, or its record taken by a new
    /// content, ends that; a version-3 file (no such field) is read, its paths too; a
    /// malformed origin is an error naming the line.
    @Test func aCopysOriginIsSavedAndEndsWithItsContent() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let state = directory.file("state")
        let store = try TailCheckpointStore(directory: state)
        store.register(identityA, path: "/var/log/app.log", offset: 0)
        store.truncated(identityA)
        store.truncated(identityA)
        let origin = try #require(store.originOfContent(of: identityA))
        #expect(origin == TailCopyOrigin(device: 7, inode: 100, truncations: 2))
        #expect(store.copyOrigin(of: identityA) == nil)
        store.register(identityB, path: "/var/log/app.log", offset: 70, copyOf: origin)
        #expect(store.copyOrigin(of: identityB) == origin)
        // A copy of the copy names the first file.
        #expect(store.originOfContent(of: identityB) == origin)
        try store.save()
        let reloaded = try TailCheckpointStore(directory: state)
        #expect(reloaded.copyOrigin(of: identityB) == origin)
        #expect(reloaded.offset(for: identityB) == 70)
        reloaded.truncated(identityB)
        #expect(reloaded.copyOrigin(of: identityB) == nil)

        writeFile(state + "/tail-checkpoints", TailCheckpointStore.headerWithoutCopies + "\n7 100 1234 - 6162 2f70 - 0\npath 2f71\n")
        let third = try TailCheckpointStore(directory: state)
        #expect(third.checkpoints.count == 1)
        #expect(third.copyOrigin(of: FileIdentity(device: 7, inode: 100, fingerprint: Array("ab".utf8))) == nil)
        #expect(third.hasFollowed("/q"))

        writeFile(state + "/tail-checkpoints", TailCheckpointStore.header + "\n7 100 1234 - 6162 2f70 - 0 7-100\n")
        #expect(throws: SignalError.invalidArgument("\(state)/tail-checkpoints:2: malformed checkpoint '7 100 1234 - 6162 2f70 - 0 7-100'")) {
            try TailCheckpointStore(directory: state)
        }
    }

    @Test func aStateDirectoryThatCannotBeMadeIsAUVError() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        #expect(throws: UVError.self) { try TailCheckpointStore(directory: directory.file("missing/state")) }
    }
}

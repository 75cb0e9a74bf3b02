import Glibc
import Testing

@testable import ReactiveUV

/// The file code's own system calls (outside libuv) go through `systemCall(_:on:_:)`: each
/// failure reaches its caller as a `UVError` naming the call and the path or descriptor,
/// provoked here with real failing calls (a descriptor opened for writing only cannot be
/// read: EBADF; a directory cannot be read: EISDIR; `/dev/full` takes no bytes: ENOSPC).
@Suite("File system call errors")
struct FileSystemCallErrorTests {
    /// A file of a few lines in `directory`, opened for writing only.
    static func writeOnlyFile(in directory: TemporaryDirectory) throws -> Int32 {
        let path = directory.file("lines")
        let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        try #require(fd >= 0)
        let text = Array("one\ntwo\nthree\n".utf8)
        try #require(text.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } == text.count)
        return fd
    }

    @Test func anIdentityOfABadDescriptorNamesFstatAndTheDescriptor() {
        guard case .failure(let error) = FileIdentity.of(descriptor: -1) else {
            Issue.record("fstat of descriptor -1 succeeded")
            return
        }
        #expect(error.description == "EBADF (bad file descriptor) during fstat on fd -1")
    }

    @Test func anIdentityWhoseFirstBytesCannotBeReadNamesReadAndTheDescriptor() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let fd = try Self.writeOnlyFile(in: directory)
        defer { close(fd) }
        guard case .failure(let error) = FileIdentity.of(descriptor: fd) else {
            Issue.record("reading a write-only descriptor succeeded")
            return
        }
        #expect(error.description == "EBADF (bad file descriptor) during read on fd \(fd)")
    }

    @Test func theStartScansReportAReadFailureWithTheDescriptor() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let fd = try Self.writeOnlyFile(in: directory)
        defer { close(fd) }
        let expected = "EBADF (bad file descriptor) during read on fd \(fd)"
        let back = TailFollower.scanBack(fd, before: 14, breaksWanted: 2, skipTrailingBreak: false)
        #expect(Self.failureText(back) == expected)
        let forward = TailFollower.scanForward(fd, size: 14, breaks: 2)
        #expect(Self.failureText(forward) == expected)
    }

    @Test func aFileReadOnAPoolThreadGivesTheNegatedErrno() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let fd = try Self.writeOnlyFile(in: directory)
        defer { close(fd) }
        let result = ArrayRead.perform(fd: fd, count: 64, offset: 0, prefix: [], split: true, withoutWaiting: false)
        #expect(result.count == -Int(EBADF))
        #expect(result.bytes.isEmpty)
        #expect(result.partialLine == nil)
    }

    @Test func aCheckpointFileThatCannotBeReadIsAnErrorNamingReadAndTheFile() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let state = directory.file("state")
        try #require(mkdir(state, 0o700) == 0)
        // The checkpoint file is a directory: `open` succeeds, `read` fails with EISDIR.
        try #require(mkdir(state + "/tail-checkpoints", 0o700) == 0)
        #expect {
            _ = try TailCheckpointStore(directory: state)
        } throws: { error in
            (error as? UVError)?.description
                == "EISDIR (illegal operation on a directory) during read on \(state)/tail-checkpoints"
        }
    }

    @Test func aSaveThatCannotWriteIsAnErrorNamingWriteAndTheTemporaryFile() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let state = directory.file("state")
        let store = try TailCheckpointStore(directory: state)
        store.register(FileIdentity(device: 1, inode: 2, fingerprint: Array("first line\n".utf8)), path: "/p", offset: 3)
        // The temporary file is `/dev/full`, which takes no bytes: `write` fails with ENOSPC.
        try #require(symlink("/dev/full", state + "/tail-checkpoints.tmp") == 0)
        #expect {
            try store.save()
        } throws: { error in
            (error as? UVError)?.description
                == "ENOSPC (no space left on device) during write on \(state)/tail-checkpoints.tmp"
        }
    }

    /// The text of `result`'s error, `nil` when it succeeded.
    static func failureText<Value>(_ result: Result<Value, UVError>) -> String? {
        guard case .failure(let error) = result else { return nil }
        return error.description
    }
}

import CSystemShims
import Glibc
import Testing

@testable import ReactiveUV

/// `systemCall(_:on:_:)`, the one wrapper the library's own system calls go through: a call
/// interrupted by a signal is made again (and then returns what it was waiting for), any
/// other failure is a `UVError` that names the call and what it was made on.
@Suite("SystemCall", .serialized)
struct SystemCallTests {
    /// The signal the interrupting test sends. SIGURG because nothing in the library or
    /// its tests uses it, and its default action is to ignore it, so one arriving after the
    /// test put the old action back does nothing.
    static let interruptingSignal = SIGURG

    @Test func aReadInterruptedByASignalIsMadeAgainAndReturnsTheDataThatArrivesLater() throws {
        var ends: [Int32] = [-1, -1]
        try #require(pipe(&ends) == 0)
        let (readEnd, writeEnd) = (ends[0], ends[1])
        defer {
            close(readEnd)
            close(writeEnd)
        }
        // A handler without SA_RESTART: the kernel then ends a blocking read the signal
        // arrives during with EINTR instead of restarting it itself.
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in }
        sigemptyset(&action.sa_mask)
        action.sa_flags = 0
        var before = sigaction()
        try #require(sigaction(Self.interruptingSignal, &action, &before) == 0)
        defer { _ = sigaction(Self.interruptingSignal, &before, nil) }

        let attempts = UnsafeAtomicInt(0)  // calls of the read the wrapper made
        let reader = UnsafeAtomicInt(0)  // the reading thread's pthread_t, once it runs
        defer {
            attempts.destroy()
            reader.destroy()
        }
        let outcome = SharedBox<Result<[UInt8], UVError>?>(nil)
        let join = startThread {
            // A new thread inherits its creator's mask: make sure the signal can reach it.
            var unblock = sigset_t()
            sigemptyset(&unblock)
            sigaddset(&unblock, SystemCallTests.interruptingSignal)
            pthread_sigmask(SIG_UNBLOCK, &unblock, nil)
            reader.store(Int(bitPattern: UInt(pthread_self())), csys_seq_cst)
            var buffer = [UInt8](repeating: 0, count: 64)
            let got = buffer.withUnsafeMutableBytes { raw in
                Result { () throws(UVError) in
                    try systemCall("read", on: describe(descriptor: readEnd)) {
                        attempts.fetchAdd(1, csys_seq_cst)
                        return read(readEnd, raw.baseAddress, raw.count)
                    }
                }
            }
            outcome.value = got.map { Array(buffer[..<$0]) }
        }

        // Signal the reader until the wrapper has called read a second time: only an EINTR
        // makes it do that (a signal that lands before the thread is inside read interrupts
        // nothing, so keep sending). Bounded generously for a loaded machine.
        var waited = 0
        while reader.load(csys_seq_cst) == 0 && waited < 30_000 {
            usleep(1_000)
            waited += 1
        }
        let thread = pthread_t(UInt(bitPattern: reader.load(csys_seq_cst)))
        try #require(thread != 0, "the reading thread never started")
        waited = 0
        while attempts.load(csys_seq_cst) < 2 && waited < 30_000 {
            pthread_kill(thread, Self.interruptingSignal)
            usleep(1_000)
            waited += 1
        }
        let interrupted = attempts.load(csys_seq_cst) >= 2

        // Now the data the read was waiting for.
        let line = Array("after the signal\n".utf8)
        let written = line.withUnsafeBytes { write(writeEnd, $0.baseAddress, $0.count) }
        join()

        #expect(interrupted, "no read was interrupted within 30 s")
        #expect(written == line.count)
        #expect(attempts.load(csys_seq_cst) >= 2)
        #expect(outcome.value == .success(line))
    }

    @Test func aFailureIsAUVErrorNamingTheCallAndThePath() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let missing = directory.file("missing")
        #expect(throws: UVError.noSuchFile) { try systemCall("open", on: missing) { open(missing, O_RDONLY) } }
        do {
            try systemCall("open", on: missing) { open(missing, O_RDONLY) }
            Issue.record("opening a missing file succeeded")
        } catch {
            #expect(error.operation == "open")
            #expect(error.target == missing)
            #expect(error.description == "ENOENT (no such file or directory) during open on \(missing)")
        }
    }

    @Test func aFailureOnADescriptorNamesTheDescriptor() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        // Reading a directory's descriptor fails with EISDIR: a real failure of a real call.
        let fd = open(directory.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        try #require(fd >= 0)
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 16)
        let got = buffer.withUnsafeMutableBytes { raw in
            Result { () throws(UVError) in
                try systemCall("read", on: describe(descriptor: fd)) { pread(fd, raw.baseAddress, raw.count, 0) }
            }
        }
        guard case .failure(let error) = got else {
            Issue.record("reading a directory succeeded: \(got)")
            return
        }
        #expect(error.name == "EISDIR")
        #expect(error.description == "EISDIR (illegal operation on a directory) during read on fd \(fd)")
    }

    @Test func aSuccessfulCallReturnsItsResultAndNeverFormatsItsTarget() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("written")
        var formatted = 0
        func target() -> String {
            formatted += 1
            return path
        }
        let fd = try systemCall("open", on: target()) { open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600) }
        defer { close(fd) }
        let bytes = Array("twelve bytes".utf8)
        let count = try systemCall("write", on: target()) { bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } }
        #expect(count == 12)
        #expect(formatted == 0)
        #expect(throws: UVError.self) { try systemCall("open", on: target()) { open(path, O_WRONLY | O_CREAT | O_EXCL) } }
        #expect(formatted == 1, "the failing call names its target once")
    }
}

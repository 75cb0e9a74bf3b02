import CLibUV
import CSystemShims
import Glibc
import XCTest

@testable import ReactiveUV

/// What `File.follow` does when the path names something it cannot follow for now (issue
/// 30 items 2 and 4, issue 32): a directory, a FIFO, a socket or a device, or a file it may
/// not read. As GNU `tail -F` does, it says so once (`TailNotice.unfollowable`) and waits;
/// once a readable regular file is there, it is read from its start. A FIFO is never opened
/// in a way that blocks (a watchdog opens its writing end if a reader is stuck in `open`,
/// so a regression fails instead of hanging). Each case at the start and mid-stream; real
/// files in a fresh directory, the real loop, all handles closed at the end.
final class FileTailUnfollowableTests: XCTestCase {
    var directory: TemporaryDirectory!

    override func setUpWithError() throws { directory = try TemporaryDirectory() }
    override func tearDown() { directory.remove() }

    /// Lines and notices of one follow, recorded on the loop thread.
    final class Recorder: @unchecked Sendable {
        // Thread-safety: loop-thread only (the test thread runs the loop).
        var lines: [String] = []
        var notices: [TailNotice] = []
        var error: (any Error)?

        var unfollowable: [String] {
            notices.compactMap { if case .unfollowable(_, let reason) = $0 { return reason } else { return nil } }
        }
    }

    func follow(_ path: String, on loop: EventLoop) -> (Recorder, Disposable) {
        let recorder = Recorder()
        var options = TailOptions()
        options.pollInterval = 0.05
        options.rotationQuietPeriod = 0.3
        let subscription = File.tail(path, from: .beginning, options: options, notices: { recorder.notices.append($0) }, on: loop)
            .subscribe(next: { recorder.lines.append($0) }, error: { recorder.error = $0 })
        return (recorder, subscription)
    }

    /// The kinds of things put at the path, each made by `make` and named in the notice.
    enum Kind: CaseIterable {
        case directory, fifo, socket, device

        var reason: String {
            switch self {
            case .directory: return "is a directory"
            case .fifo: return "is a FIFO"
            case .socket: return "is a socket"
            case .device: return "is a character device"
            }
        }

        /// Puts one at `path` (which must be free); returns what to close when removing it.
        func make(at path: String) -> Int32 {
            switch self {
            case .directory:
                XCTAssertEqual(mkdir(path, 0o755), 0)
            case .fifo:
                XCTAssertEqual(mkfifo(path, 0o644), 0)
            case .socket:
                let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
                XCTAssertGreaterThanOrEqual(fd, 0)
                var address = sockaddr_un()
                address.sun_family = sa_family_t(AF_UNIX)
                let bytes = Array(path.utf8)
                XCTAssertLessThan(bytes.count, MemoryLayout.size(ofValue: address.sun_path))
                withUnsafeMutableBytes(of: &address.sun_path) { raw in
                    for (i, byte) in bytes.enumerated() { raw[i] = byte }
                }
                let rc = withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                    }
                }
                XCTAssertEqual(rc, 0, "bind: \(errno)")
                return fd
            case .device:
                // A link to /dev/null: the path names a character device (`stat` follows it)
                // without needing CAP_MKNOD.
                XCTAssertEqual(symlink("/dev/null", path), 0)
            }
            return -1
        }

        func remove(at path: String, closing fd: Int32) {
            if fd >= 0 { close(fd) }
            if self == .directory { XCTAssertEqual(rmdir(path), 0) } else { XCTAssertEqual(unlink(path), 0) }
        }
    }

    /// Opens the FIFO's writing end after `seconds` unless `done`: that succeeds only while
    /// some reader is blocked in `open` (it also unblocks it, so the test fails, not hangs).
    func fifoWatchdog(_ path: String, done: Latch, blocked: Locked<Bool>) -> TestThread {
        TestThread {
            if done.wait(timeout: 10) { return }
            let fd = open(path, O_WRONLY | O_NONBLOCK)
            if fd >= 0 {
                blocked.withLock { $0 = true }
                close(fd)
            }
        }
    }

    func testSomethingNotARegularFileAtTheStartIsWaitedOn() throws {
        for kind in Kind.allCases {
            let loop = try EventLoop()
            let path = directory.file("start-\(kind).log")
            let fd = kind.make(at: path)
            let done = Latch()
            let blocked = Locked(false)
            let watchdog = kind == .fifo ? fifoWatchdog(path, done: done, blocked: blocked) : nil
            let (recorder, subscription) = follow(path, on: loop)
            XCTAssertTrue(loop.run(until: { !recorder.unfollowable.isEmpty || recorder.error != nil }, timeout: 60), "\(kind)")
            done.countDown()
            watchdog?.join()
            XCTAssertFalse(blocked.value, "\(kind): an open blocked the loop")
            XCTAssertNil(recorder.error, "\(kind)")
            XCTAssertEqual(recorder.unfollowable, [kind.reason], "\(kind)")

            // Replaced by a regular file: read from its start.
            kind.remove(at: path, closing: fd)
            writeFile(path, "a\nb\n")
            XCTAssertTrue(loop.run(until: { recorder.lines.count >= 2 || recorder.error != nil }, timeout: 60), "\(kind)")
            XCTAssertNil(recorder.error, "\(kind)")
            XCTAssertEqual(recorder.lines, ["a", "b"], "\(kind)")
            XCTAssertEqual(recorder.unfollowable, [kind.reason], "said once: \(recorder.notices)")
            subscription.dispose()
            assertLoopCleanAndClose(loop)
        }
    }

    func testSomethingNotARegularFileMidStreamIsWaitedOn() throws {
        for kind in Kind.allCases {
            let loop = try EventLoop()
            let path = directory.file("mid-\(kind).log")
            writeFile(path, "one\n")
            let (recorder, subscription) = follow(path, on: loop)
            XCTAssertTrue(loop.run(until: { recorder.lines.count >= 1 || recorder.error != nil }, timeout: 60), "\(kind)")

            // The file goes; something else takes the name (a FIFO by rename over it, at once).
            let fd: Int32
            if kind == .fifo {
                let aside = directory.file("aside-fifo")
                fd = kind.make(at: aside)
                XCTAssertEqual(rename(aside, path), 0)
            } else {
                XCTAssertEqual(unlink(path), 0)
                fd = kind.make(at: path)
            }
            let done = Latch()
            let blocked = Locked(false)
            let watchdog = kind == .fifo ? fifoWatchdog(path, done: done, blocked: blocked) : nil
            XCTAssertTrue(loop.run(until: { !recorder.unfollowable.isEmpty || recorder.error != nil }, timeout: 60), "\(kind)")
            done.countDown()
            watchdog?.join()
            XCTAssertFalse(blocked.value, "\(kind): an open blocked the loop")
            XCTAssertNil(recorder.error, "\(kind)")

            kind.remove(at: path, closing: fd)
            writeFile(path, "two\nthree\n")
            XCTAssertTrue(loop.run(until: { recorder.lines.count >= 3 || recorder.error != nil }, timeout: 60), "\(kind)")
            XCTAssertNil(recorder.error, "\(kind)")
            XCTAssertEqual(recorder.lines, ["one", "two", "three"], "\(kind)")
            XCTAssertEqual(recorder.unfollowable, [kind.reason], "said once: \(recorder.notices)")
            subscription.dispose()
            assertLoopCleanAndClose(loop)
        }
    }

    // MARK: - Permission

    /// Runs `body` with this thread's file-system user id set to `nobody`, which drops
    /// root's CAP_DAC_OVERRIDE for this thread only (capabilities(7): a change of the
    /// fsuid from 0 clears the file-system capabilities; back to 0 restores them). The
    /// loop runs on this thread, so its `stat` and `open` see permissions as a plain user
    /// does, while the test's other threads (and libuv's pool) stay root.
    func asNobody(_ body: () throws -> Void) throws {
        // Not root: permissions already apply (the file is made 0000 instead).
        if getuid() != 0 { return try body() }
        typealias SetFSUID = @convention(c) (UInt32) -> Int32
        // glibc's RTLD_DEFAULT is a null handle.
        guard let symbol = dlsym(nil, "setfsuid") else { throw XCTSkip("setfsuid not found") }
        let setfsuid = unsafeBitCast(symbol, to: SetFSUID.self)
        let before = setfsuid(65534)
        defer { _ = setfsuid(UInt32(bitPattern: before)) }
        try body()
    }

    /// A file of 200 lines at the path, created 0600 (root's) while the loop's thread acts
    /// as nobody: a notice, then, once it is made readable 2 s later, every line.
    func checkUnreadableThenReadable(atStart: Bool) throws {
        // Writable by nobody too: the loop's thread renames and creates files in it.
        XCTAssertEqual(chmod(directory.path, 0o777), 0)
        let loop = try EventLoop()
        let path = directory.file(atStart ? "secret-start.log" : "secret-mid.log")
        let content = (0..<200).map { "\($0) secret" }
        let unreadable = directory.file("unreadable")
        writeFile(unreadable, content.map { $0 + "\n" }.joined())
        // 0600: unreadable to nobody (root's tests); 0000 for a plain user, who owns it.
        XCTAssertEqual(chmod(unreadable, getuid() == 0 ? 0o600 : 0), 0)
        // Made readable 2 s after the notice, by a thread started before this one drops
        // root (a thread inherits its creator's file-system user id).
        let noticed = Latch()
        let chmodded = Locked<Int32>(-1)
        let chmodder = TestThread {
            guard noticed.wait(timeout: 120) else { return }
            usleep(2_000_000)
            chmodded.withLock { $0 = chmod(path, 0o644) }
        }
        defer {
            noticed.countDown()
            chmodder.join()
        }
        try asNobody {
            var recorder: Recorder
            let subscription: Disposable
            if atStart {
                XCTAssertEqual(rename(unreadable, path), 0)
                (recorder, subscription) = follow(path, on: loop)
            } else {
                writeFile(path, "before\n")
                XCTAssertEqual(chmod(path, 0o644), 0)
                (recorder, subscription) = follow(path, on: loop)
                XCTAssertTrue(loop.run(until: { recorder.lines.count >= 1 || recorder.error != nil }, timeout: 60))
                XCTAssertEqual(rename(unreadable, path), 0)
            }
            XCTAssertTrue(loop.run(until: { !recorder.unfollowable.isEmpty || recorder.error != nil }, timeout: 60))
            XCTAssertNil(recorder.error)
            XCTAssertEqual(recorder.unfollowable, ["cannot be read (EACCES: permission denied)"])
            noticed.countDown()
            let expected = (atStart ? [] : ["before"]) + content
            XCTAssertTrue(loop.run(until: { recorder.lines.count >= expected.count || recorder.error != nil }, timeout: 60),
                          "\(recorder.lines.count) lines; notices \(recorder.notices)")
            XCTAssertEqual(chmodded.value, 0, "chmod by the file's owner")
            XCTAssertNil(recorder.error)
            XCTAssertEqual(recorder.lines, expected)
            XCTAssertEqual(recorder.unfollowable.count, 1, "\(recorder.notices)")
            subscription.dispose()
        }
        assertLoopCleanAndClose(loop)
    }

    func testAFileUnreadableAtTheStartIsReadOnceReadable() throws {
        try checkUnreadableThenReadable(atStart: true)
    }

    func testAFileRotatedInUnreadableIsReadOnceReadable() throws {
        try checkUnreadableThenReadable(atStart: false)
    }
}

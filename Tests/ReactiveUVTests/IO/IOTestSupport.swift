import CLibUV
import CSystemShims
import Glibc
import XCTest

@testable import ReactiveUV

// Helpers for the IO tests: a fresh temporary directory per test, plain POSIX file
// writes (the writers a tailer meets in practice), an event recorder that other threads
// can wait on, and the end-of-test check that a loop has no handles of ours left.

/// A directory made with `mkdtemp`, removed with everything in it by `remove()`.
final class TemporaryDirectory {
    let path: String

    init() throws {
        var template = Array("/tmp/ruv-io-XXXXXX".utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw UVError(code: errno, operation: "mkdtemp")
        }
        path = String(cString: made)
    }

    func file(_ name: String) -> String { path + "/" + name }

    func remove() { TemporaryDirectory.removeTree(path) }

    /// `rm -rf` with opendir/unlink/rmdir.
    static func removeTree(_ path: String) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        if info.st_mode & S_IFMT == S_IFDIR {
            if let dir = opendir(path) {
                var names: [String] = []
                while let entry = readdir(dir) {
                    let name = withUnsafePointer(to: &entry.pointee.d_name) {
                        $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
                    }
                    if name != "." && name != ".." { names.append(name) }
                }
                closedir(dir)
                for name in names { removeTree(path + "/" + name) }
            }
            rmdir(path)
        } else {
            unlink(path)
        }
    }
}

/// Writes `bytes` to `fd` completely (write(2) may write less than asked).
func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) {
    var done = 0
    while done < bytes.count {
        let n = write(fd, bytes.baseAddress! + done, bytes.count - done)
        if n < 0 {
            if errno == EINTR { continue }
            fatalError("write failed: \(errno)")
        }
        done += n
    }
}

func writeAll(_ fd: Int32, _ text: String) {
    var text = text
    text.withUTF8 { writeAll(fd, UnsafeRawBufferPointer($0)) }
}

/// Creates (or replaces) `path` with `contents`.
func writeFile(_ path: String, _ contents: [UInt8]) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    precondition(fd >= 0, "open \(path) failed: \(errno)")
    contents.withUnsafeBytes { writeAll(fd, $0) }
    close(fd)
}

func writeFile(_ path: String, _ contents: String) { writeFile(path, Array(contents.utf8)) }

/// Appends `text` to `path` (creating it), as a logging process would.
func append(_ path: String, _ text: String) {
    let fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0o644)
    precondition(fd >= 0, "open \(path) failed: \(errno)")
    writeAll(fd, text)
    close(fd)
}

/// Records a signal's events from any thread; tests wait on it with a bounded wait.
final class EventRecorder<Value>: @unchecked Sendable {
    // Thread-safety: `condition` guards `storage`, `onLoopThread` and `valuesRecorded`.
    private let condition = ConditionLock()
    private var storage: [Event<Value>] = []
    private var onLoopThread: [Bool] = []
    /// How many of `storage` are values: kept as they come, because tests poll it after
    /// every loop turn and counting a long recording each time would cost more than the
    /// tailing under test.
    private var valuesRecorded = 0
    private let loop: EventLoop?

    /// - Parameter loop: when given, each event also records whether it arrived on that
    ///   loop's thread.
    init(loop: EventLoop? = nil) { self.loop = loop }

    func record(_ event: Event<Value>) {
        let onLoop = loop?.isCurrentThread ?? true
        condition.lock()
        storage.append(event)
        onLoopThread.append(onLoop)
        if event.value != nil { valuesRecorded += 1 }
        condition.signal()  // a broadcast
        condition.unlock()
    }

    var events: [Event<Value>] {
        condition.lock()
        defer { condition.unlock() }
        return storage
    }

    var values: [Value] { events.compactMap(\.value) }
    var count: Int { events.count }
    var valueCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return valuesRecorded
    }
    var terminated: Bool { events.last?.isTerminating ?? false }
    var error: (any Error)? { events.last?.error }
    var allOnLoopThread: Bool {
        condition.lock()
        defer { condition.unlock() }
        return !onLoopThread.contains(false)
    }

    /// Blocks the calling thread (not a loop thread) until `predicate` holds or time runs out.
    func wait(timeout seconds: Double = 60, until predicate: ([Event<Value>]) -> Bool) -> Bool {
        let deadline = csys_monotonic_ns() + UInt64(seconds * 1e9)
        condition.lock()
        defer { condition.unlock() }
        while !predicate(storage) {
            let now = csys_monotonic_ns()
            if now >= deadline { return false }
            _ = condition.wait(nanoseconds: min(deadline - now, 50_000_000))
        }
        return true
    }

    /// Subscribes `signal`, recording everything.
    func subscribe(_ signal: Signal<Value>) -> Disposable {
        signal.subscribe(
            next: { self.record(.next($0)) },
            error: { self.record(.error($0)) },
            completed: { self.record(.completed) })
    }
}

/// The handles and registered resources of a loop that are not closing, excluding the
/// loop's own wake-up and timer-order handles.
func openUserHandles(_ loop: EventLoop) -> Int {
    var count = 0
    withUnsafeMutablePointer(to: &count) { counter in
        uv_walk(loop.uvLoop, { handle, arg in
            guard let handle, let arg, uv_is_closing(handle) == 0 else { return }
            arg.assumingMemoryBound(to: Int.self).pointee += 1
        }, counter)
    }
    // The async (execute) and prepare (timer order) handles belong to the loop itself.
    return count - 2
}

/// Ends a test that used its own loop: runs it until every resource of ours has been
/// unregistered (their close callbacks ran), checks no user handle is left, and closes it
/// (`uv_loop_close` fails with EBUSY while any handle or request remains).
func assertLoopCleanAndClose(_ loop: EventLoop, file: StaticString = #filePath, line: UInt = #line) {
    let unregistered = loop.run(until: { loop.resources.isEmpty }, timeout: 60)
    XCTAssertTrue(unregistered, "resources left: \(loop.resources.count)", file: file, line: line)
    // Outside run(until:), whose own deadline timer is closing by now.
    XCTAssertEqual(openUserHandles(loop), 0, "handles left open", file: file, line: line)
    XCTAssertNoThrow(try loop.close(), "uv_loop_close must succeed: all handles closed", file: file, line: line)
}

/// For tests on the shared main loop: how many of our IO resources are registered there.
func mainLoopIOResources() -> Int {
    EventLoop.main.resources.values.filter { isIOResource($0) }.count
}

/// For tests on a pool loop (another thread): waits until none of our IO resources is
/// registered there, asking the loop itself (its registry is loop-thread state).
func waitUntilNoIOResources(on loop: EventLoop, timeout seconds: Double = 60) -> Bool {
    let deadline = csys_monotonic_ns() + UInt64(seconds * 1e9)
    while csys_monotonic_ns() < deadline {
        let answer = Locked<Bool?>(nil)
        let answered = Latch()
        loop.execute {
            answer.withLock { $0 = loop.resources.values.contains { isIOResource($0) } }
            answered.countDown()
        }
        if answered.wait(timeout: 10), answer.value == false { return true }
        usleep(10_000)
    }
    return false
}

func isIOResource(_ resource: any LoopResource) -> Bool {
    if let handle = resource as? UVHandleCore {
        return !(handle.owner is LoopTimer)
    }
    return resource is TailFollower || resource is FileReader || resource is DNSResolver
}

/// The decimal number a test line starts with ("123 filler" → 123).
func lineNumber(_ line: String) -> Int? {
    var value = 0
    var digits = 0
    for byte in line.utf8 {
        guard byte >= 48 && byte <= 57 else { break }
        value = value * 10 + Int(byte - 48)
        digits += 1
    }
    return digits > 0 ? value : nil
}

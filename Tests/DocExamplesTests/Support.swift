import CLibUV
import Glibc
import XCTest

@testable import ReactiveUV

// Helpers for the documentation's examples: a recorder of printed lines, bounded waits on
// the main loop (the examples use the default loop, which is the main loop on XCTest's
// main thread), a fresh temporary directory, and the all-handles-closed check. The main
// loop cannot be closed, so the check is that it holds no more handles and IO objects than
// before the example ran: every handle the example opened has closed (its close callback
// ran, so its memory is freed).

/// Lines an example printed, in order. Examples take `print` as a parameter so that their
/// bodies are the documentation's code, character for character.
final class Printed: @unchecked Sendable {
    // Thread-safety: `lock` guards `storage` (examples print on the main loop's thread; the
    // test reads on the same thread, the lock only makes that independent of the example).
    private let lock = NSLock()
    private var storage: [String] = []

    func print(_ line: String) {
        lock.lock()
        storage.append(line)
        lock.unlock()
    }

    /// Swift's `print(_:separator:terminator:)` with its defaults: the items' descriptions
    /// joined by spaces, for examples that print several items at once.
    func printItems(_ items: Any...) {
        print(items.map { String(describing: $0) }.joined(separator: " "))
    }

    var lines: [String] {
        lock.lock()
        defer { lock.unlock() }
        return storage
    }
}

/// Runs the main loop until `condition` holds or `seconds` pass; returns whether it held.
func runMainLoop(timeout seconds: Double = 30, until condition: () -> Bool) -> Bool {
    var deadline = timespec()
    clock_gettime(CLOCK_MONOTONIC, &deadline)
    let end = Double(deadline.tv_sec) + Double(deadline.tv_nsec) / 1e9 + seconds
    while true {
        if EventLoop.main.run(until: condition, timeout: 0.05) { return true }
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        if Double(now.tv_sec) + Double(now.tv_nsec) / 1e9 >= end { return condition() }
    }
}

/// Handles on `loop` other than the loop's own two (its wake-up and prepare handles),
/// closing or not: a handle leaves `uv_walk` only once its close callback ran.
func userHandleCount(_ loop: EventLoop) -> Int {
    var count = 0
    let own: Set<UnsafeMutableRawPointer> = [UnsafeMutableRawPointer(loop.asyncHandle), UnsafeMutableRawPointer(loop.prepareHandle)]
    withUnsafeMutablePointer(to: &count) { counter in
        var context = (counter, own)
        withUnsafeMutablePointer(to: &context) { context in
            uv_walk(loop.uvLoop, { handle, arg in
                guard let handle, let arg else { return }
                let context = arg.assumingMemoryBound(to: (UnsafeMutablePointer<Int>, Set<UnsafeMutableRawPointer>).self)
                if !context.pointee.1.contains(UnsafeMutableRawPointer(handle)) { context.pointee.0.pointee += 1 }
            }, context)
        }
    }
    return count
}

/// What the main loop holds now: handles and registered IO objects.
struct MainLoopHoldings: Equatable {
    let handles: Int
    let resources: Int

    static var now: MainLoopHoldings {
        MainLoopHoldings(handles: userHandleCount(EventLoop.main), resources: EventLoop.main.resources.count)
    }
}

/// Runs the main loop without blocking until `condition` holds or `seconds` pass. For
/// conditions on the loop's handles: `run(until:timeout:)` keeps a deadline timer of its
/// own while it runs, which `uv_walk` would count.
func pollMainLoop(timeout seconds: Double = 10, until condition: () -> Bool) -> Bool {
    var start = timespec()
    clock_gettime(CLOCK_MONOTONIC, &start)
    while true {
        if condition() { return true }
        _ = EventLoop.main.runNoWait()
        if condition() { return true }
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        if Double(now.tv_sec - start.tv_sec) + Double(now.tv_nsec - start.tv_nsec) / 1e9 >= seconds { return false }
        usleep(1000)
    }
}

/// The all-handles-closed check for the main loop: runs it until it holds no more than
/// `before` (every handle an example opened has closed), bounded by `timeout`.
func assertMainLoopHandlesClosed(
    since before: MainLoopHoldings, timeout: Double = 10, file: StaticString = #filePath, line: UInt = #line
) {
    let closed = pollMainLoop(timeout: timeout) {
        let now = MainLoopHoldings.now
        return now.handles <= before.handles && now.resources <= before.resources
    }
    XCTAssertTrue(closed, "main loop holds \(MainLoopHoldings.now), held \(before) before the example", file: file, line: line)
}

/// A directory made with `mkdtemp`, removed with everything in it by `remove()`.
final class TemporaryDirectory {
    let path: String

    init() throws {
        var template = Array("/tmp/ruv-docs-XXXXXX".utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw UVError(code: errno, operation: "mkdtemp")
        }
        path = String(cString: made)
    }

    func file(_ name: String) -> String { path + "/" + name }

    /// `rm -rf` of the directory (it holds only files and directories the test made).
    func remove() {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/rm")
        process.arguments = ["-rf", path]
        try? process.run()
        process.waitUntilExit()
    }
}

/// Appends `text` to `path` (creating it), as a logging process would: one `write(2)`.
func append(_ path: String, _ text: String) {
    let fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0o644)
    precondition(fd >= 0, "open \(path) failed: \(errno)")
    let bytes = Array(text.utf8)
    let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    precondition(written == bytes.count, "write \(path) failed: \(errno)")
    close(fd)
}

/// Stops the main loop after `seconds` unless ``finish()`` came first: a bound on an
/// example that calls `EventLoop.main.run()` and must stop the loop itself.
final class Watchdog: @unchecked Sendable {
    // Thread-safety: `lock` guards `finished` and `fired`.
    private let lock = NSLock()
    private var finished = false
    private var fired = false

    init(seconds: UInt32) {
        Thread.detachNewThread { [self] in
            sleep(seconds)
            lock.lock()
            let stop = !finished
            if stop { fired = true }
            lock.unlock()
            if stop { EventLoop.main.stop() }
        }
    }

    /// Marks the guarded work done; returns whether the watchdog had to stop the loop.
    func finish() -> Bool {
        lock.lock()
        defer { lock.unlock() }
        finished = true
        return fired
    }
}

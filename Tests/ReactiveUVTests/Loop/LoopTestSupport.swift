import CSystemShims
import Glibc
import XCTest

@testable import ReactiveUV

// Small helpers for tests that involve threads and loops: plain pthreads (no Foundation
// threads), a locked box, a latch, and a bounded wait that keeps the main loop running.

/// A value guarded by a pthread mutex, shared between threads in tests.
final class Locked<Value>: @unchecked Sendable {
    // Thread-safety: `mutex` guards `storage`.
    private let mutex = csys_mutex_create(false)!
    private var storage: Value

    init(_ value: Value) { storage = value }
    deinit { csys_mutex_destroy(mutex) }

    func withLock<R>(_ body: (inout Value) -> R) -> R {
        csys_mutex_lock(mutex)
        defer { csys_mutex_unlock(mutex) }
        return body(&storage)
    }

    var value: Value { withLock { $0 } }
}

/// A box for state confined to one thread (a loop's), passed through `@Sendable` closures.
final class Confined<Value>: @unchecked Sendable {
    var value: Value
    init(_ value: Value) { self.value = value }
}

/// A joinable pthread running a closure.
final class TestThread: @unchecked Sendable {
    private final class Body {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }

    private var thread = pthread_t()

    init(_ body: @escaping @Sendable () -> Void) {
        let context = Unmanaged.passRetained(Body(body)).toOpaque()
        let rc = pthread_create(&thread, nil, { context in
            Unmanaged<Body>.fromOpaque(context!).takeRetainedValue().run()
            return nil
        }, context)
        precondition(rc == 0, "pthread_create failed: \(rc)")
    }

    func join() { pthread_join(thread, nil) }
}

/// Counts down to zero; waiters block on a monotonic condition with a timeout.
final class Latch: @unchecked Sendable {
    // Thread-safety: `condition` guards `count`.
    private let condition = ConditionLock()
    private var count: Int

    init(_ count: Int = 1) { self.count = count }

    func countDown() {
        condition.lock()
        count -= 1
        if count <= 0 { condition.signal() }
        condition.unlock()
    }

    var isOpen: Bool {
        condition.lock()
        defer { condition.unlock() }
        return count <= 0
    }

    /// Waits until the count reaches zero; false on timeout.
    func wait(timeout seconds: Double) -> Bool {
        let deadline = csys_monotonic_ns() + UInt64(seconds * 1e9)
        condition.lock()
        defer { condition.unlock() }
        while count > 0 {
            let now = csys_monotonic_ns()
            if now >= deadline { return false }
            _ = condition.wait(nanoseconds: deadline - now)
        }
        return true
    }
}

/// Runs the main loop (the test's thread is the main thread) until `condition` holds or
/// `seconds` pass. Runs it in short slices, so state changed by other threads without
/// waking the main loop is still noticed promptly.
@discardableResult
func runMainLoop(timeout seconds: Double = 30, until condition: () -> Bool) -> Bool {
    let deadline = csys_monotonic_ns() + UInt64(seconds * 1e9)
    while csys_monotonic_ns() < deadline {
        if EventLoop.main.run(until: condition, timeout: 0.01) { return true }
    }
    return condition()
}

/// Runs the main loop for `seconds`, whatever happens.
func runMainLoop(for seconds: Double) {
    _ = EventLoop.main.run(until: { false }, timeout: seconds)
}

/// A stop-the-loop-if-the-test-hangs guard for tests that call `run()`.
final class Watchdog: @unchecked Sendable {
    private let done = Latch()
    private let fired = Locked(false)
    private var thread: TestThread?

    init(loop: EventLoop, seconds: Double = 30) {
        thread = TestThread { [done, fired] in
            if !done.wait(timeout: seconds) {
                fired.withLock { $0 = true }
                loop.stop()
            }
        }
    }

    /// Ends the watch; returns whether the watchdog had to stop the loop.
    func finish() -> Bool {
        done.countDown()
        thread?.join()
        return fired.value
    }
}

/// A deterministic random number generator (SplitMix64), so failures reproduce.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

import CSystemShims

// The pieces of the "dispose from one thread while another delivers" tests
// (ConcurrencyTests, SubjectFanOutDeliveryTests): a sender that never pauses, a watch
// that counts deliveries begun after `dispose()` returned, and a capture to see released.

/// What a callback captures, watched through a weak reference: its release is what a test
/// checks, and a callback that reads it on every call turns a release under a running
/// callback into a use after free (the ASan lane).
final class Captured: @unchecked Sendable {
    let name: String
    init(_ name: String) { self.name = name }
}

/// Counts a subscriber's deliveries, and the ones that began after the test said
/// `dispose()` had returned (there must be none).
final class DeliveryWatch: @unchecked Sendable {
    private let disposeReturned = SharedBox(csys_atomic_bool(value: false))
    private let receivedCount = SharedBox(csys_atomic_int(value: 0))
    private let lateCount = SharedBox(csys_atomic_int(value: 0))

    /// Call from the subscriber's callback, once per delivery.
    func delivered() {
        if csys_atomic_bool_load(&disposeReturned.value, csys_acquire) {
            csys_atomic_int_fetch_add(&lateCount.value, 1, csys_relaxed)
        }
        csys_atomic_int_fetch_add(&receivedCount.value, 1, csys_relaxed)
    }

    /// Call right after `dispose()` returned.
    func disposeHasReturned() { csys_atomic_bool_store(&disposeReturned.value, true, csys_release) }

    /// Deliveries so far.
    var received: Int64 { csys_atomic_int_load(&receivedCount.value, csys_acquire) }

    /// Deliveries that began after ``disposeHasReturned()``.
    var late: Int64 { csys_atomic_int_load(&lateCount.value, csys_acquire) }

    /// Yields until `count` deliveries have been seen or `deadline` (monotonic ns) passes.
    func waitForDeliveries(_ count: Int64, until deadline: UInt64) {
        while received < count && csys_monotonic_ns() < deadline { csys_thread_yield() }
    }
}

/// A thread that calls `send(0)`, `send(1)`, … back to back until stopped, counting the
/// sends that have returned.
final class BusySender: @unchecked Sendable {
    private let sentCount = SharedBox(csys_atomic_int(value: 0))
    private let stopFlag = SharedBox(csys_atomic_bool(value: false))
    private var join: (() -> Void)?

    init(_ send: @escaping @Sendable (Int) -> Void) {
        let sentCount = sentCount, stopFlag = stopFlag
        join = startThread {
            var i = 0
            while !csys_atomic_bool_load(&stopFlag.value, csys_acquire) {
                send(i)
                i += 1
                csys_atomic_int_fetch_add(&sentCount.value, 1, csys_release)
            }
        }
    }

    /// Sends that have returned so far.
    var sent: Int64 { csys_atomic_int_load(&sentCount.value, csys_acquire) }

    /// Lets the sender go on for `more` sends from now (a late delivery's chance to show),
    /// or until `deadline` (monotonic ns).
    func waitForMoreSends(_ more: Int64, until deadline: UInt64) {
        let target = sent + more
        while sent < target && csys_monotonic_ns() < deadline { csys_thread_yield() }
    }

    /// Stops the sender, joins its thread, and returns how many sends it made.
    @discardableResult
    func stop() -> Int64 {
        csys_atomic_bool_store(&stopFlag.value, true, csys_release)
        join?()
        join = nil
        return sent
    }
}

/// A deadline `seconds` from now, in monotonic nanoseconds.
func deadline(inSeconds seconds: UInt64) -> UInt64 { csys_monotonic_ns() + seconds * 1_000_000_000 }

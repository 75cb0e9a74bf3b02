import CLibUV
import CSystemShims
import Glibc
import XCTest

@testable import ReactiveUV

/// CSystemShims from Swift: the primitives every lock, atomic and clock in ReactiveUV uses.
final class CSystemShimsTests: XCTestCase {
    func testAtomicIntOperations() {
        let a = UnsafeMutablePointer<csys_atomic_int>.allocate(capacity: 1)
        defer { a.deallocate() }
        csys_atomic_int_init(a, 5)
        XCTAssertEqual(csys_atomic_int_load(a, csys_seq_cst), 5)
        csys_atomic_int_store(a, 7, csys_release)
        XCTAssertEqual(csys_atomic_int_load(a, csys_acquire), 7)
        XCTAssertEqual(csys_atomic_int_exchange(a, 9, csys_acq_rel), 7)
        XCTAssertEqual(csys_atomic_int_fetch_add(a, 3, csys_relaxed), 9)
        XCTAssertEqual(csys_atomic_int_fetch_sub(a, 2, csys_relaxed), 12)
        XCTAssertEqual(csys_atomic_int_fetch_or(a, 0b10000, csys_seq_cst), 10)
        XCTAssertEqual(csys_atomic_int_fetch_and(a, 0b11010, csys_seq_cst), 26)
        XCTAssertEqual(csys_atomic_int_load(a, csys_relaxed), 26)

        var expected: Int64 = 26
        XCTAssertTrue(csys_atomic_int_compare_exchange(a, &expected, 100, csys_acq_rel))
        XCTAssertEqual(csys_atomic_int_load(a, csys_acquire), 100)
        expected = 1
        XCTAssertFalse(csys_atomic_int_compare_exchange(a, &expected, 200, csys_seq_cst))
        XCTAssertEqual(expected, 100, "a failed compare-exchange reports the current value")
        XCTAssertEqual(csys_atomic_int_load(a, csys_acquire), 100)
    }

    func testAtomicFetchAddRaceFromFourThreads() {
        let counter = UnsafeAtomicInt(0)
        defer { counter.destroy() }
        let perThread = 100_000
        let threads = (0..<4).map { _ in
            TestThread {
                for _ in 0..<perThread { counter.fetchAdd(1, csys_relaxed) }
            }
        }
        threads.forEach { $0.join() }
        XCTAssertEqual(counter.load(), 4 * perThread)
    }

    func testAtomicBoolOperations() {
        let b = UnsafeMutablePointer<csys_atomic_bool>.allocate(capacity: 1)
        defer { b.deallocate() }
        csys_atomic_bool_init(b, false)
        XCTAssertFalse(csys_atomic_bool_load(b, csys_acquire))
        csys_atomic_bool_store(b, true, csys_release)
        XCTAssertTrue(csys_atomic_bool_load(b, csys_acquire))
        XCTAssertTrue(csys_atomic_bool_exchange(b, false, csys_acq_rel))
        var expected = false
        XCTAssertTrue(csys_atomic_bool_compare_exchange(b, &expected, true, csys_seq_cst))
        expected = false
        XCTAssertFalse(csys_atomic_bool_compare_exchange(b, &expected, true, csys_seq_cst))
        XCTAssertTrue(expected)

        let flag = UnsafeAtomicFlag()
        defer { flag.destroy() }
        XCTAssertFalse(flag.isSet)
        XCTAssertTrue(flag.set(), "the first set wins")
        XCTAssertFalse(flag.set(), "later sets report that the flag was already set")
        XCTAssertTrue(flag.isSet)
    }

    func testAtomicPointerOperations() {
        let p = UnsafeMutablePointer<csys_atomic_ptr>.allocate(capacity: 1)
        defer { p.deallocate() }
        let x = UnsafeMutableRawPointer.allocate(byteCount: 8, alignment: 8)
        let y = UnsafeMutableRawPointer.allocate(byteCount: 8, alignment: 8)
        defer {
            x.deallocate()
            y.deallocate()
        }
        csys_atomic_ptr_init(p, nil)
        XCTAssertNil(csys_atomic_ptr_load(p, csys_acquire))
        csys_atomic_ptr_store(p, x, csys_release)
        XCTAssertEqual(csys_atomic_ptr_load(p, csys_acquire), x)
        XCTAssertEqual(csys_atomic_ptr_exchange(p, y, csys_acq_rel), x)
        var expected: UnsafeMutableRawPointer? = y
        XCTAssertTrue(csys_atomic_ptr_compare_exchange(p, &expected, x, csys_seq_cst))
        expected = y
        XCTAssertFalse(csys_atomic_ptr_compare_exchange(p, &expected, nil, csys_seq_cst))
        XCTAssertEqual(expected, x)
        csys_atomic_thread_fence(csys_seq_cst)
    }

    func testMutexExcludesOtherThreads() {
        let mutex = csys_mutex_create(false)!
        defer { csys_mutex_destroy(mutex) }
        csys_mutex_lock(mutex)
        let acquiredElsewhere = Locked(true)
        let shared = Confined(mutex)
        let other = TestThread { acquiredElsewhere.withLock { $0 = csys_mutex_trylock(shared.value) } }
        other.join()
        XCTAssertFalse(acquiredElsewhere.value, "another thread cannot take a held mutex")
        csys_mutex_unlock(mutex)
        XCTAssertTrue(csys_mutex_trylock(mutex))
        csys_mutex_unlock(mutex)
    }

    func testRecursiveMutexRelocksOnSameThread() {
        let mutex = csys_mutex_create(true)!
        defer { csys_mutex_destroy(mutex) }
        csys_mutex_lock(mutex)
        csys_mutex_lock(mutex)
        XCTAssertTrue(csys_mutex_trylock(mutex), "the owner takes a recursive mutex again")
        let acquiredElsewhere = Locked(true)
        let shared = Confined(mutex)
        TestThread { acquiredElsewhere.withLock { $0 = csys_mutex_trylock(shared.value) } }.join()
        XCTAssertFalse(acquiredElsewhere.value)
        csys_mutex_unlock(mutex)
        csys_mutex_unlock(mutex)
        csys_mutex_unlock(mutex)
        let acquiredAfter = Locked(false)
        TestThread {
            let ok = csys_mutex_trylock(shared.value)
            if ok { csys_mutex_unlock(shared.value) }
            acquiredAfter.withLock { $0 = ok }
        }.join()
        XCTAssertTrue(acquiredAfter.value, "fully unlocked after as many unlocks as locks")
    }

    func testConditionTimedWaitTimesOut() {
        let mutex = csys_mutex_create(false)!
        let cond = csys_cond_create()!
        defer {
            csys_cond_destroy(cond)
            csys_mutex_destroy(mutex)
        }
        csys_mutex_lock(mutex)
        let start = csys_monotonic_ns()
        // Spurious wake-ups may end a wait early with `true`; a timeout is reported as false.
        var timedOut = false
        while !timedOut && csys_monotonic_ns() - start < 5_000_000_000 {
            timedOut = !csys_cond_timedwait(cond, mutex, 20_000_000)
        }
        csys_mutex_unlock(mutex)
        XCTAssertTrue(timedOut)
        XCTAssertGreaterThanOrEqual(csys_monotonic_ns() - start, 20_000_000, "never returns before the timeout")
    }

    func testConditionWakesWhenSignalled() {
        let mutex = csys_mutex_create(false)!
        let cond = csys_cond_create()!
        defer {
            csys_cond_destroy(cond)
            csys_mutex_destroy(mutex)
        }
        let ready = Confined(false)  // guarded by `mutex`
        let shared = Confined((mutex, cond))
        let signaller = TestThread {
            let (mutex, cond) = shared.value
            csys_mutex_lock(mutex)
            ready.value = true
            csys_cond_signal(cond)
            csys_mutex_unlock(mutex)
        }
        csys_mutex_lock(mutex)
        let start = csys_monotonic_ns()
        while !ready.value && csys_monotonic_ns() - start < 30_000_000_000 {
            _ = csys_cond_timedwait(cond, mutex, 30_000_000_000)
        }
        let woke = ready.value
        csys_mutex_unlock(mutex)
        signaller.join()
        XCTAssertTrue(woke)

        // Broadcast wakes a waiter too, and `csys_cond_wait` (untimed) returns on it.
        let go = Confined(false)
        let waiterDone = Latch()
        let waiter = TestThread {
            let (mutex, cond) = shared.value
            csys_mutex_lock(mutex)
            while !go.value { csys_cond_wait(cond, mutex) }
            csys_mutex_unlock(mutex)
            waiterDone.countDown()
        }
        csys_mutex_lock(mutex)
        go.value = true
        csys_cond_broadcast(cond)
        csys_mutex_unlock(mutex)
        XCTAssertTrue(waiterDone.wait(timeout: 30))
        waiter.join()
    }

    func testThreadIdentity() {
        XCTAssertTrue(csys_thread_is_main(), "XCTest runs test methods on the main thread")
        XCTAssertEqual(csys_thread_id(), Int64(getpid()))
        XCTAssertEqual(csys_thread_id(), csys_thread_id(), "stable for a thread")
        let other = Locked<(Int64, Bool)>((0, true))
        TestThread { other.withLock { $0 = (csys_thread_id(), csys_thread_is_main()) } }.join()
        XCTAssertNotEqual(other.value.0, csys_thread_id())
        XCTAssertGreaterThan(other.value.0, 0)
        XCTAssertFalse(other.value.1)
        csys_thread_yield()
    }

    func testMonotonicClockNeverGoesBackwards() {
        var previous = csys_monotonic_ns()
        for _ in 0..<100_000 {
            let now = csys_monotonic_ns()
            XCTAssertGreaterThanOrEqual(now, previous)
            previous = now
        }
    }

    /// The loop's timers rely on libuv's clock being CLOCK_MONOTONIC, like ours.
    func testMonotonicClockMatchesLibuvClock() {
        let before = csys_monotonic_ns()
        let uv = uv_hrtime()
        let after = csys_monotonic_ns()
        XCTAssertGreaterThanOrEqual(uv, before)
        XCTAssertLessThanOrEqual(uv, after)
    }
}

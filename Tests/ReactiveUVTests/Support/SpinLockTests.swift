import Glibc
import Synchronization
import Testing

@testable import ReactiveUV

/// `RecursiveSpinLock` (`Support/SpinLock.swift`) held in place by each kind of owner: a
/// `Signal.create` subscriber (`Subscriber`) and an operator's per-subscription state
/// (`LockedState`, what merge, zip, combineLatest, flatten, switch... subclass). The
/// subject roster's lock is checked in `InlineAtomicStateTests`.
///
/// What breaks if the lock's words are not the owner's own (a copy locked instead of the
/// stored one, two owners sharing words) or its orderings are too weak: a re-entrant hold
/// that is not counted, a lock left held after the last unlock, two threads inside at once,
/// increments lost under it. The merge-like operators' own threaded tests
/// (`CombiningTests.mergeOfTwoThreadsDeliversEveryValueWithoutOverlap`,
/// `zipOfTwoThreadsPairsEveryIndex`) and re-entrant sends
/// (`CombiningTests.mergeReentrantSendIsDeliveredNested`) are not repeated here.
@Suite struct SpinLockTests {
    /// Threads racing on one lock: enough for the race to be real on two cores, small
    /// enough for ThreadSanitizer.
    static let threads = 6
    static let perThread = 20_000

    // Functions, because `#expect` cannot take a property of a noncopyable value apart.
    static func isHeld(_ state: LockedState) -> Bool { state.lock.isHeldByCurrentThread }
    static func depth(_ state: LockedState) -> Int { state.lock.depth.load(ordering: .relaxed) }
    static func owner(_ state: LockedState) -> Int { state.lock.owner.load(ordering: .relaxed) }
    static func isHeld(_ subscriber: Subscriber<Int>) -> Bool { subscriber.lock.isHeldByCurrentThread }
    static func depth(_ subscriber: Subscriber<Int>) -> Int { subscriber.lock.depth.load(ordering: .relaxed) }
    static func owner(_ subscriber: Subscriber<Int>) -> Int { subscriber.lock.owner.load(ordering: .relaxed) }

    @Test func anOperatorStatesLockIsReentrantAndFreedByTheLastUnlock() {
        let state = LockedState()
        #expect(!Self.isHeld(state))
        #expect(Self.owner(state) == 0)
        state.lock.lock()
        state.lock.lock()
        state.lock.lock()
        #expect(Self.isHeld(state))
        #expect(Self.depth(state) == 3)
        state.lock.unlock()
        state.lock.unlock()
        #expect(Self.isHeld(state), "two unlocks of three leave it held")
        #expect(Self.depth(state) == 1)
        state.lock.unlock()
        #expect(!Self.isHeld(state))
        #expect(Self.owner(state) == 0)
        // Another thread can take it now, and while it holds it this thread does not.
        let heldElsewhere = Flag(), release = Flag()
        let join = startThread {
            state.lock.lock()
            heldElsewhere.set()
            _ = release.wait()
            state.lock.unlock()
        }
        #expect(heldElsewhere.wait(), "the other thread took the freed lock")
        #expect(!Self.isHeld(state))
        #expect(Self.owner(state) != 0)
        release.set()
        join()
        #expect(Self.owner(state) == 0)
    }

    @Test func twoOperatorStatesHaveLocksOfTheirOwn() {
        // Each owner's words are its own: holding one state's lock leaves another's free,
        // also for a thread that then takes the second one.
        let a = LockedState(), b = LockedState()
        a.lock.lock()
        #expect(Self.isHeld(a))
        #expect(!Self.isHeld(b))
        #expect(Self.owner(b) == 0)
        let tookB = Flag()
        let join = startThread {
            b.lock.lock()
            tookB.set()
            b.lock.unlock()
        }
        join()
        #expect(tookB.isSet, "b was free while a was held")
        a.lock.unlock()
        #expect(Self.owner(a) == 0 && Self.owner(b) == 0)
    }

    @Test func anOperatorStatesLockIsExclusiveAcrossThreads() {
        // A plain counter incremented under the lock (inside a nested, re-entrant hold)
        // from several threads: any overlap loses increments, and `inside` sees it.
        let state = LockedState()
        let counter = SharedBox(0)
        let inside = Count(), overlaps = Count()
        runOnThreads(Self.threads) { _ in
            for _ in 0..<Self.perThread {
                state.lock.lock()
                if inside.add() != 0 { overlaps.add() }
                state.lock.lock()
                counter.value += 1
                state.lock.unlock()
                inside.add(-1)
                state.lock.unlock()
            }
        }
        #expect(overlaps.value == 0)
        #expect(counter.value == Self.threads * Self.perThread)
        #expect(Self.owner(state) == 0)
    }

    @Test func aCreateSubscriberSerializesSendsFromManyThreads() {
        // The block hands its subscriber out; several threads then send into it at once.
        // The subscriber's lock must let one send at a time reach the callback, each value
        // exactly once, each thread's values in its order.
        let captured = SharedBox<Subscriber<Int>?>(nil)
        let inside = Count(), overlaps = Count()
        let seen = SharedBox([UInt8](repeating: 0, count: Self.threads * Self.perThread))
        let last = SharedBox([Int](repeating: -1, count: Self.threads))
        let outOfOrder = SharedBox(0)
        let completed = SharedBox(false)
        let subscription = Signal<Int>.create { subscriber in
            captured.value = subscriber
            return nil
        }.subscribe(
            next: { v in
                if inside.add() != 0 { overlaps.add() }
                seen.value[v] &+= 1
                let (t, i) = v.quotientAndRemainder(dividingBy: Self.perThread)
                if i != last.value[t] + 1 { outOfOrder.value += 1 }
                last.value[t] = i
                inside.add(-1)
            },
            completed: { completed.value = true })
        let subscriber = captured.value!
        runOnThreads(Self.threads) { t in
            for i in 0..<Self.perThread { subscriber.sendNext(t * Self.perThread + i) }
        }
        #expect(overlaps.value == 0)
        #expect(outOfOrder.value == 0)
        #expect(seen.value.allSatisfy { $0 == 1 })
        #expect(Self.owner(subscriber) == 0, "free after the last send")
        subscriber.sendCompleted()
        #expect(completed.value)
        #expect(Self.owner(subscriber) == 0, "free after the terminal event")
        subscriber.sendNext(0)
        #expect(seen.value[0] == 1, "a send after completion is dropped")
        subscription.dispose()
    }

    @Test func aCreateSubscriberTakesItsLockAgainForASendFromItsOwnCallback() {
        // RAC's `@synchronized` re-entrance: a callback that sends into the subscriber that
        // called it takes the subscriber's lock again on the same thread (a deadlock with
        // a non-re-entrant lock), nested one level deeper per send.
        let captured = SharedBox<Subscriber<Int>?>(nil)
        let seen = SharedBox<[String]>([])
        let subscription = Signal<Int>.create { subscriber in
            captured.value = subscriber
            return nil
        }.subscribeNext { v in
            let subscriber = captured.value!
            seen.value.append("\(v) held \(Self.isHeld(subscriber)) depth \(Self.depth(subscriber))")
            if v < 3 { subscriber.sendNext(v + 1) }
        }
        let subscriber = captured.value!
        #expect(!Self.isHeld(subscriber))
        subscriber.sendNext(1)
        #expect(seen.value == ["1 held true depth 1", "2 held true depth 2", "3 held true depth 3"])
        #expect(!Self.isHeld(subscriber))
        #expect(Self.owner(subscriber) == 0)
        subscription.dispose()
    }
}

/// A counter shared by the threads of a test (an `Atomic` cannot be captured by an escaping
/// closure, being noncopyable, so it lives in an object).
private final class Count: Sendable {
    private let word = Atomic<Int>(0)
    /// Adds `delta`; returns the value from before.
    @discardableResult
    func add(_ delta: Int = 1) -> Int { word.wrappingAdd(delta, ordering: .relaxed).oldValue }
    var value: Int { word.load(ordering: .relaxed) }
}

/// A one-way flag one thread sets and another waits for (acquire/release, so what the
/// setter did before is seen by the waiter).
private final class Flag: Sendable {
    private let word = Atomic<Bool>(false)
    func set() { word.store(true, ordering: .releasing) }
    var isSet: Bool { word.load(ordering: .acquiring) }
    /// Waits, yielding, until the flag is set or `seconds` have passed (generous: a loaded
    /// two-core machine may not run the other thread for a while); true if it was set.
    func wait(seconds: Int = 60) -> Bool {
        let deadline = ContinuousClock.now.advanced(by: .seconds(seconds))
        while !isSet {
            if ContinuousClock.now >= deadline { return false }
            sched_yield()
        }
        return true
    }
}

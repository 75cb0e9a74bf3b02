import Synchronization
import Testing

@testable import ReactiveUV

/// The engine's atomic words as the code that uses them needs them: `Disposable`'s three
/// `Atomic<Int>` words (state, slot hint, subclass word) and the subject roster's inline
/// recursive lock. These replace the layout tests that pinned where the words sat in the
/// object when C's atomics reached them through a pointer to the first stored property;
/// the `Atomic`s need no layout, so what is checked here is what breaks if the storage
/// does: a word shared with another, an ordering too weak, a lock that is not exclusive.
///
/// Already covered elsewhere, and not repeated: a plain `Disposable` disposed from four
/// threads (`DisposableTests.disposeFromManyThreadsRunsTheBlockOnce`), sends from four
/// threads into one subject serialized by its lock
/// (`ConcurrencyTests.fourThreadsIntoOneSubjectDeliverEveryValueOnceAndNeverConcurrently`),
/// re-entrant sends (`ConcurrencyTests.reentrantSendFromSubscriberDoesNotDeadlock`), and
/// `BlockSubscriber`'s delivery handshake on its subclass word
/// (`ConcurrencyTests.nothingArrivesAfterDisposeReturnsFromAnotherThread`).
@Suite struct InlineAtomicStateTests {
    /// Threads racing on each object, and rounds (a new object each): enough for the race
    /// to be real on two cores, small enough for ThreadSanitizer.
    static let threads = 6
    static let rounds = 100

    /// Whether this thread holds `roster`'s lock (a function, because `#expect` cannot
    /// take a property of a noncopyable value apart).
    static func isHeld(_ roster: Subject<Int>.Roster) -> Bool { roster.lock.isHeldByCurrentThread }

    @Test func everyDisposableKindRacedByManyThreadsRunsItsCancellationOnce() {
        // Each kind reaches the state word its own way: `markDisposed` (plain), the
        // disposed bit then the members (compound), the spin bit with
        // `unlockState(markingDisposed:)` (serial), the gate bit and the delivering
        // thread's word before the members (block subscriber).
        let kinds: [(String, (@escaping @Sendable () -> Void) -> Disposable)] = [
            ("Disposable", { action in Disposable(action) }),
            ("CompoundDisposable", { action in CompoundDisposable(action) }),
            ("SerialDisposable", { action in SerialDisposable(action) }),
            ("BlockSubscriber", { action in
                let subscriber = BlockSubscriber<Int>(next: { _ in }, error: nil, completed: nil)
                subscriber.add(Disposable(action))
                return subscriber
            }),
        ]
        for (name, make) in kinds {
            let runs = Count()
            for _ in 0..<Self.rounds {
                let disposable = make { runs.add() }
                runOnThreads(Self.threads) { _ in disposable.dispose() }
                #expect(disposable.isDisposed, "\(name)")
            }
            #expect(runs.value == Self.rounds, "\(name)")
        }
    }

    @Test func membersAddedAndRemovedFromManyThreadsAreEachDisposedOnceOrNotAtAll() {
        // `add` and `remove` take the compound's spin bit (its state word) and write each
        // member's slot hint: lost updates or a torn hint would dispose a removed member,
        // skip a kept one, or leave `members` inconsistent.
        let compound = CompoundDisposable()
        let perThread = 500
        let disposals = (0..<(Self.threads * perThread)).map { _ in Count() }
        let members = (0..<(Self.threads * perThread)).map { i in
            Disposable { disposals[i].add() }
        }
        runOnThreads(Self.threads) { t in
            for i in (t * perThread)..<((t + 1) * perThread) {
                compound.add(members[i])
                // Every third member leaves again, by its hint (the common case).
                if i % 3 == 0 { compound.remove(members[i]) }
            }
        }
        #expect(compound.members.compactMap { $0 }.count == members.indices.filter { $0 % 3 != 0 }.count)
        compound.dispose()
        for i in members.indices {
            #expect(disposals[i].value == (i % 3 == 0 ? 0 : 1), "member \(i)")
        }
    }

    @Test func theSlotHintFollowsAMemberThroughAddsRemovalsAndSqueezes() {
        let compound = CompoundDisposable()
        let members = (0..<60).map { _ in Disposable() }
        #expect(members[0].slotHint.load(ordering: .relaxed) == -1, "no slot before it is added anywhere")
        for m in members { compound.add(m) }
        for (i, m) in members.enumerated() {
            #expect(m.slotHint.load(ordering: .relaxed) == i)
        }
        // Enough removals from the front for the holes to be squeezed out (more than 16,
        // and more than the members): the members that stay move down, and their hints
        // with them.
        for m in members.prefix(40) { compound.remove(m) }
        let live = compound.members.compactMap { $0 }
        #expect(live.count == 20)
        #expect(compound.members.count < 40, "the holes were squeezed out")
        for (i, m) in compound.members.enumerated() {
            guard let m else { continue }
            #expect(m.slotHint.load(ordering: .relaxed) == i, "a squeezed member's hint is its new slot")
        }
        #expect(live.map { ObjectIdentifier($0) } == members.suffix(20).map { ObjectIdentifier($0) })
        // The hint is what `remove` uses: removing by it leaves a hole in that slot and the
        // others where they were.
        let slot = compound.members.firstIndex { $0 === members[45] }
        #expect(slot != nil && slot == members[45].slotHint.load(ordering: .relaxed))
        compound.remove(members[45])
        if let slot {
            #expect(compound.members[slot] == nil)
            #expect(compound.members[slot + 1] === members[46])
        }
        // The words are separate: disposing a member sets its state word and leaves its
        // hint and subclass word alone.
        let member = members[50]
        let memberSlot = compound.members.firstIndex { $0 === member }
        member.dispose()
        #expect(member.state.load(ordering: .relaxed) & Disposable.disposedBit != 0)
        #expect(memberSlot != nil && member.slotHint.load(ordering: .relaxed) == memberSlot)
        #expect(member.subclassWord.load(ordering: .relaxed) == 0)
    }

    @Test func aMemberOfTwoCompoundsCarriesTheHintOfTheLastAndIsFoundInBoth() {
        let a = CompoundDisposable(), b = CompoundDisposable()
        for _ in 0..<3 { a.add(Disposable()) }
        let shared = Disposable()
        a.add(shared)
        #expect(shared.slotHint.load(ordering: .relaxed) == 3)
        b.add(shared)
        #expect(shared.slotHint.load(ordering: .relaxed) == 0, "the hint is the last compound's")
        a.remove(shared)  // by a scan: the hint points into b
        b.remove(shared)  // by the hint
        #expect(!a.members.contains { $0 === shared })
        #expect(b.members.compactMap { $0 }.isEmpty)
        a.dispose()
        b.dispose()
        #expect(!shared.isDisposed)
    }

    @Test func theRostersLockIsReentrantOnOneThread() {
        let subject = Subject<Int>()
        let roster = subject.roster
        #expect(!Self.isHeld(roster))
        roster.lock.lock()
        roster.lock.lock()
        #expect(Self.isHeld(roster))
        #expect(roster.lock.depth.load(ordering: .relaxed) == 2)
        roster.lock.unlock()
        #expect(Self.isHeld(roster), "one unlock of two leaves it held")
        roster.lock.unlock()
        #expect(!Self.isHeld(roster))
        #expect(roster.lock.owner.load(ordering: .relaxed) == 0)
        // A send holds it, and a callback that sends again takes it again.
        var seen: [Int] = []
        let subscription = subject.subscribeNext { value in
            #expect(Self.isHeld(subject.roster))
            seen.append(value)
            if value == 1 { subject.sendNext(2) }
        }
        subject.sendNext(1)
        subscription.dispose()
        #expect(seen == [1, 2])
        #expect(!Self.isHeld(subject.roster))
    }

    @Test func theRostersLockIsExclusiveAcrossThreads() {
        // A plain counter incremented under the lock (each increment inside a nested,
        // re-entrant hold) from several threads: any overlap loses increments, and the
        // `inside` check sees it.
        let subject = Subject<Int>()
        let perThread = 20_000
        let counter = SharedBox(0)
        let inside = Count()
        let overlaps = Count()
        runOnThreads(Self.threads) { _ in
            let roster = subject.roster
            for _ in 0..<perThread {
                roster.lock.lock()
                if inside.add() != 0 { overlaps.add() }
                roster.lock.lock()
                counter.value += 1
                roster.lock.unlock()
                inside.add(-1)
                roster.lock.unlock()
            }
        }
        #expect(overlaps.value == 0)
        #expect(counter.value == Self.threads * perThread)
        #expect(subject.roster.lock.owner.load(ordering: .relaxed) == 0)
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

import Testing
@testable import ReactiveUV

/// `CompoundDisposable` as a bag with O(1) removal, and `Subject`'s O(1) departure of a
/// subscriber (issue 13 §3): order kept, holes squeezed out, nothing held after removal.
@Suite struct CompoundDisposableBagTests {
    @Test func disposalKeepsInsertionOrderAcrossRemovalsAndSqueezes() {
        let compound = CompoundDisposable()
        var order: [Int] = []
        let members = (0..<100).map { i in Disposable { order.append(i) } }
        for m in members { compound.add(m) }
        // Remove every odd member from the front: enough holes to squeeze several times.
        for i in stride(from: 1, to: 100, by: 2) { compound.remove(members[i]) }
        #expect(compound.members.compactMap { $0 }.count == 50)
        #expect(compound.members.count < 100, "holes were squeezed out")
        // Removed members were not disposed; a late addition goes last.
        let late = Disposable { order.append(1000) }
        compound.add(late)
        compound.dispose()
        #expect(order == Array(stride(from: 0, to: 100, by: 2)) + [1000])
        #expect(!members[1].isDisposed)
    }

    @Test func removalStillFindsAMemberOfSeveralCompounds() {
        let a = CompoundDisposable(), b = CompoundDisposable()
        let shared = Disposable()
        let fillers = (0..<40).map { _ in Disposable() }
        for f in fillers { a.add(f) }
        a.add(shared)
        b.add(shared)  // its slot hint now points into b
        for f in fillers.prefix(30) { a.remove(f) }  // squeezes a: shared moves
        a.remove(shared)
        b.remove(shared)
        #expect(a.members.compactMap { $0 }.count == 10)
        #expect(!a.members.contains { $0 === shared })
        #expect(b.members.compactMap { $0 }.isEmpty)
        a.dispose()
        b.dispose()
        #expect(!shared.isDisposed)
    }

    @Test func removingAndReaddingTheSameMemberWorks() {
        let c = CompoundDisposable()
        let d = Disposable()
        c.add(d)
        c.remove(d)
        c.remove(d)  // absent: nothing happens
        c.add(d)
        c.dispose()
        #expect(d.isDisposed)
    }

    @Test func removedMembersAreReleased() {
        let c = CompoundDisposable()
        weak var weakMember: Disposable?
        do {
            let d = Disposable()
            weakMember = d
            c.add(Disposable())
            c.add(d)
            c.add(Disposable())
            c.remove(d)
        }
        #expect(weakMember == nil)
    }

    @Test func tenThousandSubjectSubscribersLeaveInAnyOrderAndTheRestKeepTheirOrder() {
        let subject = Subject<Int>()
        var received: [Int] = []
        let subscriptions = (0..<10_000).map { i in subject.subscribeNext { _ in received.append(i) } }
        // Leave in a scattered order (a fixed permutation: 7919 is prime to 10,000), keeping
        // every hundredth subscriber.
        for k in 0..<10_000 {
            let i = (k * 7919) % 10_000
            if i % 100 != 0 { subscriptions[i].dispose() }
        }
        subject.sendNext(1)
        #expect(received == Array(stride(from: 0, to: 10_000, by: 100)))
        #expect(subject.roster.entries.count <= 200, "holes are squeezed out: \(subject.roster.entries.count) slots for 100 subscribers")
        for s in subscriptions { s.dispose() }
        #expect(subject.roster.entries.isEmpty)
        received = []
        subject.sendNext(2)
        #expect(received.isEmpty)
    }

    @Test func aSubscriberThatLeavesDuringASendGetsNothingMoreAndOthersStillDo() {
        let subject = Subject<Int>()
        var got: [String] = []
        var second: Disposable?
        let first = subject.subscribeNext { v in
            got.append("a\(v)")
            second?.dispose()
        }
        second = subject.subscribeNext { v in got.append("b\(v)") }
        let third = subject.subscribeNext { v in got.append("c\(v)") }
        subject.sendNext(1)
        subject.sendNext(2)
        #expect(got == ["a1", "c1", "a2", "c2"])
        first.dispose()
        third.dispose()
        #expect(subject.roster.entries.isEmpty)
    }

    @Test func aSubjectIsNotKeptAliveByItsSubscriptionsNorTheyByIt() {
        weak var weakSubject: Subject<Int>?
        var subscription: Disposable?
        do {
            let subject = Subject<Int>()
            weakSubject = subject
            subscription = subject.subscribeNext { _ in }
        }
        #expect(weakSubject == nil)
        subscription?.dispose()  // the removal finds no subject: nothing happens
    }
}

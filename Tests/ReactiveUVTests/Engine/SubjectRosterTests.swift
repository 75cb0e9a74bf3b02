import Testing
@testable import ReactiveUV

/// A subscription leaves its subject through the subject's roster, never through a weak
/// reference to the subject: a weak reference gives an object a side table for good, and
/// every retain and release of an object with a side table is a slow runtime call (a send
/// through an array of subjects, or a subject in a stored property, retains it each time).
/// And with the roster apart, a subject going away still lets go of its subscribers.
@Suite struct SubjectRosterTests {
    /// Whether `object`'s reference count lives in a side table (the runtime's `UseSlowRC`
    /// bit, the top bit of the inline count word that follows the isa pointer on 64-bit
    /// platforms: set once a weak reference to the object has been formed).
    static func hasSideTable(_ object: AnyObject) -> Bool {
        let word = Unmanaged.passUnretained(object).toOpaque().load(fromByteOffset: MemoryLayout<Int>.size, as: UInt64.self)
        return word >> 63 == 1
    }

    @Test func theCheckSeesASideTableOnceAWeakReferenceIsFormed() {
        let subject = Subject<Int>()
        #expect(!Self.hasSideTable(subject))
        weak let weakSubject = subject
        #expect(Self.hasSideTable(subject), "the control: a weak reference makes a side table")
        #expect(weakSubject != nil)
    }

    @Test func subscribingSendingAndDisposingLeaveEverySubjectKindWithoutASideTable() {
        let subjects: [Subject<Int>] = [Subject(), BehaviorSubject(value: 0), ReplaySubject(capacity: 2)]
        for subject in subjects {
            var got: [Int] = []
            let a = subject.subscribeNext { got.append($0) }
            let b = subject.map { $0 * 10 }.subscribeNext { got.append($0) }
            subject.sendNext(1)
            a.dispose()
            subject.sendNext(2)
            b.dispose()
            subject.sendNext(3)
            #expect(!Self.hasSideTable(subject), "\(type(of: subject))")
            #expect(subject.roster.entries.isEmpty)
            #expect(got.suffix(3) == [1, 10, 20], "\(type(of: subject)): \(got)")
        }
    }

    @Test func aSubjectUsedAsASubscriberHasNoSideTable() {
        let upstream = Subject<Int>()
        let subject = Subject<Int>()
        var got: [Int] = []
        subject.subscribeNext { got.append($0) }
        let link = upstream.subscribe(subject)
        upstream.sendNext(7)
        #expect(!Self.hasSideTable(subject))
        #expect(got == [7])
        link.dispose()
        upstream.sendNext(8)
        #expect(got == [7])
        #expect(subject.subscriptions.members.allSatisfy { $0 == nil }, "the ended link left the subject's set")
    }

    @Test func aPublishedConnectionsSubjectHasNoSideTable() {
        let source = Subject<Int>()
        let connection = source.publish()
        var got: [Int] = []
        connection.signal.subscribeNext { got.append($0) }
        let connected = connection.connect()
        source.sendNext(1)
        #expect(got == [1])
        #expect(!Self.hasSideTable(source))
        #expect(!Self.hasSideTable(connection.subject))
        connected.dispose()
    }

    @Test func aSubjectThatGoesAwayReleasesTheSubscriptionsOnlyItHeld() {
        final class Capture {}
        weak var weakCapture: Capture?
        weak var weakSubject: Subject<Int>?
        weak var weakRoster: Subject<Int>.Roster?
        var kept: [Disposable] = []
        var got: [Int] = []
        do {
            let subject = Subject<Int>()
            weakSubject = subject
            weakRoster = subject.roster
            let capture = Capture()
            weakCapture = capture
            // Held by nothing but the subject: they go with it (the roster, which their
            // removals hold, must not keep them in a cycle).
            subject.subscribeNext { _ in _ = capture }
            subject.map { $0 }.subscribeNext { _ in _ = capture }
            // Held by the test: disposed after the subject is gone.
            kept.append(subject.subscribeNext { got.append($0) })
            kept.append(subject.filter { _ in true }.subscribeNext { got.append($0) })
            subject.subscribeNext { _ in }.dispose()  // a hole in the list
            subject.sendNext(1)
        }
        #expect(got == [1, 1])
        #expect(weakSubject == nil, "subscriptions do not keep their subject alive")
        #expect(weakCapture == nil, "the subscriptions only the subject held went with it")
        #expect(weakRoster != nil, "the kept subscriptions still hold the roster")
        for s in kept { s.dispose() }
        #expect(kept.allSatisfy { $0.isDisposed })
        kept = []
        #expect(weakRoster == nil, "and let it go once disposed and dropped")
    }

    @Test func aSubscriptionDisposedOnAnotherThreadAfterItsSubjectWentAwayIsHarmless() async {
        var subscriptions: [Disposable] = []
        do {
            let subject = Subject<Int>()
            for _ in 0..<100 { subscriptions.append(subject.subscribeNext { _ in }) }
            subject.sendNext(1)
        }
        let all = subscriptions
        await Task.detached { for s in all { s.dispose() } }.value
        #expect(all.allSatisfy { $0.isDisposed })
    }
}

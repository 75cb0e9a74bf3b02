import Testing
@testable import ReactiveUV

/// A subject's send walks its subscriber list in place, without a reference of its own; a
/// callback that subscribes or leaves re-entrantly retires the list being walked (the
/// change copies on write) and the outermost send lets it go. These pin what that must
/// keep: the walk sees the list as it was at the start of the send, every change lands,
/// nested sends see the list as it is when they start, and nothing retired outlives the
/// send. (AddressSanitizer, `make sanitize`, checks that no walk reads a freed list.)
@Suite struct SubjectSendListTests {
    /// The roster's send bookkeeping is back at rest and points at the current list.
    private func expectAtRest<Value>(_ subject: Subject<Value>, _ note: Comment) {
        let roster = subject.roster
        #expect(roster.sendDepth == 0, note)
        #expect(!roster.bufferInUse, note)
        #expect(roster.retired.isEmpty, note)
        #expect(roster.sendCount == roster.entries.count, note)
        roster.entries.withUnsafeBufferPointer { #expect(roster.sendBase == $0.baseAddress, note) }
    }

    @Test func aSendWalksTheListAsItWasWhileACallbackSubscribesAndRemovesOthers() {
        let subject = Subject<Int>()
        var got = [[Int]](repeating: [], count: 16)
        var subscriptions: [Disposable] = []
        for k in 0..<10 {
            subscriptions.append(subject.subscribeNext { [unowned subject] v in
                got[k].append(v)
                guard k == 3, v == 1 else { return }
                // Mid-walk: five new subscribers, two later ones and this one leave.
                for n in 10..<15 {
                    subscriptions.append(subject.subscribeNext { got[n].append($0) })
                }
                subscriptions[5].dispose()
                subscriptions[7].dispose()
                subscriptions[3].dispose()
            })
        }
        subject.sendNext(1)
        expectAtRest(subject, "after the send that changed the list")
        subject.sendNext(2)
        #expect(got[0] == [1, 2] && got[9] == [1, 2], "untouched subscribers get both values")
        #expect(got[3] == [1], "the one that left got the value it was handling")
        #expect(got[5] == [] && got[7] == [], "removed before the walk reached them: nothing")
        #expect((10..<15).allSatisfy { got[$0] == [2] }, "added mid-walk: only the next value")
        #expect(subject.roster.entries.count - subject.roster.holes == 12)
        expectAtRest(subject, "after a plain send")
        // The callbacks hold `subscriptions`, which holds their subscriptions: end them.
        for d in subscriptions { d.dispose() }
        subscriptions = []
    }

    /// Sends nested three deep, each level adding a subscriber before sending on: every
    /// level walks the list as it is when that level starts.
    @Test func nestedSendsEachWalkTheListAsItIsWhenTheyStart() {
        let subject = Subject<Int>()
        var log: [String] = []
        subject.subscribeNext { [unowned subject] v in
            log.append("a\(v)")
            if v < 3 {
                subject.subscribeNext { log.append("added at \(v) got \($0)") }
                subject.sendNext(v + 1)
            }
        }
        subject.subscribeNext { log.append("b\($0)") }
        subject.sendNext(1)
        #expect(log == [
            "a1", "a2", "a3", "b3", "added at 1 got 3", "added at 2 got 3",
            "b2", "added at 1 got 2",
            "b1",
        ])
        expectAtRest(subject, "after nested sends")
    }

    /// A subscription through an operator (its entry's sink holds the operator's closure)
    /// that leaves during a send: the retired list that still holds it is let go when the
    /// send ends, so what the closure captured is freed then.
    @Test func whatALeavingSubscriberHeldIsFreedWhenTheSendEnds() {
        final class Token {}
        let subject = Subject<Int>()
        weak var weakToken: Token?
        var leaving: Disposable?
        subject.subscribeNext { _ in leaving?.dispose() }
        do {
            let token = Token()
            weakToken = token
            leaving = subject.map { v -> Int in _ = token; return v }.subscribeNext { _ in }
        }
        #expect(weakToken != nil)
        subject.sendNext(1)
        leaving = nil
        #expect(weakToken == nil, "released once the send that retired its list ended")
        expectAtRest(subject, "after the send")
    }

    /// A terminal event sent from a callback empties the list mid-walk: the walk goes on
    /// over the old list (skipping the ended subscriptions) and nothing more is sent.
    @Test func aCompletionSentFromACallbackMidWalk() {
        let subject = Subject<Int>()
        var log: [String] = []
        subject.subscribe(next: { [unowned subject] v in
            log.append("a\(v)")
            subject.sendCompleted()
        }, completed: { log.append("a done") })
        subject.subscribe(next: { log.append("b\($0)") }, completed: { log.append("b done") })
        subject.sendNext(1)
        subject.sendNext(2)
        #expect(log == ["a1", "a done", "b done"])
        #expect(subject.roster.entries.isEmpty)
        expectAtRest(subject, "after the termination")
    }
}

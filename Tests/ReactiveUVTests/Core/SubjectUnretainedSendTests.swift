import Testing
@testable import ReactiveUV

/// Pins the assumption of `Subject.Slot.send`'s two `_withUnsafeGuaranteedRef` calls: the
/// entry (and, for a `subscribe(next:…)` slot, the `BlockSubscriber` its lifetime is) is
/// called without a retain because **the list being walked holds it for the whole call**,
/// even when the callee makes the roster let go of it: a subscriber that ends its own
/// subscription and every other one mid-delivery only retires the list (`Roster.retired`),
/// which the outermost send releases after it unlocks.
///
/// Each test makes the holder let go *during* the call and checks, inside the call, that
/// nothing was freed yet, then, once the send has returned, that everything was freed,
/// exactly once. If the roster stopped retiring the list it walks (or released it early),
/// an entry would be freed mid-call: the in-call count fails here, and the walk's next read
/// is a use after free that the AddressSanitizer lane reports.
@Suite struct SubjectUnretainedSendTests {
    /// Closure subscribers (the entry path: `entry.sink`), each sink holding a probe; the
    /// one at `leaver` ends all three subscriptions from its own delivery.
    @Test(arguments: [0, 1, 2])
    func entriesEndedDuringADeliveryAreFreedOnlyAfterTheSend(leaver: Int) {
        let subject = Subject<Int>()
        let log = Locked<[String]>([])
        let lifetimes = (0..<3).map { _ in CompoundDisposable() }
        for k in 0..<3 {
            let probe = DeinitProbe("sink \(k)", log: log)
            subject.attach({ event in
                _ = probe
                guard case .next(let v) = event else { return }
                log.append("\(k) next \(v)")
                guard k == leaver else { return }
                for lifetime in lifetimes { lifetime.dispose() }
                log.append("\(k) ended every subscription; freed so far: \(log.count(prefix: "deinit"))")
            }, lifetimes[k])
        }
        subject.sendNext(1)
        let delivered = (0...leaver).map { "\($0) next 1" }
        let ended = "\(leaver) ended every subscription; freed so far: 0"
        let afterSend = log.value
        #expect(Array(afterSend.prefix(leaver + 2)) == delivered + [ended], "nothing freed during the delivery")
        #expect(
            afterSend.dropFirst(leaver + 2).sorted() == ["deinit sink 0", "deinit sink 1", "deinit sink 2"],
            "each sink freed once, by the time the send returned")
        subject.sendNext(2)
        #expect(log.value == afterSend, "ended subscriptions get nothing more")
        #expect(subject.roster.retired.isEmpty && subject.roster.sendDepth == 0)
    }

    /// `subscribe(next:)` subscribers (the slot calls the `BlockSubscriber` itself, held
    /// only by its entry's lifetime here: the test keeps weak references), the one at
    /// `leaver` disposing all three from its own callback.
    @Test(arguments: [0, 1, 2])
    func blockSubscribersDisposedDuringADeliveryLiveUntilTheSendReturns(leaver: Int) {
        final class WeakSubscriber: @unchecked Sendable { weak var subscriber: Disposable? }
        let subject = Subject<Int>()
        let log = Locked<[String]>([])
        let refs = (0..<3).map { _ in WeakSubscriber() }
        for k in 0..<3 {
            refs[k].subscriber = subject.subscribeNext { v in
                log.append("\(k) next \(v)")
                guard k == leaver else { return }
                for ref in refs { ref.subscriber?.dispose() }
                let alive = refs.filter { $0.subscriber != nil }.count
                log.append("\(k) disposed every subscriber; alive: \(alive)")
            }
        }
        #expect(refs.allSatisfy { $0.subscriber != nil }, "the subject's entries hold the subscribers")
        subject.sendNext(1)
        #expect(log.value == (0...leaver).map { "\($0) next 1" } + ["\(leaver) disposed every subscriber; alive: 3"])
        #expect(refs.allSatisfy { $0.subscriber == nil }, "freed once the send that retired their list returned")
        subject.sendNext(2)
        #expect(log.value.count == leaver + 2, "disposed subscribers get nothing more")
    }

    /// A subscriber that leaves and then sends into the subject again from the same
    /// callback: the nested send walks the new list, the outer one goes on over the old, and
    /// the leaver is freed only when the outermost send returns.
    @Test func aLeaverThatSendsAgainIsFreedWhenTheOutermostSendReturns() {
        let subject = Subject<Int>()
        let log = Locked<[String]>([])
        let leaving = CompoundDisposable()
        do {
            let probe = DeinitProbe("leaver", log: log)
            subject.attach({ [unowned subject] event in
                _ = probe
                guard case .next(let v) = event else { return }
                log.append("leaver next \(v)")
                leaving.dispose()
                subject.sendNext(v + 10)
                log.append("leaver's nested send returned; freed so far: \(log.count(prefix: "deinit"))")
            }, leaving)
        }
        let staying = CompoundDisposable()
        subject.attach({ event in if case .next(let v) = event { log.append("staying next \(v)") } }, staying)
        subject.sendNext(1)
        #expect(log.value == [
            "leaver next 1", "staying next 11", "leaver's nested send returned; freed so far: 0",
            "staying next 1", "deinit leaver",
        ])
        staying.dispose()
    }
}

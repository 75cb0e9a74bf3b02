import Testing
@testable import ReactiveUV

/// Pins the assumption of `GroupByState.send`'s `_withUnsafeGuaranteedRef`: a group is sent
/// its value without a retain because **the state's `order` holds every group it made for
/// as long as the state lives**, and the state lives while the source's sink (the closure
/// that captured it) is being called, even when that call ends the source's subscription.
///
/// The group's own subscriber ends everything that could let the group go (the source's
/// subscription, whose closure holds the state; its own subscription; the group itself, by
/// completing it) during the group's send, and checks through a weak reference that the
/// group is still alive; once the source's send has returned the group must be freed. If
/// the state dropped its groups when its subscription ended, the in-call check fails (and
/// the rest of the group's send is a use after free that the AddressSanitizer lane reports).
@Suite struct GroupByStateTests {
    final class WeakGroup: @unchecked Sendable { weak var group: GroupedSignal<Int, Int>? }

    @Test func aGroupEndedFromItsOwnSubscriberLivesUntilItsSendReturns() {
        let source = Subject<Int>()
        let log = Locked<[String]>([])
        let tracked = WeakGroup()
        let outer = Locked<Disposable?>(nil)
        let inner = Locked<Disposable?>(nil)
        let subscription = source.groupBy { $0 % 2 }.subscribeNext { group in
            log.append("group \(group.key)")
            tracked.group = group
            let d = group.subscribe(
                next: { v in
                    log.append("grouped \(v)")
                    guard v == 3 else { return }
                    outer.withLock { $0 }?.dispose()
                    inner.withLock { $0 }?.dispose()
                    tracked.group?.sendCompleted()
                    log.append("ended everything; group alive: \(tracked.group != nil)")
                },
                completed: { log.append("group completed") })
            inner.withLock { $0 = d }
        }
        outer.withLock { $0 = subscription }
        source.sendNext(1)  // makes the group (sent through `makeGroup`, retained)
        #expect(tracked.group != nil, "the state's `order` holds the group")
        source.sendNext(3)  // through `send(_:toGroupOf:)`, unretained
        outer.withLock { $0 = nil }
        inner.withLock { $0 = nil }
        log.append("group freed after the send: \(tracked.group == nil)")
        #expect(log.value == [
            "group 1", "grouped 1", "grouped 3", "ended everything; group alive: true",
            "group freed after the send: true",
        ])
        source.sendNext(5)
        #expect(log.value.count == 5, "the ended subscription gets nothing more")
    }

    /// Two groups, the second's subscriber ending the source's subscription: the first
    /// group, which no send is calling, is freed with the state too, after the send.
    @Test func everyGroupIsFreedOnceTheSendThatEndedTheSubscriptionReturns() {
        final class WeakGroups: @unchecked Sendable { var groups: [WeakGroup] = [] }
        let source = Subject<Int>()
        let log = Locked<[String]>([])
        let tracked = WeakGroups()
        let outer = Locked<Disposable?>(nil)
        let inners = Locked<[Disposable]>([])
        let subscription = source.groupBy { $0 % 2 }.subscribeNext { group in
            let w = WeakGroup()
            w.group = group
            tracked.groups.append(w)
            let name = group.key == 0 ? "even" : "odd"
            let d = group.subscribeNext { v in
                log.append("\(name) \(v)")
                guard v == 4 else { return }
                outer.withLock { $0 }?.dispose()
                log.append("ended the source; groups alive: \(tracked.groups.filter { $0.group != nil }.count)")
            }
            inners.withLock { $0.append(d) }
        }
        outer.withLock { $0 = subscription }
        for v in [1, 2, 3, 4] { source.sendNext(v) }
        outer.withLock { $0 = nil }
        #expect(log.value == ["odd 1", "even 2", "odd 3", "even 4", "ended the source; groups alive: 2"])
        // The groups' own subscriptions are still there: they hold the groups' rosters, not
        // the groups, so the state was the groups' last owner.
        #expect(tracked.groups.count == 2 && tracked.groups.allSatisfy { $0.group == nil })
        for d in inners.value { d.dispose() }
        inners.withLock { $0 = [] }
    }
}

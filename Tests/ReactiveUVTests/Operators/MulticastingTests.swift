import Testing
@testable import ReactiveUV

/// publish, multicast, connect, autoconnect, replay, replayLast, replayLazily,
/// share(replay:scope:) (catalogue §4h, §8, §19).
@Suite struct MulticastingTests {
    @Test func publishSubscribesNothingUntilConnect() {
        let p = OpProbe()
        let source = Subject<Int>()
        let connection = source.probed(p).publish()
        let a = opRecord(connection.signal), b = opRecord(connection.signal)
        source.sendNext(0)
        #expect(p.subscriptions == 0)
        connection.connect()
        #expect(p.subscriptions == 1)
        source.sendNext(1)
        source.sendCompleted()
        #expect(a.events == [.next(1), .completed])
        #expect(b.events == [.next(1), .completed])
    }

    @Test func connectIsIdempotentAndReturnsTheSameDisposable() {
        let p = OpProbe()
        let connection = Signal<Int>.never().probed(p).publish()
        let d1 = connection.connect()
        let d2 = connection.connect()
        #expect(d1 === d2)
        #expect(p.subscriptions == 1)
    }

    @Test func disposingTheConnectionDisconnectsForGood() {
        let p = OpProbe()
        let source = Subject<Int>()
        let connection = source.probed(p).publish()
        let log = opRecord(connection.signal)
        let d = connection.connect()
        source.sendNext(1)
        d.dispose()
        #expect(p.live == 0)
        source.sendNext(2)
        let d2 = connection.connect()
        #expect(d2 === d && d2.isDisposed)
        #expect(p.subscriptions == 1, "never reconnects")
        source.sendNext(3)
        #expect(log.events == [.next(1)])
    }

    @Test func multicastUsesTheGivenSubject() {
        let replay = ReplaySubject<Int>()
        let connection = Signal.fromArray([1, 2]).multicast(replay)
        connection.connect()
        #expect(opRecord(connection.signal).events == [.next(1), .next(2), .completed])
        #expect(opRecord(replay).events == [.next(1), .next(2), .completed])
    }

    @Test func publishForwardsTheSourceError() {
        let connection = Signal<Int>.error(OpError.boom).publish()
        let log = opRecord(connection.signal)
        connection.connect()
        #expect(log.events == [.error(OpError.boom)])
    }

    @Test func reentrantSendIntoThePublishedSource() {
        let source = Subject<Int>()
        let connection = source.publish()
        var a: [Int] = [], b: [Int] = []
        connection.signal.subscribeNext { [unowned source] v in
            a.append(v)
            if v == 1 { source.sendNext(2) }
        }
        connection.signal.subscribeNext { b.append($0) }
        connection.connect()
        source.sendNext(1)
        #expect(a == [1, 2])
        #expect(b == [2, 1], "nested delivery happens immediately, as in RAC")
    }

    // MARK: autoconnect

    @Test func autoconnectConnectsAtTheFirstSubscriberAndDisconnectsAtZero() {
        let p = OpProbe()
        let source = Subject<Int>()
        let auto = source.probed(p).publish().autoconnect()
        #expect(p.subscriptions == 0)
        let a = opRecord(auto)
        let b = opRecord(auto)
        #expect(p.subscriptions == 1)
        source.sendNext(1)
        a.dispose()
        #expect(p.live == 1)
        source.sendNext(2)
        b.dispose()
        #expect(p.live == 0)
        #expect(a.events == [.next(1)])
        #expect(b.events == [.next(1), .next(2)])
    }

    @Test func autoconnectNeverReconnects() {
        let p = OpProbe()
        let source = Subject<Int>()
        let auto = source.probed(p).publish().autoconnect()
        opRecord(auto).dispose()
        let late = opRecord(auto)
        source.sendNext(1)
        #expect(p.subscriptions == 1)
        #expect(late.events.isEmpty)
    }

    @Test func autoconnectWithAReplaySubjectStillReplaysAfterDisconnecting() {
        let p = OpProbe()
        let source = Subject<Int>()
        let auto = source.probed(p).multicast(ReplaySubject()).autoconnect()
        let a = opRecord(auto)
        source.sendNext(1)
        a.dispose()
        #expect(p.live == 0)
        #expect(opRecord(auto).events == [.next(1)])
        #expect(p.subscriptions == 1)
    }

    @Test func autoconnectOfASynchronousSource() {
        let p = OpProbe()
        let auto = Signal.fromArray([1, 2]).probed(p).publish().autoconnect()
        #expect(opRecord(auto).events == [.next(1), .next(2), .completed])
        #expect(p.live == 0)
    }

    // MARK: replay, replayLast, replayLazily

    @Test func replaySubscribesOnceAtCreationAndReplaysEverything() {
        let p = OpProbe()
        let source = Subject<Int>()
        let replayed = source.probed(p).replay()
        #expect(p.subscriptions == 1)
        source.sendNext(1)
        source.sendNext(2)
        let a = opRecord(replayed)
        source.sendCompleted()
        #expect(a.events == [.next(1), .next(2), .completed])
        #expect(opRecord(replayed).events == [.next(1), .next(2), .completed])
        #expect(p.subscriptions == 1)
    }

    @Test func replayNeverDisconnectsWhenSubscribersLeave() {
        let p = OpProbe()
        let source = Subject<Int>()
        let replayed = source.probed(p).replay()
        opRecord(replayed).dispose()
        #expect(p.live == 1)
        source.sendNext(3)
        #expect(opRecord(replayed).events == [.next(3)])
    }

    @Test func replayReplaysTheError() {
        let replayed = Signal.fromArray([1]).concat(.error(OpError.boom)).replay()
        #expect(opRecord(replayed).events == [.next(1), .error(OpError.boom)])
        #expect(opRecord(replayed).events == [.next(1), .error(OpError.boom)])
    }

    @Test func replayLastReplaysOnlyTheLatestValueAndTheTerminalEvent() {
        let p = OpProbe()
        let source = Subject<Int>()
        let replayed = source.probed(p).replayLast()
        #expect(p.subscriptions == 1)
        source.sendNext(1)
        source.sendNext(2)
        #expect(opRecord(replayed).events == [.next(2)])
        source.sendCompleted()
        #expect(opRecord(replayed).events == [.next(2), .completed])
    }

    @Test func replayLazilySubscribesAtTheFirstSubscriptionAndNeverDisconnects() {
        let p = OpProbe()
        let source = Subject<Int>()
        let replayed = source.probed(p).replayLazily()
        #expect(p.subscriptions == 0)
        let a = opRecord(replayed)
        #expect(p.subscriptions == 1)
        source.sendNext(1)
        a.dispose()
        #expect(p.live == 1)
        source.sendNext(2)
        #expect(opRecord(replayed).events == [.next(1), .next(2)])
        #expect(p.subscriptions == 1)
    }

    @Test func replayLazilyOfASynchronousSourceGivesEverySubscriberEverything() {
        let p = OpProbe()
        let replayed = Signal.fromArray([1, 2]).probed(p).replayLazily()
        #expect(opRecord(replayed).events == [.next(1), .next(2), .completed])
        #expect(opRecord(replayed).events == [.next(1), .next(2), .completed])
        #expect(p.subscriptions == 1)
    }

    // MARK: share(replay:scope:)

    @Test func shareWhileConnectedSharesOneSubscriptionAndReplays() {
        let p = OpProbe()
        let source = Subject<Int>()
        let shared = source.probed(p).share(replay: 1)
        let a = opRecord(shared)
        source.sendNext(1)
        source.sendNext(2)
        let b = opRecord(shared)
        source.sendNext(3)
        #expect(p.subscriptions == 1)
        #expect(a.values == [1, 2, 3])
        #expect(b.values == [2, 3])
        // The last subscriber leaving disconnects (and frees the shared subject, which the
        // live subscriptions and the share's state otherwise hold in a cycle).
        a.dispose()
        #expect(p.live == 1)
        b.dispose()
        #expect(p.live == 0)
    }

    @Test func shareWhileConnectedDisconnectsAtZeroAndRestartsFresh() {
        let p = OpProbe()
        let source = Subject<Int>()
        let shared = source.probed(p).share(replay: 1, scope: .whileConnected)
        let a = opRecord(shared)
        source.sendNext(1)
        a.dispose()
        #expect(p.live == 0)
        let b = opRecord(shared)
        #expect(p.subscriptions == 2, "a later subscriber starts it again")
        #expect(b.events.isEmpty, "with a fresh buffer")
        source.sendNext(2)
        #expect(b.values == [2])
        b.dispose()
        #expect(p.live == 0)
    }

    @Test func shareWhileConnectedRestartsAfterTheSourceCompleted() {
        let p = OpProbe()
        let shared = Signal.fromArray([1, 2]).probed(p).share(replay: 1)
        #expect(opRecord(shared).events == [.next(1), .next(2), .completed])
        #expect(opRecord(shared).events == [.next(1), .next(2), .completed])
        #expect(p.subscriptions == 2)
    }

    @Test func shareForeverStaysConnectedAndReplays() {
        let p = OpProbe()
        let source = Subject<Int>()
        let shared = source.probed(p).share(replay: 2, scope: .forever)
        let a = opRecord(shared)
        source.sendNext(1)
        source.sendNext(2)
        source.sendNext(3)
        a.dispose()
        #expect(p.live == 1, "stays connected")
        #expect(opRecord(shared).values == [2, 3])
        source.sendCompleted()
        #expect(opRecord(shared).events == [.next(2), .next(3), .completed])
        #expect(p.subscriptions == 1)
    }

    @Test func shareWithoutReplayGivesLateSubscribersOnlyLiveValues() {
        let source = Subject<Int>()
        let shared = source.share()
        let a = opRecord(shared)
        source.sendNext(1)
        let b = opRecord(shared)
        source.sendNext(2)
        source.sendError(OpError.boom)
        #expect(a.events == [.next(1), .next(2), .error(OpError.boom)])
        #expect(b.events == [.next(2), .error(OpError.boom)])
    }
}

import Testing
@testable import ReactiveUV

/// Property, MutableProperty, bindings, Lifetime, Channel (catalogue §10, §16, §20).
@Suite struct PropertyTests {
    // MARK: Property, MutableProperty

    @Test func propertySignalSendsTheCurrentValueThenChanges() {
        let p = MutableProperty(value: 1)
        let all = opRecord(p.signal)
        let changes = opRecord(p.changes)
        p.value = 2
        p.value = 3
        #expect(all.values == [1, 2, 3])
        #expect(changes.values == [2, 3])
        #expect(p.value == 3)
    }

    @Test func constantPropertyAndPropertyFromASignal() {
        let constant = Property(value: "c")
        #expect(constant.value == "c")
        #expect(opRecord(constant.signal).values == ["c"])
        let source = Subject<Int>()
        let derived = Property(initial: 0, then: source)
        let log = opRecord(derived.signal)
        source.sendNext(4)
        #expect(derived.value == 4)
        #expect(log.values == [0, 4])
    }

    @Test func propertyCompletesWhenItIsDeallocated() {
        var property: MutableProperty<Int>? = MutableProperty(value: 1)
        let log = opRecord(property!.signal)
        property?.value = 2
        property = nil
        #expect(log.events == [.next(1), .next(2), .completed])
    }

    @Test func readOnlyViewDoesNotEndTheProperty() {
        let p = MutableProperty(value: 1)
        var view: Property<Int>? = Property(p)
        let log = opRecord(view!.signal)
        view = nil
        p.value = 2
        #expect(log.events == [.next(1), .next(2)])
    }

    @Test func modifyUpdatesInPlaceAndSendsOnce() {
        let p = MutableProperty(value: [1])
        let log = opRecord(p.changes)
        p.modify { $0.append(2) }
        #expect(p.value == [1, 2])
        #expect(log.values == [[1, 2]])
    }

    @Test func reentrantSetFromAnObserverIsDeliveredNested() {
        let p = MutableProperty(value: 0)
        var got: [Int] = []
        p.changes.subscribeNext { [unowned p] v in
            got.append(v)
            if v < 0 { p.value = 0 }  // clamp
        }
        p.value = -5
        #expect(got == [-5, 0])
        #expect(p.value == 0)
    }

    @Test func mapAndCombineLatest() {
        let a = MutableProperty(value: 1), b = MutableProperty(value: "x")
        let doubled = a.map { $0 * 2 }
        let both = a.combineLatest(with: b)
        #expect(doubled.value == 2)
        #expect(both.value == (1, "x"))
        let log = opRecord(both.signal)
        a.value = 5
        b.value = "y"
        #expect(doubled.value == 10)
        #expect(both.value == (5, "y"))
        #expect(opPairs(log.events) == [.next("1x"), .next("5x"), .next("5y")])
    }

    @Test func aPropertyFromASignalStopsFollowingItWhenDeallocated() {
        let source = Subject<Int>()
        var derived: Property<Int>? = Property(initial: 0, then: source)
        source.sendNext(1)
        #expect(derived?.value == 1)
        #expect(source.roster.entries.count == 1)
        derived = nil
        #expect(source.roster.entries.isEmpty)
    }

    // MARK: bindings

    @Test func bindSetsTheValueFromASignal() {
        let p = MutableProperty(value: 0)
        let source = Subject<Int>()
        p.bind(to: source)
        source.sendNext(3)
        #expect(p.value == 3)
    }

    @Test func aNewBindingReplacesTheEarlierOne() {
        let p = MutableProperty(value: 0)
        let first = Subject<Int>(), second = Subject<Int>()
        let pf = OpProbe()
        p <~ first.probed(pf)
        first.sendNext(1)
        p <~ second
        #expect(pf.live == 0, "the earlier binding is disposed")
        first.sendNext(2)
        second.sendNext(3)
        #expect(p.value == 3)
    }

    @Test func disposingTheBindingStopsIt() {
        let p = MutableProperty(value: 0)
        let source = Subject<Int>()
        let d = p.bind(to: source)
        d.dispose()
        source.sendNext(9)
        #expect(p.value == 0)
    }

    @Test func deallocatingThePropertyEndsItsBinding() {
        let probe = OpProbe()
        var p: MutableProperty<Int>? = MutableProperty(value: 0)
        p!.bind(to: Signal<Int>.never().probed(probe))
        #expect(probe.live == 1)
        p = nil
        #expect(probe.live == 0)
    }

    // MARK: Lifetime

    @Test func takeUntilLifetimeCompletesWhenTheTokenEnds() {
        let (lifetime, token) = Lifetime.make()
        let source = Subject<Int>()
        let p = OpProbe()
        let log = opRecord(source.probed(p).takeUntil(lifetime))
        source.sendNext(1)
        token.end()
        source.sendNext(2)
        #expect(log.events == [.next(1), .completed])
        #expect(p.live == 0)
        #expect(lifetime.hasEnded)
    }

    @Test func lifetimeEndsWhenTheTokenIsDeallocated() {
        var ended = false
        var extra = false
        let lifetime: Lifetime
        do {
            let (l, token) = Lifetime.make()
            lifetime = l
            lifetime.observeEnded { ended = true }
            lifetime += Disposable { extra = true }
            _ = token
        }
        #expect(ended && extra)
        #expect(lifetime.hasEnded)
    }

    @Test func anEndedLifetimeNeverSubscribes() {
        let (lifetime, token) = Lifetime.make()
        token.end()
        let p = OpProbe()
        #expect(opRecord(Signal.fromArray([1]).probed(p).take(during: lifetime)).events == [.completed])
        #expect(p.subscriptions == 0)
        var late = false
        lifetime.observeEnded { late = true }
        #expect(late, "the end is replayed")
    }

    // MARK: Channel

    @Test func valuesSentToOneTerminalReachTheOthersSubscribers() {
        let channel = Channel<Int>()
        let leading = opRecord(channel.leading)
        let following = opRecord(channel.following)
        channel.leading.sendNext(1)
        channel.following.sendNext(2)
        #expect(following.values == [1])
        #expect(leading.values == [2])
    }

    @Test func followingReplaysTheLatestLeadingValueLeadingReplaysNothing() {
        let channel = Channel<Int>()
        channel.leading.sendNext(1)
        channel.leading.sendNext(2)
        channel.following.sendNext(3)
        #expect(opRecord(channel.following).values == [2])
        #expect(opRecord(channel.leading).values == [])
    }

    @Test func terminalEventsReachBothSidesAndAreReplayed() {
        let channel = Channel<Int>()
        let leading = opRecord(channel.leading)
        let following = opRecord(channel.following)
        channel.following.sendCompleted()
        #expect(leading.events == [.completed])
        #expect(following.events == [.completed])
        #expect(opRecord(channel.leading).events == [.completed])

        let failing = Channel<Int>()
        failing.leading.sendNext(1)
        failing.leading.sendError(OpError.boom)
        #expect(opRecord(failing.following).events == [.next(1), .error(OpError.boom)])
        #expect(opRecord(failing.leading).events == [.error(OpError.boom)])
    }

    @Test func terminalAsSubscriberOfASignal() {
        let channel = Channel<Int>()
        let log = opRecord(channel.following)
        Signal.fromArray([1, 2]).subscribe(channel.leading)
        #expect(log.events == [.next(1), .next(2), .completed])
    }

    @Test func channelTerminalOfAPropertyIsTwoWayWithoutEcho() {
        let p = MutableProperty(value: 1)
        let terminal = p.channelTerminal()
        let log = opRecord(terminal)
        #expect(log.values == [1], "the current value first")
        terminal.sendNext(5)
        #expect(p.value == 5)
        #expect(log.values == [1], "a value from the terminal is not echoed back to it")
        p.value = 7
        #expect(log.values == [1, 7])
    }

    @Test func channelTerminalCompletesWhenThePropertyIsDeallocated() {
        // RAC's RACKVOChannel completes its terminals when the target deallocates, as a
        // property's own signal does (catalogue §16).
        var p: MutableProperty<Int>? = MutableProperty(value: 1)
        let terminal = p!.channelTerminal()
        let log = opRecord(terminal)
        let own = opRecord(p!.signal)
        p = nil
        #expect(own.events == [.next(1), .completed])
        #expect(log.events == [.next(1), .completed])
        
    }

    @Test func aCorrectionMadeWhileTheChannelWritesStillReachesTheTerminal() {
        // The channel must skip only the echo of the value it wrote itself. Here another
        // observer of the property corrects that value (a clamp) while the channel is still
        // writing it: the correction is a genuine change and must reach the terminal, or the
        // two sides of the binding disagree (RACKVOChannel ignores only the next update).
        let p = MutableProperty(value: 0)
        let terminal = p.channelTerminal()
        p.changes.subscribeNext { [unowned p] v in if v < 0 { p.value = 0 } }
        let log = opRecord(terminal)
        terminal.sendNext(-5)
        #expect(p.value == 0)
        #expect(log.values == [0, 0])
        
        p.value = 3
        #expect(log.values.last == 3)
    }

    @Test func twoPropertiesBoundThroughAChannelTerminal() {
        let a = MutableProperty(value: 0)
        let b = MutableProperty(value: 10)
        let terminal = a.channelTerminal()
        let d1 = terminal.subscribeNext { b.value = $0 }
        let d2 = b.changes.subscribe(terminal)
        #expect(b.value == 0)
        a.value = 1
        #expect(b.value == 1)
        b.value = 2
        #expect(a.value == 2)
        d1.dispose()
        d2.dispose()
    }
}

import Testing
@testable import ReactiveUV

/// Disposable, CompoundDisposable, SerialDisposable, ScopedDisposable (catalogue §12, §19).
@Suite struct DisposableTests {
    @Test func blockDisposableRunsItsBlockOnce() {
        var runs = 0
        let d = Disposable { runs += 1 }
        #expect(!d.isDisposed)
        d.dispose()
        d.dispose()
        #expect(runs == 1 && d.isDisposed)
    }

    @Test func plainDisposableFlipsAndDoesNotDisposeOnDeinit() {
        let d = Disposable()
        d.dispose()
        #expect(d.isDisposed)
        var ran = false
        do { _ = Disposable { ran = true } }
        #expect(!ran)
    }

    @Test func disposeFromManyThreadsRunsTheBlockOnce() {
        let runs = Locked(0)
        for _ in 0..<50 {
            let d = Disposable { runs.withLock { $0 += 1 } }
            runOnThreads(4) { _ in d.dispose() }
        }
        #expect(runs.value == 50)
    }

    // MARK: CompoundDisposable

    @Test func compoundDisposesEveryMemberOnce() {
        var runs: [Int] = []
        let c = CompoundDisposable([Disposable { runs.append(1) }])
        c.add(Disposable { runs.append(2) })
        c += Disposable { runs.append(3) }
        c.dispose()
        c.dispose()
        #expect(runs.sorted() == [1, 2, 3])
        #expect(c.isDisposed)
    }

    @Test func compoundWithBlockRunsItOnDispose() {
        var ran = false
        let c = CompoundDisposable { ran = true }
        c.dispose()
        #expect(ran)
    }

    @Test func compoundAddAfterDisposeDisposesAtOnce() {
        let c = CompoundDisposable()
        c.dispose()
        let late = Disposable()
        c.add(late)
        #expect(late.isDisposed)
        c.add(nil)
    }

    @Test func compoundIgnoresNilAndAlreadyDisposedMembers() {
        let c = CompoundDisposable()
        c.add(nil)
        let done = Disposable()
        done.dispose()
        c.add(done)
        #expect(c.members.isEmpty)
    }

    @Test func compoundRemoveDoesNotDispose() {
        let c = CompoundDisposable()
        let d = Disposable()
        c.add(d)
        c.remove(d)
        c.dispose()
        #expect(!d.isDisposed)
        c.remove(Disposable())
    }

    @Test func compoundMembersMayTouchTheCompoundWhileItDisposes() {
        let c = CompoundDisposable()
        let late = Disposable()
        c.add(Disposable {
            c.add(late)
            c.remove(late)
        })
        c.dispose()
        #expect(late.isDisposed)
    }

    @Test func compoundAsALifetimeOfAnInnerSubscription() {
        let c = CompoundDisposable()
        let p = OpProbe()
        c.add(Signal<Int>.never().probed(p).subscribeNext { _ in })
        c.add(Signal<Int>.never().probed(p).subscribeNext { _ in })
        c.dispose()
        #expect(p.subscriptions == 2 && p.live == 0)
    }

    // MARK: SerialDisposable

    @Test func settingTheInnerDoesNotDisposeThePreviousOne() {
        let old = Disposable(), new = Disposable()
        let serial = SerialDisposable(old)
        #expect(serial.inner === old)
        serial.inner = new
        #expect(!old.isDisposed)
        #expect(serial.inner === new)
        serial.dispose()
        #expect(new.isDisposed && !old.isDisposed)
        #expect(serial.inner == nil)
    }

    @Test func serialDisposableBlockInitializerRunsTheBlockWhenDisposed() {
        var runs = 0
        let serial = SerialDisposable { runs += 1 }
        #expect(serial.inner != nil && runs == 0)
        serial.dispose()
        serial.dispose()
        #expect(runs == 1 && serial.isDisposed)
        // RAC's rule: the block is the first inner; swapping it out leaves it unrun.
        var swappedRuns = 0
        let swapped = SerialDisposable { swappedRuns += 1 }
        let old = swapped.swapIn(Disposable())
        swapped.dispose()
        #expect(swappedRuns == 0 && old?.isDisposed == false)
    }

    @Test func settingAnInnerAfterDisposalDisposesItAtOnce() {
        let serial = SerialDisposable()
        serial.dispose()
        let late = Disposable()
        serial.inner = late
        #expect(late.isDisposed)
        #expect(serial.inner == nil)
    }

    @Test func swapInReturnsTheOldInnerUndisposed() {
        let a = Disposable(), b = Disposable()
        let serial = SerialDisposable(a)
        let old = serial.swapIn(b)
        #expect(old === a && !a.isDisposed)
        serial.dispose()
        let c = Disposable()
        #expect(serial.swapIn(c) == nil)
        #expect(c.isDisposed && b.isDisposed)
    }

    @Test func replaceDisposesTheOldInner() {
        let a = Disposable(), b = Disposable()
        let serial = SerialDisposable(a)
        serial.replace(b)
        #expect(a.isDisposed && !b.isDisposed)
        serial.dispose()
        #expect(b.isDisposed)
        let c = Disposable()
        serial.replace(c)
        #expect(c.isDisposed)
    }

    @Test func disposingTheInnerDoesNotDisposeTheSerial() {
        let a = Disposable()
        let serial = SerialDisposable(a)
        a.dispose()
        #expect(!serial.isDisposed)
    }

    // MARK: ScopedDisposable

    @Test func scopedDisposableDisposesOnDeinit() {
        let wrapped = Disposable()
        do { _ = ScopedDisposable(wrapped) }
        #expect(wrapped.isDisposed)
        let other = Disposable()
        do { _ = other.asScopedDisposable() }
        #expect(other.isDisposed)
    }

    @Test func scopedDisposableDisposesExplicitlyOnce() {
        var runs = 0
        let scoped = ScopedDisposable(Disposable { runs += 1 })
        scoped.dispose()
        scoped.dispose()
        #expect(runs == 1 && scoped.isDisposed)
    }

    @Test func scopedDisposableEndsASubscriptionWithItsScope() {
        let p = OpProbe()
        do {
            let scoped = Signal<Int>.never().probed(p).subscribeNext { _ in }.asScopedDisposable()
            #expect(p.live == 1)
            _ = scoped
        }
        #expect(p.live == 0)
    }
}

import Testing
@testable import ReactiveUV

/// Pins the assumption of the subject's two `_fixLifetime` sites: what a send or the
/// subject's end takes out of the roster under its lock (`Subject.sendNext`'s retired
/// lists, `Roster.detachAll`'s entries) is **released only after the unlock**, because
/// releasing a sink can run code (a deinit, a disposal) that takes the roster's lock from
/// another path or sends into the same subject.
///
/// The sink's probe, freed by that release, asks *another thread* to take the roster's lock
/// (a send into the subject; a disposal of the subscription, whose removal locks the
/// roster) and waits for it, bounded. Released after the unlock, the other thread gets the
/// lock at once; released under it, the other thread spins until the wait gives up, and the
/// log says so (the lock is recursive, so doing it on the same thread would prove nothing).
/// 20 seconds is only ever waited on that failure path.
@Suite struct SubjectLateReleaseTests {
    static let patience = 20.0

    /// `Subject.sendNext`: a subscriber that leaves during a send is released with the
    /// retired list, after the unlock; its probe's deinit has another thread send into the
    /// same subject.
    @Test func aListRetiredByASendIsReleasedAfterTheUnlock() {
        let subject = Subject<Int>()
        let log = Locked<[String]>([])
        let threads = Locked<[TestThread]>([])
        let leaving = CompoundDisposable()
        do {
            let probe = DeinitProbe("leaving sink", log: log) { [subject] in
                let sent = Latch()
                threads.withLock { $0.append(TestThread { subject.sendNext(2); sent.countDown() }) }
                log.append(
                    sent.wait(timeout: Self.patience)
                        ? "deinit: another thread's send finished"
                        : "deinit: another thread's send still waited for the lock after \(Int(Self.patience)) s")
            }
            subject.attach({ event in
                _ = probe
                guard case .next(let v) = event else { return }
                log.append("leaving next \(v)")
                leaving.dispose()
            }, leaving)
        }
        let staying = subject.subscribeNext { log.append("staying next \($0)") }
        subject.sendNext(1)
        log.append("send returned")
        for thread in threads.value { thread.join() }
        #expect(log.value == [
            "leaving next 1", "staying next 1",
            "staying next 2", "deinit: another thread's send finished", "deinit leaving sink",
            "send returned",
        ])
        #expect(subject.roster.retired.isEmpty)
        staying.dispose()
    }

    /// `Roster.detachAll` (the subject going away with subscribers left): their entries are
    /// released after the unlock; the probe's deinit has another thread dispose the
    /// subscription, whose removal takes the roster's lock.
    @Test func entriesDetachedWhenTheSubjectGoesAreReleasedAfterTheUnlock() {
        final class WeakSubject: @unchecked Sendable { weak var subject: Subject<Int>? }
        let log = Locked<[String]>([])
        let threads = Locked<[TestThread]>([])
        let lifetime = CompoundDisposable()
        let tracked = WeakSubject()
        do {
            let subject = Subject<Int>()
            tracked.subject = subject
            // The probe holds the subscription, which holds the roster (its removal), which
            // holds the entry, which holds the probe: only `detachAll` breaks that cycle.
            let probe = DeinitProbe("sink", log: log) { [lifetime] in
                let disposed = Latch()
                threads.withLock { $0.append(TestThread { lifetime.dispose(); disposed.countDown() }) }
                log.append(
                    disposed.wait(timeout: Self.patience)
                        ? "deinit: another thread's dispose finished"
                        : "deinit: another thread's dispose still waited for the lock after \(Int(Self.patience)) s")
            }
            subject.attach({ event in
                _ = probe
                if case .next(let v) = event { log.append("next \(v)") }
            }, lifetime)
            subject.sendNext(1)
        }
        log.append("subject freed: \(tracked.subject == nil)")
        for thread in threads.value { thread.join() }
        #expect(log.value == [
            "next 1", "deinit: another thread's dispose finished", "deinit sink", "subject freed: true",
        ])
        #expect(lifetime.isDisposed)
    }

    /// A sink whose release sends into, and subscribes to, the subject on the releasing
    /// thread itself (the lock is free by then, so both work as from anywhere else).
    @Test func aReleasedSinkMaySendIntoAndSubscribeToTheSameSubject() {
        let subject = Subject<Int>()
        let log = Locked<[String]>([])
        let late = Locked<Disposable?>(nil)
        let leaving = CompoundDisposable()
        do {
            let probe = DeinitProbe("leaving sink", log: log) { [subject] in
                let d = subject.subscribeNext { log.append("subscribed in deinit got \($0)") }
                late.withLock { $0 = d }
                subject.sendNext(3)
            }
            subject.attach({ event in
                _ = probe
                if case .next = event { leaving.dispose() }
            }, leaving)
        }
        let staying = subject.subscribeNext { log.append("staying next \($0)") }
        subject.sendNext(1)
        subject.sendNext(4)
        #expect(log.value == [
            "staying next 1", "staying next 3", "subscribed in deinit got 3", "deinit leaving sink",
            "staying next 4", "subscribed in deinit got 4",
        ])
        staying.dispose()
        late.value?.dispose()
    }
}

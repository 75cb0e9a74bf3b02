import Testing
@testable import ReactiveUV

/// Bindings (`MutableProperty.bind(to:)`, `Channel`, `channelTerminal()`) hold what they
/// forward to without a weak reference, so no subject or property gets a side table (which
/// would make every retain and release of it, each value set, a slow runtime call; see
/// `SubjectRosterTests`), and still nothing they hold outlives its owner.
@Suite struct BindingSideTableTests {
    private func hasSideTable(_ object: AnyObject) -> Bool { SubjectRosterTests.hasSideTable(object) }

    @Test func aBoundPropertysSubjectHasNoSideTable() {
        let p = MutableProperty(value: 0)
        let source = Subject<Int>()
        p.bind(to: source)
        source.sendNext(1)
        source.sendNext(2)
        #expect(p.value == 2)
        #expect(!hasSideTable(p.subject))
        #expect(!hasSideTable(p))
    }

    @Test func aChannelsSubjectsHaveNoSideTable() {
        let channel = Channel<Int>()
        let log = opRecord(channel.following)
        channel.leading.sendNext(1)
        #expect(log.values == [1])
        #expect(!hasSideTable(channel.leading.values))
        #expect(!hasSideTable(channel.following.values))
    }

    @Test func aPropertyWithAChannelTerminalHasNoSideTable() {
        let p = MutableProperty(value: 0)
        let terminal = p.channelTerminal()
        terminal.sendNext(5)
        #expect(p.value == 5)
        p.value = 6
        #expect(!hasSideTable(p))
        #expect(!hasSideTable(p.subject))
    }

    /// The unowned references inside a channel do not keep its subjects: with both
    /// terminals gone (after values and a terminal event went through), both subjects are
    /// freed. (Weak references in the test give the subjects side tables; this test is
    /// about lifetime only.)
    @Test func aChannelsSubjectsAreFreedWithItsTerminals() {
        weak var leading: Subject<Int>?
        weak var following: Subject<Int>?
        do {
            let channel = Channel<Int>()
            leading = channel.leading.values
            following = channel.following.values
            let log = opRecord(channel.leading)
            channel.following.sendNext(3)
            channel.following.sendCompleted()
            #expect(log.events == [.next(3), .completed])
        }
        #expect(leading == nil)
        #expect(following == nil)
        do {
            let channel = Channel<Int>()
            leading = channel.leading.values
            following = channel.following.values
            channel.leading.sendNext(1)
        }
        #expect(leading == nil, "a channel that never terminated is freed too")
        #expect(following == nil)
    }

    /// A property's bound signal and channel terminal hold its subject strongly; the
    /// property's `deinit` ends both, so the subject goes with the property.
    @Test func aPropertysSubjectIsFreedWithThePropertyDespiteABindingAndATerminal() {
        weak var subject: BehaviorSubject<Int>?
        let source = Subject<Int>()
        var terminal: Channel<Int>.Terminal?
        do {
            let p = MutableProperty(value: 0)
            subject = p.subject
            p.bind(to: source)
            terminal = p.channelTerminal()
            source.sendNext(1)
            terminal!.sendNext(2)
            #expect(p.value == 2)
        }
        #expect(subject == nil)
        source.sendNext(3)
        terminal!.sendNext(4)
        #expect(subject == nil)
    }
}

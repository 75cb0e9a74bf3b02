import CSystemShims
import Testing

@testable import ReactiveUV

/// Pins the assumption behind `Subject.Roster.lock`: the lock's owner word (a C atomic)
/// and its depth are reached through `_getUnsafePointerToStoredProperties(self)`, which is
/// only right while ``Subject/Roster/lockWords`` is the roster's first stored property,
/// laid out right after the object header. Reordering the roster's properties, or adding
/// one before `lockWords`, breaks these tests instead of every subject's lock.
@Suite("Subject roster layout")
struct SubjectRosterLayoutTests {
    /// Checks one roster: the lock's words are at the header's end, are the Swift property
    /// (its address taken by Swift itself), and what the lock writes Swift reads back.
    static func checkLockWords<Value>(of subject: Subject<Value>, sourceLocation: SourceLocation = #_sourceLocation) {
        let roster = subject.roster
        let object = Unmanaged.passUnretained(roster).toOpaque()
        let lock = roster.lock
        let owner = UnsafeMutableRawPointer(lock.owner.pointer)
        #expect(owner == object + DisposableLayoutTests.headerSize, "\(type(of: subject))", sourceLocation: sourceLocation)
        #expect(UnsafeMutableRawPointer(lock.depth) == owner + MemoryLayout<csys_atomic_int>.stride,
                sourceLocation: sourceLocation)
        withUnsafeMutablePointer(to: &roster.lockWords) { property in
            #expect(UnsafeMutableRawPointer(property) == owner, "\(type(of: subject))", sourceLocation: sourceLocation)
        }
        // Free, then held by this thread (the owner word, written with C's atomics), then
        // held twice (the depth), then free again: each step as the Swift property sees it.
        #expect(roster.lockWords.0.value == 0, sourceLocation: sourceLocation)
        lock.lock()
        let token = Int64(Int(bitPattern: csys_thread_token()))
        #expect(roster.lockWords.0.value == token, sourceLocation: sourceLocation)
        lock.lock()
        let nestedDepth = roster.lockWords.1
        lock.unlock()
        let outerDepth = roster.lockWords.1
        lock.unlock()
        #expect([outerDepth, nestedDepth] == [1, 2], "the re-entry depth is the second word", sourceLocation: sourceLocation)
        #expect(roster.lockWords.0.value == 0, sourceLocation: sourceLocation)
    }

    @Test func everySubjectKindsRosterHasItsLockWordsFirst() {
        Self.checkLockWords(of: Subject<Int>())
        Self.checkLockWords(of: Subject<String>())
        Self.checkLockWords(of: BehaviorSubject(value: [1, 2]) as Subject<[Int]>)
        Self.checkLockWords(of: ReplaySubject<String>(capacity: 3) as Subject<String>)
    }

    @Test func aSendHoldsTheLockTheWordsDescribe() {
        let subject = Subject<Int>()
        let token = Int64(Int(bitPattern: csys_thread_token()))
        var ownerDuringSend: [Int64] = []
        let subscription = subject.subscribeNext { _ in ownerDuringSend.append(subject.roster.lockWords.0.value) }
        subject.sendNext(1)
        subject.sendNext(2)
        subscription.dispose()
        // The send took the lock through C; the owner word Swift reads was this thread's.
        #expect(ownerDuringSend == [token, token])
        #expect(subject.roster.lockWords.0.value == 0)
    }
}

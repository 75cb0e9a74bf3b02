import CSystemShims
import Testing

@testable import ReactiveUV

/// Pins the assumption behind `Disposable.words`: C's atomics reach the three state words
/// through `_getUnsafePointerToStoredProperties(self)`, which is only right while
/// ``Disposable/storage`` is the first stored property of the root class, laid out right
/// after the object header, in every subclass. Reordering the properties, adding one
/// before `storage`, or giving `Disposable` a superclass breaks these tests, not the
/// subscriptions of users at run time.
@Suite("Disposable layout")
struct DisposableLayoutTests {
    /// Where a Swift object's stored properties start: after its header, the isa pointer
    /// and the reference-count word (16 bytes on a 64-bit platform).
    static let headerSize = MemoryLayout<UnsafeRawPointer>.size + MemoryLayout<Int>.size

    /// Checks one object: the words C uses are at the header's end, are the Swift property
    /// (its address taken by Swift itself), and what C writes there Swift reads back in
    /// ``Disposable/storage``. Puts the words back as they were.
    static func checkWords(of disposable: Disposable, sourceLocation: SourceLocation = #_sourceLocation) {
        let object = Unmanaged.passUnretained(disposable).toOpaque()
        let words = UnsafeMutableRawPointer(disposable.words)
        #expect(words == object + headerSize, "\(type(of: disposable))", sourceLocation: sourceLocation)
        withUnsafeMutablePointer(to: &disposable.storage) { property in
            #expect(UnsafeMutableRawPointer(property) == words, "\(type(of: disposable))", sourceLocation: sourceLocation)
        }
        #expect(MemoryLayout<(csys_atomic_int, csys_atomic_int, csys_atomic_int)>.size == 3 * MemoryLayout<Int64>.size)

        let before = (disposable.state.load(), disposable.slotHint.load(), disposable.subclassWord.load())
        csys_atomic_int_store(disposable.state.pointer, 0x51, csys_seq_cst)
        csys_atomic_int_store(disposable.slotHint.pointer, 0x52, csys_seq_cst)
        csys_atomic_int_store(disposable.subclassWord.pointer, 0x53, csys_seq_cst)
        let seen = disposable.storage
        #expect([seen.0.value, seen.1.value, seen.2.value] == [0x51, 0x52, 0x53], "\(type(of: disposable))",
                sourceLocation: sourceLocation)
        disposable.state.store(before.0, csys_seq_cst)
        disposable.slotHint.store(before.1, csys_seq_cst)
        disposable.subclassWord.store(before.2, csys_seq_cst)
    }

    @Test func aPlainDisposablesWordsAreItsFirstStoredProperty() {
        let disposable = Disposable {}
        Self.checkWords(of: disposable)
        // The state word as the Swift API sees it: the disposed bit set through C is
        // what `isDisposed` reports.
        #expect(!disposable.isDisposed)
        csys_atomic_int_fetch_or(disposable.state.pointer, Int64(Disposable.disposedBit), csys_seq_cst)
        #expect(disposable.isDisposed)
        #expect(disposable.storage.0.value & Int64(Disposable.disposedBit) != 0)
    }

    @Test func everySubclassKeepsTheWordsAtTheStartOfItsStoredProperties() {
        Self.checkWords(of: CompoundDisposable())
        Self.checkWords(of: SerialDisposable())
        Self.checkWords(of: ScopedDisposable(Disposable()))
        // A subclass with stored properties of its own, declared in another file and
        // generic: its fields come after the root class's.
        Self.checkWords(of: BlockSubscriber<String>(next: { _ in }, error: nil, completed: nil))
    }

    @Test func aCompoundDisposablesSlotHintIsTheWordCWrites() {
        let bag = CompoundDisposable()
        let first = Disposable()
        let second = Disposable()
        #expect(second.storage.1.value == -1, "no slot before it is added anywhere")
        bag.add(first)
        bag.add(second)
        // `add` records where each member sits in word 1, through C; Swift reads it back.
        #expect([first.storage.1.value, second.storage.1.value] == [0, 1])
        let member = second
        bag.dispose()
        #expect(member.isDisposed)
        #expect(member.storage.0.value & Int64(Disposable.disposedBit) != 0)
    }
}

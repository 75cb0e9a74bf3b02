import Testing
@testable import ReactiveUV

/// RAC's `+disposableWithBlock:`, which every RAC disposable class inherits, spelled with a
/// trailing closure on every disposable type (issue 32 §4): each compiles and means "a
/// disposable that runs this block", once, when disposed (a scoped one also when it goes
/// out of scope).
@Suite struct DisposableBlockInitializerTests {
    @Test func everyDisposableTypeTakesABlockThatRunsOnceWhenDisposed() {
        var ran: [String] = []
        let plain = Disposable { ran.append("plain") }
        let serial = SerialDisposable { ran.append("serial") }
        let compound = CompoundDisposable { ran.append("compound") }
        let scoped = ScopedDisposable { ran.append("scoped") }
        #expect(ran.isEmpty)
        for d in [plain, serial, compound, scoped] {
            d.dispose()
            d.dispose()
            #expect(d.isDisposed)
        }
        #expect(ran == ["plain", "serial", "compound", "scoped"])
    }

    @Test func aScopedDisposableWithABlockRunsItWhenItGoesAway() {
        var ran = 0
        do {
            let scope = ScopedDisposable { ran += 1 }
            _ = scope
        }
        #expect(ran == 1)
    }

    @Test func aSerialDisposableOfABlockLeavesItUnrunWhenSwappedAsRACDoes() {
        var ran = 0
        let serial = SerialDisposable { ran += 1 }
        let first = serial.swapIn(Disposable {})
        serial.dispose()
        #expect(ran == 0)
        first?.dispose()
        #expect(ran == 1)
    }
}

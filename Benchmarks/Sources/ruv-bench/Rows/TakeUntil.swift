import OpenCombine
import ReactiveUV

// Values pushed through subject → takeUntil(a trigger that never fires) → sink: the per-value
// cost of an operator that guards a subscription's end (RAC's `takeUntil(rac_willDeallocSignal)`
// idiom, on nearly every binding), with the signal subscribed where its class is not known.

extension Row {
    static let takeUntil = Row(
        name: "takeuntil",
        title: "subject→takeUntil(trigger)→sink (10M values)",
        unit: "value",
        size: 10_000_000,
        reactiveUV: TakeUntil.reactiveUV,
        openCombine: TakeUntil.openCombine,
        baseline: TakeUntil.baseline
    )
}

enum TakeUntil {
    static func reactiveUV(_ n: Int) -> Int {
        let subject = ReactiveUV.Subject<Int>()
        let trigger = ReactiveUV.Subject<Void>()
        var sum = 0
        let subscription = subject.takeUntil(trigger).subscribeNext { sum &+= $0 }
        for i in 0..<n { subject.sendNext(i) }
        trigger.sendNext(())
        subject.sendNext(1)  // after the trigger: not counted
        subscription.dispose()
        return sum
    }

    static func openCombine(_ n: Int) -> Int {
        let subject = PassthroughSubject<Int, Never>()
        let trigger = PassthroughSubject<Void, Never>()
        var sum = 0
        let cancellable = subject.prefix(untilOutputFrom: trigger).sink { sum &+= $0 }
        for i in 0..<n { subject.send(i) }
        trigger.send(())
        subject.send(1)
        cancellable.cancel()
        return sum
    }

    /// A forwarding closure that checks a flag the trigger would set, then the sink.
    static func baseline(_ n: Int) -> Int {
        var sum = 0
        var done = false
        let sink: (Int) -> Void = opaque { sum &+= $0 }
        let guarded: (Int) -> Void = opaque { if !done { sink($0) } }
        for i in 0..<n { guarded(i) }
        done = true
        guarded(1)
        return sum
    }
}

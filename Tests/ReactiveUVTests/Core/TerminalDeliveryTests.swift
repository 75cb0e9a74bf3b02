import CSystemShims
import Testing
@testable import ReactiveUV

/// A terminal event closes a block subscription in one step (gate and disposed bit
/// together) and disposes its resources after the callback; under a race with `dispose()`
/// from another thread, the resources are disposed exactly once and no callback starts
/// after `dispose()` returns.
@Suite struct TerminalDeliveryTests {
    /// As in RAC (whose subscriber disposes before it calls the block), the subscription
    /// reads as disposed inside its completed block, and a resource added from there is
    /// disposed at once; the source's own disposable is disposed right after the block.
    @Test func theSubscriptionReadsAsDisposedInsideItsCompletedBlockAndWhatItAddsThereIsDisposedAtOnce() {
        let source = LoggingSource()
        var subscription: Disposable?
        subscription = source.signal.subscribe(completed: {
            source.log.append("completed, disposed: \(subscription!.isDisposed)")
            source.subscriber!.disposable.add(Disposable { source.log.append("added inside disposed") })
            source.log.append("completed block returns")
        })
        #expect(subscription!.isDisposed == false)
        source.subscriber!.sendCompleted()
        #expect(source.log == [
            "completed, disposed: true", "added inside disposed", "completed block returns", "source disposed",
        ])
        #expect(subscription!.isDisposed)
    }

    /// The same for an error, and a second terminal event is dropped.
    @Test func anErrorClosesOnceAndALaterTerminalEventIsDropped() {
        let source = LoggingSource()
        var subscription: Disposable?
        subscription = source.signal.subscribe(
            error: { _ in source.log.append("error, disposed: \(subscription!.isDisposed)") },
            completed: { source.log.append("completed") })
        source.subscriber!.sendError(SignalError.timedOut)
        source.subscriber!.sendCompleted()
        subscription!.dispose()
        #expect(source.log == ["error, disposed: true", "source disposed"])
    }

    /// A source that keeps its subscriber (to send into later) and logs its disposal.
    final class LoggingSource {
        var log: [String] = []
        var subscriber: Subscriber<Int>?
        var signal: Signal<Int> {
            Signal.create { [unowned self] s in
                subscriber = s
                return Disposable { [unowned self] in log.append("source disposed") }
            }
        }
    }

    /// A completion sent on one thread while another disposes: in every round the
    /// source's disposable runs exactly once, the completed block at most once, and never
    /// starts after `dispose()` has returned.
    @Test func aCompletionRacingDisposeFromAnotherThreadDisposesTheSourceOnceAndStartsNothingLate() {
        let rounds = 2_000
        var completions = 0
        for round in 0..<rounds {
            let sourceDisposals = SharedBox(csys_atomic_int(value: 0))
            let completed = SharedBox(csys_atomic_int(value: 0))
            let late = SharedBox(csys_atomic_int(value: 0))
            let disposeReturned = SharedBox(csys_atomic_bool(value: false))
            let ready = SharedBox(csys_atomic_int(value: 0))
            let source = SharedBox<Subscriber<Int>?>(nil)
            let subscription = Signal<Int>.create { s in
                source.value = s
                return Disposable { csys_atomic_int_fetch_add(&sourceDisposals.value, 1, csys_seq_cst) }
            }.subscribe(completed: {
                if csys_atomic_bool_load(&disposeReturned.value, csys_seq_cst) {
                    csys_atomic_int_fetch_add(&late.value, 1, csys_seq_cst)
                }
                csys_atomic_int_fetch_add(&completed.value, 1, csys_seq_cst)
            })
            let sender = source.value!
            let join = startThread {
                csys_atomic_int_fetch_add(&ready.value, 1, csys_seq_cst)
                while csys_atomic_int_load(&ready.value, csys_seq_cst) < 2 {}
                sender.sendCompleted()
            }
            csys_atomic_int_fetch_add(&ready.value, 1, csys_seq_cst)
            while csys_atomic_int_load(&ready.value, csys_seq_cst) < 2 {}
            // A delay that varies by round, so that both orders (and the overlaps between
            // them) occur: the completion winning, dispose winning, one inside the other.
            for _ in 0..<(round % 64) * 8 { csys_atomic_int_fetch_add(&ready.value, 0, csys_relaxed) }
            subscription.dispose()
            csys_atomic_bool_store(&disposeReturned.value, true, csys_seq_cst)
            join()
            #expect(csys_atomic_int_load(&sourceDisposals.value, csys_seq_cst) == 1, "round \(round)")
            #expect(csys_atomic_int_load(&completed.value, csys_seq_cst) <= 1, "round \(round)")
            #expect(csys_atomic_int_load(&late.value, csys_seq_cst) == 0, "round \(round)")
            #expect(subscription.isDisposed, "round \(round)")
            completions += Int(csys_atomic_int_load(&completed.value, csys_seq_cst))
        }
        // Both outcomes are legal; report the mix so a run that never raced is visible.
        print("TerminalDeliveryTests: completed block ran in \(completions) of \(rounds) rounds")
    }
}

// KNOWN LIBRARY BUGS found by the seed conformance tests.
//
// Each test states the contract (shared/SEED-CASES.md, shared/RAC2-CATALOGUE.md). XCTest on
// Linux has no `XCTExpectFailure`, so the main-loop ones use `XCTAssertKnownBug`: the test
// passes while the bug shows, prints what it observed, and *fails* once the contract holds,
// asking to be moved back into its seed file (Swift Testing ones would use
// `withKnownIssue`, which behaves the same way).
//
// (Bugs 1–3 of earlier rounds — zip/combineLatest sharing one lifetime among their sources,
// deliverOn/deliverOnMainThread/delay losing a create source's queued events, startLazily's
// order in S08, and Command's enabled never computed for a completing enabled signal — were
// fixed on main in 90e91c5; their tests are back in the seed files.)
//
// Bug 4 — `Command.enabled` never completes when the command is deallocated.
//   Catalogue §9: `enabled` "completes when the command is deallocated even if
//   `enabledSignal` has not" (RAC: `RACObserve(self, …)` and `rac_willDeallocSignal` end
//   both inputs of its combineLatest). In Command/Command.swift, `deinit` completes
//   `deallocated` (ending `enabledSource`) and `addedExecutionSignals`, but
//   `moreExecutionsAllowed = Signal.if(allows, …)` switches over `allowsConcurrentSubject`,
//   a `BehaviorSubject` that is never completed, so the `combineLatest` behind
//   `immediateEnabled` (and `enabled`) never completes. Suggested fix: complete
//   `allowsConcurrentSubject` in `deinit` too (the inner `immediateExecuting.not()`
//   completes once `addedExecutionSignals` has), or end `immediateEnabled` with
//   `takeUntil(deallocated)`.

import ReactiveUV
import XCTest

final class KnownBugsMainLoopSeedTests: XCTestCase {
    /// Bug 4 (K07/K08's `enabled`): after the command is released, `enabled` should send
    /// completed (its completion travels through the main loop).
    func testK07_enabledCompletesOnDeallocation() {
        let log = SeedLog()
        // An enabled signal that never completes: only the deallocation can end `enabled`.
        var command: Command<Int, Int>? = Command<Int, Int>(enabled: Signal.return(true).concat(.never())) {
            Signal.return($0)
        }
        weak var weakCommand = command
        command!.enabled.subscribe(next: { log("enabled \($0)") }, completed: { log("enabled completed") })
        command = nil
        XCTAssertNil(weakCommand, "the command should be deallocated once released")
        // Give the completion its chance on the main loop (bounded; it never comes today).
        _ = Seeds.runMain(until: "enabled completed", in: log, timeout: 1)
        Seeds.drainMain()
        XCTAssertKnownBug(
            log.entries, contract: ["enabled true", "enabled completed"],
            "bug 4: Command.enabled does not complete when the command is deallocated")
    }
}

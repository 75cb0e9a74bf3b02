// Seed cases K01–K11 (shared/seeds/rac-command.txt, RACCommand). `execute` subscribes to the
// execution on `Scheduler.main` asynchronously, and `executionSignals`, `errors`, `executing`
// and `enabled` (after its first value) deliver on the main loop: so these are XCTest cases
// (the main thread) that run `EventLoop.main` until the expected events arrive, then drain it
// so that anything arriving late would show up in the log too.

import ReactiveUV
import XCTest

/// The article's `ret(x)`: `[RACSignal return:x]`.
private func ret<V>(_ value: V) -> Signal<V> { Signal.return(value) }

/// Fails, instead of letting `execute` block forever in its enabled check, when
/// `command.enabled` does not answer synchronously on subscription as the contract says
/// (a regression seen once: a completing enabled signal left it silent).
private func assertUsable<I, O>(_ command: Command<I, O>, file: StaticString = #filePath, line: UInt = #line) -> Bool {
    var answered = false
    command.enabled.take(1).subscribeNext { _ in answered = true }
    if !answered { XCTFail("command.enabled sent no value on subscription ): not executing", file: file, line: line) }
    return answered
}

/// How the tests log an error: `notEnabled` by its message, seed errors by domain and code.
private func describe(_ error: any Error) -> String {
    if let e = error as? CommandError, e.isNotEnabled { return "notEnabled(\(e))" }
    return "\(error)"
}

/// Records an execution's events as `"<name> next(v)"`, `"<name> error(…)"`, `"<name> completed"`,
/// each with the thread it arrived on.
@discardableResult
private func recordExecution<V>(_ signal: Signal<V>, _ name: String, into log: SeedLog) -> Disposable {
    signal.subscribe(
        next: { log("\(name) next(\($0))\(Seeds.thread)") },
        error: { log("\(name) error(\(describe($0)))\(Seeds.thread)") },
        completed: { log("\(name) completed\(Seeds.thread)") })
}

final class CommandSeedTests: XCTestCase {
    /// K01 (**note**: the contract wins over the article's log): `ret(true)` keeps the
    /// command enabled, so the execution delivers `hehe`.
    func testK01_executeEnabled() {
        let log = SeedLog()
        let command = Command<Int?, String>(enabled: ret(true)) { _ in
            log("block")
            return ret("hehe")
        }
        guard assertUsable(command) else { return }
        recordExecution(command.execute(nil), "execute", into: log)
        XCTAssertTrue(Seeds.runMain(until: "execute completed @main", in: log))
        Seeds.drainMain()
        XCTAssertEqual(log.entries, ["block", "execute next(hehe) @main", "execute completed @main"])
    }

    /// K01 without an enabled signal (RAC's `initWithSignalBlock:`): enabled by default.
    func testK01_executeEnabledByDefault() {
        let log = SeedLog()
        let command = Command<Int, Int> { ret($0 * 10) }
        guard assertUsable(command) else { return }
        recordExecution(command.execute(4), "execute", into: log)
        XCTAssertTrue(Seeds.runMain(until: "execute completed @main", in: log))
        XCTAssertEqual(log.entries, ["execute next(40) @main", "execute completed @main"])
    }

    /// K01 with a `create` enabled signal that sends `true` and completes: `enabled` answers
    /// `true` at once and the execution runs.
    func testK01_executeEnabled_createEnabledSignal() {
        let log = SeedLog()
        let enabledSignal = Signal<Bool>.create { s in
            s.sendNext(true)
            s.sendCompleted()
            return nil
        }
        let command = Command<Int, Int>(enabled: enabledSignal) { ret($0) }
        command.enabled.subscribeNext { log("enabled \($0)\(Seeds.thread)") }
        XCTAssertEqual(log.entries, ["enabled true @main"])
        guard assertUsable(command) else { return }
        recordExecution(command.execute(7), "execute", into: log)
        XCTAssertTrue(Seeds.runMain(until: "execute completed @main", in: log))
        Seeds.drainMain()
        XCTAssertEqual(log.entries.filter { $0.hasPrefix("execute") }, ["execute next(7) @main", "execute completed @main"])
    }

    func testK02_executeError() {
        let log = SeedLog()
        var failure: (any Error)?
        let command = Command<Int?, String>(enabled: ret(true)) { _ in Signal.error(SeedError("test", code: 1)) }
        guard assertUsable(command) else { return }
        command.execute(nil).subscribe(
            next: { log("next(\($0))") },
            error: { e in
                failure = e
                log("error\(Seeds.thread)")
            },
            completed: { log("completed") })
        XCTAssertTrue(Seeds.runMain(until: "error @main", in: log))
        Seeds.drainMain()
        XCTAssertEqual(log.entries, ["error @main"])
        XCTAssertEqual(failure as? SeedError, SeedError("test", code: 1))
    }

    func testK03_executionSignals() {
        let log = SeedLog()
        let command = Command<Int, Int> { ret($0) }
        guard assertUsable(command) else { return }
        command.allowsConcurrentExecution = true
        recordExecution(command.execute(0), "eS0", into: log)
        command.executionSignals.subscribeNext { inner in
            log("executionSignals inner\(Seeds.thread)")
            inner.subscribeNext { log("inner next(\($0))\(Seeds.thread)") }
        }
        recordExecution(command.execute(1), "eS1", into: log)
        recordExecution(command.execute(2), "eS2", into: log)
        XCTAssertTrue(Seeds.runMain(until: "inner next(2) @main", in: log))
        Seeds.drainMain()
        XCTAssertEqual(log.entries.filter { !$0.hasSuffix("completed @main") }, [
            "eS0 next(0) @main",
            "executionSignals inner @main", "eS1 next(1) @main", "inner next(1) @main",
            "executionSignals inner @main", "eS2 next(2) @main", "inner next(2) @main",
        ])
    }

    func testK04_executionSignalsWithError() {
        let log = SeedLog()
        let command = Command<Int, Int> { _ in Signal.error(SeedError("executionSignals1", code: 0)) }
        guard assertUsable(command) else { return }
        command.allowsConcurrentExecution = true
        command.executionSignals.subscribeNext { inner in
            log("executionSignals inner\(Seeds.thread)")
            recordExecution(inner, "inner", into: log)
        }
        recordExecution(command.execute(0), "eS0", into: log)
        XCTAssertTrue(Seeds.runMain(until: "inner completed @main", in: log))
        Seeds.drainMain()
        // The inner has its error caught: it completes empty. The execution itself fails.
        XCTAssertEqual(log.entries, [
            "executionSignals inner @main", "eS0 error(SeedError(executionSignals1, 0)) @main", "inner completed @main",
        ])
    }

    func testK05_errors() {
        let log = SeedLog()
        let command = Command<Int, Int> { _ in Signal.error(SeedError("executionSignals1", code: 0)) }
        guard assertUsable(command) else { return }
        command.allowsConcurrentExecution = true
        command.errors.subscribeNext { log("errors next(\($0))\(Seeds.thread)") }
        let eS0 = command.execute(0)
        recordExecution(eS0, "eS0", into: log)
        eS0.materialize().subscribeNext { log("materialize \($0)\(Seeds.thread)") }
        XCTAssertTrue(Seeds.runMain(until: "errors next(SeedError(executionSignals1, 0)) @main", in: log))
        Seeds.drainMain()
        XCTAssertEqual(log.entries, [
            "eS0 error(SeedError(executionSignals1, 0)) @main",
            "materialize error(SeedError(executionSignals1, 0)) @main",
            "errors next(SeedError(executionSignals1, 0)) @main",
        ])
    }

    func testK06_executing() {
        let log = SeedLog()
        let command = Command<Int, Int> { ret($0) }
        guard assertUsable(command) else { return }
        command.allowsConcurrentExecution = true
        command.executing.subscribeNext { log("executing \($0)\(Seeds.thread)") }
        recordExecution(command.execute(1), "1", into: log)
        recordExecution(command.execute(0), "0", into: log)
        XCTAssertTrue(EventLoop.main.run(until: { log.count(of: "executing false @main") == 2 }, timeout: 10))
        Seeds.drainMain()
        XCTAssertEqual(log.entries, [
            "executing false @main", "executing true @main",
            "1 next(1) @main", "1 completed @main", "0 next(0) @main", "0 completed @main",
            "executing false @main",
        ])
    }

    func testK07_enabledFalse() {
        let log = SeedLog()
        var called = 0
        let command = Command<Int, Int>(enabled: ret(false)) { v in
            called += 1
            return ret(v)
        }
        guard assertUsable(command) else { return }
        command.allowsConcurrentExecution = true
        command.enabled.subscribeNext { log("enabled \($0)\(Seeds.thread)") }
        recordExecution(command.execute(1), "1", into: log)
        recordExecution(command.execute(0), "0", into: log)
        Seeds.drainMain()
        let notEnabled = "notEnabled(The command is disabled and cannot be executed)"
        XCTAssertEqual(log.entries, ["enabled false @main", "1 error(\(notEnabled)) @main", "0 error(\(notEnabled)) @main"])
        XCTAssertEqual(called, 0)
    }

    func testK08_enabledWithoutConcurrency() {
        let log = SeedLog()
        let command = Command<Int, Int>(enabled: ret(true)) { ret($0) }
        guard assertUsable(command) else { return }
        command.allowsConcurrentExecution = false
        command.enabled.subscribeNext { log("enabled \($0)\(Seeds.thread)") }
        recordExecution(command.execute(1), "1", into: log)
        recordExecution(command.execute(0), "0", into: log)
        XCTAssertTrue(EventLoop.main.run(until: { log.count(of: "enabled true @main") == 2 }, timeout: 10))
        Seeds.drainMain()
        XCTAssertEqual(log.entries, [
            "enabled true @main",
            "0 error(notEnabled(The command is disabled and cannot be executed)) @main",
            "enabled false @main", "1 next(1) @main", "1 completed @main", "enabled true @main",
        ])
    }

    func testK09_errorsSequence() {
        let log = SeedLog()
        let command = Command<Int, Int> { input in
            switch input {
            case 0: return Signal.error(SeedError("NSURLErrorDomain", code: 0))
            case 1: return Signal.error(SeedError("NSURLErrorDomain", code: 1))
            default: return ret(input)
            }
        }
        guard assertUsable(command) else { return }
        command.allowsConcurrentExecution = true
        command.errors.subscribeNext { log("errors \($0)\(Seeds.thread)") }
        command.execute(0)
        command.execute(2)
        command.execute(1)
        XCTAssertTrue(EventLoop.main.run(until: { log.entries.count == 2 }, timeout: 10))
        Seeds.drainMain()
        XCTAssertEqual(log.entries, [
            "errors SeedError(NSURLErrorDomain, 0) @main", "errors SeedError(NSURLErrorDomain, 1) @main",
        ])
    }

    func testK10_allowsConcurrentExecution_true() {
        let log = SeedLog()
        let command = Command<Int, Int> { ret($0) }
        guard assertUsable(command) else { return }
        command.allowsConcurrentExecution = true
        command.execute(0).subscribeNext { log("allowsConcurrentExecution \($0)") }
        command.execute(1).subscribeNext { log("allowsConcurrentExecution \($0)") }
        XCTAssertTrue(EventLoop.main.run(until: { log.entries.count == 2 }, timeout: 10))
        Seeds.drainMain()
        XCTAssertEqual(log.entries, ["allowsConcurrentExecution 0", "allowsConcurrentExecution 1"])
    }

    func testK10_allowsConcurrentExecution_false() {
        let log = SeedLog()
        let command = Command<Int, Int> { ret($0) }
        guard assertUsable(command) else { return }
        command.allowsConcurrentExecution = false
        recordExecution(command.execute(0), "0", into: log)
        recordExecution(command.execute(1), "1", into: log)
        XCTAssertTrue(Seeds.runMain(until: "0 completed @main", in: log))
        Seeds.drainMain()
        XCTAssertEqual(log.entries, [
            "1 error(notEnabled(The command is disabled and cannot be executed)) @main",
            "0 next(0) @main", "0 completed @main",
        ])
    }

    func testK11_notEnabledError() {
        let command = Command<Int, Int>(enabled: ret(false)) { ret($0) }
        guard assertUsable(command) else { return }
        var failure: (any Error)?
        command.execute(1).subscribeError { failure = $0 }
        guard let error = failure as? CommandError else {
            return XCTFail("expected CommandError.notEnabled, got \(String(describing: failure))")
        }
        XCTAssertTrue(error.isNotEnabled)
        XCTAssertEqual(error.description, "The command is disabled and cannot be executed")
        XCTAssertTrue(error.command === command)
        if case .notEnabled(let carried) = error {
            XCTAssertTrue(carried === command)
        } else {
            XCTFail("expected .notEnabled")
        }
    }

    // MARK: Contract details behind the K cases (RAC2-CATALOGUE §9, §19.12)

    /// K06: an execution that fails ends `executing` too.
    func testK06_executing_endsOnError() {
        let log = SeedLog()
        let command = Command<Int, Int> { _ in Signal.error(SeedError()) }
        guard assertUsable(command) else { return }
        command.executing.subscribeNext { log("executing \($0)\(Seeds.thread)") }
        recordExecution(command.execute(1), "1", into: log)
        XCTAssertTrue(EventLoop.main.run(until: { log.count(of: "executing false @main") == 2 }, timeout: 10))
        Seeds.drainMain()
        XCTAssertEqual(log.entries, [
            "executing false @main", "executing true @main", "1 error(SeedError(test, 1)) @main", "executing false @main",
        ])
    }

    /// K05: `errors` is connected at init, so an execution started before anyone subscribed
    /// to `errors` still reports its error there if it fails after the subscription.
    func testK05_errors_connectedAtInit() {
        let log = SeedLog()
        let command = Command<Int, Int> { _ in Signal.error(SeedError("late", code: 5)) }
        guard assertUsable(command) else { return }
        command.execute(0)  // runs on the main loop, later
        command.errors.subscribeNext { log("errors next(\($0))\(Seeds.thread)") }
        XCTAssertTrue(Seeds.runMain(until: "errors next(SeedError(late, 5)) @main", in: log))
        Seeds.drainMain()
        XCTAssertEqual(log.entries, ["errors next(SeedError(late, 5)) @main"])
    }

    /// K03 (catalogue §9): `executionSignals` completes, on the main thread, when the
    /// command is deallocated.
    func testK03_executionSignalsCompleteOnDeallocation() {
        let log = SeedLog()
        var command: Command<Int, Int>? = Command<Int, Int> { ret($0) }
        guard assertUsable(command!) else { return }
        weak let weakCommand = command
        command!.executionSignals.subscribe(completed: { log("executionSignals completed\(Seeds.thread)") })
        command = nil
        XCTAssertNil(weakCommand, "the command should be deallocated once released")
        XCTAssertTrue(Seeds.runMain(until: "executionSignals completed @main", in: log))
        XCTAssertEqual(log.entries, ["executionSignals completed @main"])
    }

    /// K07 (catalogue §9): `enabled` completes when the command is deallocated, even if the
    /// enabled signal never does.
    func testK07_enabledCompletesOnDeallocation() {
        let log = SeedLog()
        var command: Command<Int, Int>? = Command<Int, Int>(enabled: Signal.return(true).concat(.never())) {
            Signal.return($0)
        }
        weak let weakCommand = command
        command!.enabled.subscribe(next: { log("enabled \($0)") }, completed: { log("enabled completed") })
        command = nil
        XCTAssertNil(weakCommand, "the command should be deallocated once released")
        XCTAssertTrue(Seeds.runMain(until: "enabled completed", in: log))
        Seeds.drainMain()
        XCTAssertEqual(log.entries, ["enabled true", "enabled completed"])
    }
}

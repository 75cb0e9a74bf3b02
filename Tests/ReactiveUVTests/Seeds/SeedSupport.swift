// Shared helpers of the seed conformance tests (shared/SEED-CASES.md): an ordered,
// thread-safe log of what a case observed, the seeds' `sync` signal, and an error type that
// stands in for the articles' NSErrors (domain + code).

import CSystemShims
import Glibc
import ReactiveUV
import Synchronization
import XCTest

/// An ordered log of observations, safe to append to from any thread (background schedulers
/// and the main loop both write into it). Tests assert on `entries`, never on counters alone.
final class SeedLog: Sendable {
    private let storage = Mutex<[String]>([])

    init() {}

    /// Appends one line.
    func callAsFunction(_ line: String) {
        storage.withLock { $0.append(line) }
    }

    /// Everything logged so far, in order.
    var entries: [String] { storage.withLock { $0 } }

    /// How many lines equal `line`.
    func count(of line: String) -> Int { entries.filter { $0 == line }.count }
}

/// The articles' `NSError(domain:code:)`.
struct SeedError: Error, Equatable, CustomStringConvertible {
    let domain: String
    let code: Int

    init(_ domain: String = "test", code: Int = 1) {
        self.domain = domain
        self.code = code
    }

    var description: String { "SeedError(\(domain), \(code))" }
}

enum Seeds {
    /// The seeds' `sync`: a cold signal that sends 0, 1 and completes.
    static func sync() -> Signal<Int> {
        Signal.create { s in
            for i in 0..<2 { s.sendNext(i) }
            s.sendCompleted()
            return nil
        }
    }

    /// `sync`, with its values as strings (for cases that mix it with string signals).
    static func syncStrings() -> Signal<String> { sync().map { String($0) } }

    /// Subscribes and logs every event as `prefix + "next(v)"`, `"error(e)"`, `"completed"`.
    @discardableResult
    static func record<V>(_ signal: Signal<V>, into log: SeedLog, prefix: String = "") -> Disposable {
        signal.subscribe(
            next: { log("\(prefix)next(\($0))") },
            error: { log("\(prefix)error(\($0))") },
            completed: { log("\(prefix)completed") })
    }
}

extension Seeds {
    /// The seeds' `async(d, on)`: a cold signal that sends "start", then after `delay`
    /// seconds on `scheduler` sends "end" and completes. Disposal cancels the timer.
    static func async(_ delay: Double, on scheduler: Scheduler) -> Signal<String> {
        Signal.create { s in
            s.sendNext("start")
            return scheduler.afterDelay(delay) {
                s.sendNext("end")
                s.sendCompleted()
            }
        }
    }

    /// Like ``record(_:into:prefix:)``, with each event stamped with `clock`'s time
    /// (`"[2.5s] next(end)"`): for virtual time on a `TestScheduler`.
    @discardableResult
    static func record<V>(_ signal: Signal<V>, into log: SeedLog, clock: Scheduler, prefix: String = "") -> Disposable {
        signal.subscribe(
            next: { log("[\(clock.now)] \(prefix)next(\($0))") },
            error: { log("[\(clock.now)] \(prefix)error(\($0))") },
            completed: { log("[\(clock.now)] \(prefix)completed") })
    }

    /// `" @main"` when called on the main thread, `" @other"` elsewhere.
    static var thread: String { csys_thread_is_main() ? " @main" : " @other" }

    /// Waits (off the main loop: Swift Testing threads) until `condition` holds, polling
    /// every millisecond, at most `timeout` seconds. Returns whether it held.
    static func wait(timeout: Double = 10, until condition: () -> Bool) -> Bool {
        let deadline = SchedulerTime.monotonicNow.advanced(by: timeout)
        while !condition() {
            if SchedulerTime.monotonicNow >= deadline { return condition() }
            usleep(1000)
        }
        return true
    }

    /// Waits until every block queued on the serial `scheduler` so far has run (a marker
    /// block scheduled now runs after them), at most `timeout` seconds, off the main loop.
    static func drain(_ scheduler: Scheduler, timeout: Double = 10) -> Bool {
        let marker = SeedLog()
        scheduler.schedule { marker("ran") }
        return wait(timeout: timeout) { !marker.entries.isEmpty }
    }

    /// On the main thread (XCTest): runs the main loop until every block queued on
    /// `Scheduler.main` so far has run, `rounds` times over (blocks queued by those blocks
    /// are covered by the next round). Each round is bounded by `timeout` seconds.
    @discardableResult
    static func drainMain(rounds: Int = 3, timeout: Double = 10) -> Bool {
        for _ in 0..<rounds {
            let marker = SeedLog()
            Scheduler.main.schedule { marker("ran") }
            if !EventLoop.main.run(until: { !marker.entries.isEmpty }, timeout: timeout) { return false }
        }
        return true
    }

    /// On the main thread (XCTest): runs the main loop until `log` has a line equal to
    /// `line`, at most `timeout` seconds.
    @discardableResult
    static func runMain(until line: String, in log: SeedLog, timeout: Double = 10) -> Bool {
        EventLoop.main.run(until: { log.entries.contains(line) }, timeout: timeout)
    }
}


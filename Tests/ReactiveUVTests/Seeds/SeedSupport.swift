// Shared helpers of the seed conformance tests (shared/SEED-CASES.md): an ordered,
// thread-safe log of what a case observed, the seeds' `sync` signal, and an error type that
// stands in for the articles' NSErrors (domain + code).

import ReactiveUV
import Synchronization

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

/// A scheduler driven by hand, for the synchronous known-bug reproductions: `schedule` and
/// `after` only queue (ordered by time, FIFO for equal times); `drain()` runs the queue on the
/// calling thread with `Scheduler.current` set to this scheduler. Not thread-safe: use it
/// from one thread. (The virtual-time `TestScheduler` of the loop branch replaces it for the
/// timed cases.)
final class ManualScheduler: Scheduler, @unchecked Sendable {
    private struct Item {
        let time: SchedulerTime
        let order: Int
        let block: () -> Void
        let cancel: Disposable
    }

    private var items: [Item] = []
    private var counter = 0
    private var clock = SchedulerTime(nanoseconds: 0)

    init() { super.init(name: "seeds.manual") }

    override var now: SchedulerTime { clock }

    override func schedule(_ block: @escaping () -> Void) -> Disposable? {
        after(clock, schedule: block)
    }

    override func after(_ time: SchedulerTime, schedule block: @escaping () -> Void) -> Disposable? {
        counter += 1
        let cancel = Disposable()
        items.append(Item(time: max(time, clock), order: counter, block: block, cancel: cancel))
        return cancel
    }

    override func after(
        _ time: SchedulerTime, repeatingEvery interval: Double, withLeeway leeway: Double,
        schedule block: @escaping () -> Void
    ) -> Disposable? {
        nil
    }

    /// Runs queued blocks (and those they queue) in time order until the queue is empty.
    func drain() {
        while let next = items.min(by: { ($0.time, $0.order) < ($1.time, $1.order) }) {
            items.removeAll { $0.order == next.order }
            clock = next.time
            if !next.cancel.isDisposed { performAsCurrent(next.block) }
        }
    }
}

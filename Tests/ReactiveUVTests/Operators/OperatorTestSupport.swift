@testable import ReactiveUV

// Helpers shared by the operator suites: a test error, an event log, and a probe that
// sees an upstream's subscriptions and disposals.

/// Errors sent by tests. `Event`'s equality compares an error's type and description.
enum OpError: Error, Equatable, CustomStringConvertible {
    case boom
    case other

    var description: String {
        switch self {
        case .boom: return "boom"
        case .other: return "other"
        }
    }
}

/// Records every event one subscription delivers, in order.
final class OpLog<Value>: @unchecked Sendable {
    // Thread-safety: `locked` guards the events (a few tests deliver on other threads).
    private let locked = Locked<[Event<Value>]>([])
    var subscription: Disposable?

    var events: [Event<Value>] { locked.value }
    var values: [Value] { events.compactMap { $0.value } }
    var isTerminated: Bool { events.last?.isTerminating ?? false }

    func receive(_ event: Event<Value>) { locked.withLock { $0.append(event) } }

    func dispose() { subscription?.dispose() }
}

/// Subscribes to `signal` and records its events.
@discardableResult
func opRecord<Value>(_ signal: Signal<Value>) -> OpLog<Value> {
    let log = OpLog<Value>()
    // Weak: the log holds its subscription, so a strong capture would be a cycle that keeps
    // the log, the subscription and the source alive after the test (LeakSanitizer).
    log.subscription = signal.subscribeEvents { [weak log] in log?.receive($0) }
    return log
}

/// Counts subscriptions to and disposals of a signal wrapped with `probed(_:)`.
final class OpProbe: @unchecked Sendable {
    private let counts = Locked((subscriptions: 0, disposals: 0))
    var subscriptions: Int { counts.value.subscriptions }
    var disposals: Int { counts.value.disposals }
    /// Subscriptions not yet disposed.
    var live: Int { subscriptions - disposals }
    func subscribed() { counts.withLock { $0.subscriptions += 1 } }
    func disposed() { counts.withLock { $0.disposals += 1 } }
}

extension Signal {
    /// The receiver, counting its subscriptions and their disposals into `probe`.
    func probed(_ probe: OpProbe) -> Signal<Value> {
        on(subscribed: { probe.subscribed() }, disposed: { probe.disposed() })
    }
}

/// A cold signal whose subscriptions are counted, and whose returned disposable flips
/// `probe`'s disposal count. `body` sends the events.
func opCold<Value>(_ probe: OpProbe, _ body: @escaping (Subscriber<Value>) -> Void = { _ in }) -> Signal<Value> {
    Signal<Value>.create { subscriber in
        probe.subscribed()
        body(subscriber)
        return Disposable { probe.disposed() }
    }
}

/// Events of a tuple signal, made comparable.
func opPairs<A, B>(_ events: [Event<(A, B)>]) -> [Event<String>] {
    events.map { $0.map { "\($0.0)\($0.1)" } }
}

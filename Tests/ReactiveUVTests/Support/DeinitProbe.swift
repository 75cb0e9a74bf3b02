/// An object that says when it is freed: its `deinit` runs `onDeinit` (if any), then
/// appends `"deinit <name>"` to a shared, locked log.
///
/// For the tests that pin the engine's unretained calls (`_withUnsafeGuaranteedRef`) and its
/// late releases (`_fixLifetime`): captured by a sink or callback, it is freed exactly when
/// what holds that sink lets go, so the log says whether that happened during a call (too
/// early) or after it, and how many times (exact counts, no timing).
final class DeinitProbe: @unchecked Sendable {
    // Thread-safety: immutable; `log` locks itself.
    let name: String
    let log: Locked<[String]>
    /// Runs in `deinit`, before the entry is logged (a probe whose release must be able to
    /// take other locks: see `SubjectLateReleaseTests`).
    let onDeinit: (@Sendable () -> Void)?

    init(_ name: String, log: Locked<[String]>, onDeinit: (@Sendable () -> Void)? = nil) {
        self.name = name
        self.log = log
        self.onDeinit = onDeinit
    }

    deinit {
        onDeinit?()
        log.withLock { $0.append("deinit \(name)") }
    }
}

extension Locked where Value == [String] {
    /// Appends `entry` under the lock.
    func append(_ entry: String) { withLock { $0.append(entry) } }

    /// How many entries start with `prefix`.
    func count(prefix: String) -> Int { value.filter { $0.hasPrefix(prefix) }.count }
}

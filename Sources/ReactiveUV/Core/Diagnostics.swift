import CSystemShims

/// Counters for finding leaks: how many subscriber objects are alive right now.
///
/// Every subscription made with `subscribe…` or through `Signal.create` holds one
/// subscriber object until it has terminated or been disposed *and* nothing references it.
/// A test (or a user) can read ``liveSubscriptions`` before and after some work: a number
/// that keeps growing is a subscription that is never disposed.
public enum Diagnostics {
    /// Subscriber objects currently alive.
    public static var liveSubscriptions: Int { counter.load() }

    /// A C global (`csys_live_subscriptions`), not a `static let`: every subscription
    /// touches it twice, and a Swift global is reached through a lazy-initialization check.
    @inlinable
    static var counter: UnsafeAtomicInt { UnsafeAtomicInt(pointer: csys_live_subscriptions()) }

    @inlinable
    static func subscriptionCreated() { counter.fetchAdd(1, csys_relaxed) }

    @inlinable
    static func subscriptionDestroyed() { counter.fetchSub(1, csys_relaxed) }
}

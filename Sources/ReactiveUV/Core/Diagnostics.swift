import CSystemShims

/// Counters for finding leaks: how many subscriber objects are alive right now.
///
/// Every subscription made with `subscribe…` or through `Signal.create` holds one
/// subscriber object until it has terminated or been disposed *and* nothing references it.
/// A test (or a user) can read ``liveSubscriptions`` before and after some work: a number
/// that keeps growing is a subscription that is never disposed.
public enum Diagnostics {
    /// Subscriber objects currently alive.
    public static var liveSubscriptions: Int { Int(csys_live_subscriptions_count()) }

    // Counted per thread, in C (`csys_live_subscriptions_add`): every subscription counts
    // twice, and one shared atomic counter was two locked instructions per subscription.

    @inlinable
    static func subscriptionCreated() { csys_live_subscriptions_add(1) }

    @inlinable
    static func subscriptionDestroyed() { csys_live_subscriptions_add(-1) }
}

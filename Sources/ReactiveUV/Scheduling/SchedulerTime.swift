import CSystemShims

/// A point in a scheduler's own monotonic time, in nanoseconds.
///
/// Real schedulers count from the system's monotonic clock; a ``TestScheduler`` counts
/// virtual nanoseconds from zero. Delays are given as `Double` seconds everywhere, as in RAC.
public struct SchedulerTime: Comparable, Hashable, Sendable, CustomStringConvertible {
    /// Nanoseconds since the clock's origin.
    public var nanoseconds: UInt64

    /// Creates a time `nanoseconds` after the clock's origin.
    public init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }

    /// The system's monotonic clock now.
    public static var monotonicNow: SchedulerTime { SchedulerTime(nanoseconds: csys_monotonic_ns()) }

    /// The time `seconds` later (earlier for a negative value, never before the origin).
    public func advanced(by seconds: Double) -> SchedulerTime {
        SchedulerTime(nanoseconds: SchedulerTime.add(nanoseconds, SchedulerTime.nanoseconds(seconds)))
    }

    /// Seconds from `self` to `other` (negative when `other` is earlier).
    public func distance(to other: SchedulerTime) -> Double {
        (Double(other.nanoseconds) - Double(nanoseconds)) / 1e9
    }

    /// The time `seconds` after `time` (before it for a negative value, never before the
    /// origin; clamped rather than trapping on overflow or NaN): `time.advanced(by: seconds)`.
    ///
    /// ```swift
    /// let deadline = scheduler.now + 1.5
    /// ```
    public static func + (time: SchedulerTime, seconds: Double) -> SchedulerTime {
        time.advanced(by: seconds)
    }

    /// The time `seconds` after `time` (the same as `time + seconds`).
    public static func + (seconds: Double, time: SchedulerTime) -> SchedulerTime {
        time.advanced(by: seconds)
    }

    /// The time `seconds` before `time` (never before the origin).
    public static func - (time: SchedulerTime, seconds: Double) -> SchedulerTime {
        time.advanced(by: -seconds)
    }

    /// Seconds from `rhs` to `lhs` (negative when `lhs` is earlier): `rhs.distance(to: lhs)`.
    public static func - (lhs: SchedulerTime, rhs: SchedulerTime) -> Double {
        rhs.distance(to: lhs)
    }

    /// Moves `time` `seconds` later.
    public static func += (time: inout SchedulerTime, seconds: Double) {
        time = time.advanced(by: seconds)
    }

    /// Moves `time` `seconds` earlier (never before the origin).
    public static func -= (time: inout SchedulerTime, seconds: Double) {
        time = time.advanced(by: -seconds)
    }

    /// Whether `lhs` is earlier than `rhs`.
    public static func < (lhs: SchedulerTime, rhs: SchedulerTime) -> Bool { lhs.nanoseconds < rhs.nanoseconds }

    /// Seconds since the clock's origin, e.g. `1.5s`.
    public var description: String { "\(Double(nanoseconds) / 1e9)s" }

    /// Converts seconds to whole nanoseconds, clamping negative values, NaN and overflow.
    static func nanoseconds(_ seconds: Double) -> Int64 { EventLoop.nanoseconds(seconds) }

    /// `base + delta` nanoseconds, saturating at the clock's ends.
    static func add(_ base: UInt64, _ delta: Int64) -> UInt64 { EventLoop.adding(base, delta) }
}

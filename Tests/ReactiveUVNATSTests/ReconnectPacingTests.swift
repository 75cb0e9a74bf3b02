import Foundation
@testable import ReactiveUVNATS
import XCTest

/// The pause between rounds of reconnect attempts (``ReconnectPacing``): the rest of
/// `reconnectWait` plus jitter after a quick round, only the least pause (which lets cnats's
/// lock go) after a round that took longer.
final class ReconnectPacingTests: XCTestCase {
    /// A clock the test moves on by hand (milliseconds), so no assertion depends on how
    /// long the machine took between two calls.
    final class Clock: @unchecked Sendable {
        // Thread-safety: used from the test's thread only.
        var now: Int64 = 1_000_000
    }

    func testARoundRefusedAtOnceWaitsTheRestOfTheWaitPlusJitter() {
        let clock = Clock()
        let pacing = ReconnectPacing(wait: 0.25, jitter: 0.1, clock: { clock.now })
        pacing.disconnected()
        let pause = pacing.pause()
        XCTAssertGreaterThanOrEqual(pause, 250, "a round refused at once still waits reconnectWait")
        XCTAssertLessThan(pause, 350)
        // The next round is counted from the end of that pause: at once, it waits again.
        XCTAssertGreaterThanOrEqual(pacing.pause(), 250 + pause)
    }

    func testARoundLongerThanTheWaitIsFollowedAfterTheLeastPause() {
        let clock = Clock()
        let pacing = ReconnectPacing(wait: 0.1, jitter: 0.1, clock: { clock.now })
        pacing.disconnected()
        clock.now += 150  // the round's attempts ran into their connect timeouts
        XCTAssertEqual(pacing.pause(), ReconnectPacing.leastPause)
        // And the round after it counts from the end of that pause: a quick one waits again.
        XCTAssertGreaterThanOrEqual(pacing.pause(), 100 + ReconnectPacing.leastPause)
    }

    func testNoWaitStillPausesTheLeast() {
        // Never 0: cnats lets its lock go only while it pauses (see leastPause).
        let pacing = ReconnectPacing(wait: 0, jitter: 0.1)
        XCTAssertEqual(pacing.pause(), ReconnectPacing.leastPause)
    }
}

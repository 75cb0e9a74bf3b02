import Foundation
@testable import ReactiveUVNATS
import XCTest

/// The pause between rounds of reconnect attempts (``ReconnectPacing``): the rest of
/// `reconnectWait` plus jitter after a quick round, only the least pause (which lets cnats's
/// lock go) after a round that took longer.
final class ReconnectPacingTests: XCTestCase {
    func testARoundRefusedAtOnceWaitsTheRestOfTheWaitPlusJitter() {
        let pacing = ReconnectPacing(wait: 0.25, jitter: 0.1)
        pacing.disconnected()
        let pause = pacing.pause()
        XCTAssertGreaterThanOrEqual(pause, 240, "a round refused at once still waits about reconnectWait")
        XCTAssertLessThan(pause, 351)
        // The next round is counted from the end of that pause: at once, it waits again.
        XCTAssertGreaterThanOrEqual(pacing.pause(), 240 + pause - 10)
    }

    func testARoundLongerThanTheWaitIsFollowedAfterTheLeastPause() {
        let pacing = ReconnectPacing(wait: 0.1, jitter: 0.1)
        pacing.disconnected()
        usleep(150_000)  // the round's attempts ran into their connect timeouts
        XCTAssertEqual(pacing.pause(), ReconnectPacing.leastPause)
        // And the round after it counts from now: a quick one waits again.
        XCTAssertGreaterThanOrEqual(pacing.pause(), 90)
    }

    func testNoWaitStillPausesTheLeast() {
        // Never 0: cnats lets its lock go only while it pauses (see leastPause).
        let pacing = ReconnectPacing(wait: 0, jitter: 0.1)
        XCTAssertEqual(pacing.pause(), ReconnectPacing.leastPause)
    }
}

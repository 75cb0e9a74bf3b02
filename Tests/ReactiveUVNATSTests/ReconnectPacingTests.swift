import Foundation
@testable import ReactiveUVNATS
import XCTest

/// The pause between rounds of reconnect attempts (``ReconnectPacing``): the rest of
/// `reconnectWait` plus jitter after a quick round, nothing after a round that took longer.
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

    func testARoundLongerThanTheWaitIsFollowedAtOnce() {
        let pacing = ReconnectPacing(wait: 0.1, jitter: 0.1)
        pacing.disconnected()
        usleep(150_000)  // the round's attempts ran into their connect timeouts
        XCTAssertEqual(pacing.pause(), 0)
        // And the round after it counts from now: a quick one waits again.
        XCTAssertGreaterThanOrEqual(pacing.pause(), 90)
    }

    func testNoWaitNoJitter() {
        let pacing = ReconnectPacing(wait: 0, jitter: 0.1)
        XCTAssertEqual(pacing.pause(), 0)
    }
}

import Foundation
import XCTest

@testable import ReactiveUV

/// `EventLoop.whenClosing(_:)`: what a product above keeps per loop (ReactiveUVHTTP's
/// shared client) is let go when the loop closes, once, on the loop's thread, after the
/// work already queued.
final class EventLoopClosingHookTests: XCTestCase {
    func testHooksRunOnceAtCloseAfterTheQueuedWorkOnTheLoopThread() throws {
        let loop = try EventLoop()
        let order = Confined<[String]>([])
        let onLoopThread = Confined<[Bool]>([])
        loop.execute { order.value.append("queued") }
        XCTAssertTrue(loop.whenClosing {
            order.value.append("first hook")
            onLoopThread.value.append(Thread.isMainThread)
        })
        // Registered from another thread: kept as well.
        let registered = DispatchSemaphore(value: 0)
        let accepted = Confined<Bool>(false)
        Thread {
            accepted.value = loop.whenClosing { order.value.append("second hook") }
            registered.signal()
        }.start()
        XCTAssertEqual(registered.wait(timeout: .now() + 30), .success)
        XCTAssertTrue(accepted.value)
        XCTAssertTrue(loop.run(until: { order.value == ["queued"] }, timeout: 30))

        loop.execute { order.value.append("queued at close") }
        try loop.close()
        XCTAssertEqual(order.value, ["queued", "queued at close", "first hook", "second hook"])
        XCTAssertEqual(onLoopThread.value, [true], "the hook runs on the loop's thread (this test's)")

        // Closing has begun: nothing more is kept, and a second close runs nothing again.
        XCTAssertFalse(loop.whenClosing { order.value.append("late hook") })
        try loop.close()
        XCTAssertEqual(order.value, ["queued", "queued at close", "first hook", "second hook"])
    }
}

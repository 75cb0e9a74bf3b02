import XCTest

import ReactiveUV

// The README's library example ("Use the library"), as a function whose body is the
// README's code: `print` is a parameter so the test can assert what it printed.

/// README.md, "Use the library": a cold signal through two operators, then a timer on the
/// main loop that stops the loop after three ticks.
func readmeExample(print: @escaping (String) -> Void) {
    let words = Signal<String>.create { subscriber in       // cold: runs once per subscription
        for word in ["tail", "grep", "serve"] { subscriber.sendNext(word) }
        subscriber.sendCompleted()
        return nil
    }
    words.map { $0.uppercased() }.filter { $0 != "GREP" }.subscribeNext { print($0) }  // TAIL, SERVE

    Signal<SchedulerTime>.interval(0.1, on: Scheduler.main).take(3)   // libuv's timer, main thread
        .subscribe(next: { _ in print("tick") }, completed: { EventLoop.main.stop() })
    EventLoop.main.run()                                  // returns once stop() is called
}

final class ReadmeExampleTests: XCTestCase {
    func testTheReadmeExamplePrintsTheFilteredWordsThenThreeTicksAndReturns() {
        let before = MainLoopHoldings.now
        let printed = Printed()
        // A guard against a hang: stops the main loop after 30 s if the example did not.
        let watchdog = Watchdog(seconds: 30)
        readmeExample(print: printed.print)
        XCTAssertFalse(watchdog.finish(), "the example stopped the loop itself")
        XCTAssertEqual(printed.lines, ["TAIL", "SERVE", "tick", "tick", "tick"])
        assertMainLoopHandlesClosed(since: before)
    }
}

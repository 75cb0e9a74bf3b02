import Foundation
import XCTest

/// A test case that starts real logcast processes: a fresh temporary directory per test,
/// every process it started stopped (by pid) and the directory removed afterwards, also
/// when the test fails.
class LogcastProcessTestCase: XCTestCase {
    /// The test's temporary directory (made in `setUp`, removed in `tearDown`).
    var dir = ""
    /// Every logcast this test started, stopped in `tearDown`.
    var processes: [LogcastProcess] = []

    override func setUp() { dir = temporaryDirectory() }

    override func tearDown() {
        for p in processes { p.stop() }
        processes = []
        try? FileManager.default.removeItem(atPath: dir)
    }

    /// Starts logcast with `arguments` and waits until it listens.
    func start(_ arguments: [String]) throws -> LogcastProcess {
        let p = try LogcastProcess(arguments)
        processes.append(p)
        _ = try p.waitUntilListening()
        return p
    }

    /// How many times `needle` occurs in `text` (log lines said once, twice, never).
    func occurrences(of needle: String, in text: String) -> Int { text.components(separatedBy: needle).count - 1 }
}

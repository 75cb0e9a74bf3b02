import Foundation
import XCTest

/// Every kind of object, created and released 100,000 times from C, leaves nothing behind
/// (file subscriptions 20,000 times):
/// `C/lifecycle.c` runs under LeakSanitizer (anything unreachable at exit fails it) and
/// reports its resident memory after a warm-up and at the end (anything still reachable
/// but growing fails the bound); a shorter run of every kind under valgrind must show no
/// definitely or indirectly lost block.
final class EmbedLeakTests: XCTestCase {
    var scratch: URL!

    override func setUpWithError() throws {
        try CToolchain.requireLibrary()
        scratch = try CToolchain.temporaryDirectory("leak")
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: scratch)
    }

    var source: String { CToolchain.testSources.appendingPathComponent("lifecycle.c").path }

    /// Growth allowed between the warm-up and the end: malloc's arenas move a little; a
    /// leak of even 16 bytes per iteration would be 1.5 MiB.
    let allowedGrowthKiB = 768

    func testEveryObject100000TimesUnderLeakSanitizer() throws {
        let program = try CToolchain.buildProgram([source], named: "lifecycle-lsan", in: scratch, extraFlags: ["-fsanitize=leak"])
        // Every handle type 100,000 times. File subscriptions (a file read to its end through
        // libuv's thread pool, a few hundred microseconds each) run 20,000 times, which is
        // still 20,000 signals, subscriptions, fs requests and uv_signal_t handles; TCP
        // connections 5,000 times (10,000 connection handles), because each client port
        // then waits in TIME_WAIT for a minute and the kernel has about 28,000 of them.
        let fullCounts = [
            "runtime": 100_000, "host-runtime": 100_000, "subject": 100_000, "signal": 100_000,
            "subscription": 100_000, "timer-subscription": 100_000, "file-subscription": 20_000, "tcp": 5_000,
        ]
        // Under a sanitizer (`make sanitize`) the library is instrumented: every iteration
        // costs several times more, and ASan's quarantine and shadow memory make resident
        // memory say nothing about leaks. The large counts exist for the resident-memory
        // bound, which the plain build checks; LeakSanitizer (the ASan lane) reports an
        // unreachable block after a single iteration, so a twentieth of each count keeps
        // every kind's lifecycle covered at a cost the lane can afford.
        let sanitized = CToolchain.sanitizer != nil
        let counts = sanitized ? fullCounts.mapValues { max(100, $0 / 20) } : fullCounts
        let kinds = counts.keys.sorted()
        // Two at a time (the machine has two cores); each kind is its own process.
        let results = ResultBox()
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 2
        for kind in kinds {
            queue.addOperation {
                let result = try? CToolchain.run(program, [kind, String(counts[kind]!)], timeout: 120)
                results.set(kind, result)
            }
        }
        queue.waitUntilAllOperationsAreFinished()
        for kind in kinds {
            guard let result = results.get(kind) else {
                XCTFail("\(kind): did not run")
                continue
            }
            XCTAssertFalse(result.timedOut, "\(kind) timed out")
            XCTAssertEqual(result.status, 0, "\(kind): exit \(result.status)\n\(result.stdout)\n\(result.stderr)")
            XCTAssertFalse(result.stderr.contains("LeakSanitizer"), "\(kind) leaks:\n\(result.stderr)")
            XCTAssertEqual(result.lines.last, "ok", kind)
            let rss = result.lines.first { $0.hasPrefix("rss ") }?.split(separator: " ").compactMap { Int($0) } ?? []
            XCTAssertEqual(rss.count, 2, "\(kind): no rss line in \(result.stdout)")
            if rss.count == 2 && !sanitized {
                XCTAssertLessThan(rss[1] - rss[0], allowedGrowthKiB, "\(kind): resident memory grew from \(rss[0]) to \(rss[1]) KiB")
            }
        }
    }

    func testEveryObjectUnderValgrind() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/valgrind") else { throw XCTSkip("valgrind is not installed") }
        if let sanitizer = CToolchain.sanitizer {
            // Valgrind cannot run code instrumented by TSan or ASan (their shadow memory
            // and interceptors clash with its own); the ASan lane's LeakSanitizer covers it.
            throw XCTSkip("valgrind cannot run a library built with --sanitize=\(sanitizer.rawValue)")
        }
        let program = try CToolchain.buildProgram([source], named: "lifecycle", in: scratch)
        let result = try CToolchain.run(
            "/usr/bin/valgrind",
            ["--leak-check=full", "--errors-for-leak-kinds=definite,indirect", "--error-exitcode=9", "-q", program, "all", "50"],
            timeout: 120)
        XCTAssertFalse(result.timedOut)
        XCTAssertEqual(result.status, 0, "valgrind reported errors or leaks:\n\(result.stderr.suffix(6000))")
        XCTAssertFalse(result.stderr.contains("definitely lost"), String(result.stderr.suffix(6000)))
        XCTAssertEqual(result.lines.last, "ok")
    }
}

/// Outputs of programs run concurrently, keyed by name. Thread-safety: `lock` guards `outputs`.
final class ResultBox: @unchecked Sendable {
    private let lock = NSLock()
    private var outputs: [String: CToolchain.Output] = [:]

    func set(_ key: String, _ value: CToolchain.Output?) {
        lock.lock()
        outputs[key] = value
        lock.unlock()
    }

    func get(_ key: String) -> CToolchain.Output? {
        lock.lock()
        defer { lock.unlock() }
        return outputs[key]
    }
}

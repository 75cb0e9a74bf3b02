import Foundation
import XCTest

/// The rotation order guarantee from C (issue 32): `C/tail-order.c` follows a file with
/// `ruv_file_tail_ex` on the runtime's own loop (driven through its backend descriptor)
/// while a writer thread rotates faster than the reader reads, and fails at the first line
/// that comes before a line of an older file. Run with inotify and with polling.
final class EmbedTailOrderTests: XCTestCase {
    nonisolated(unsafe) static var program: String?
    nonisolated(unsafe) static var buildDirectory: URL?

    override class func tearDown() {
        if let dir = buildDirectory { try? FileManager.default.removeItem(at: dir) }
        super.tearDown()
    }

    func run(_ mode: String, rounds: Int, file: StaticString = #filePath, line: UInt = #line) throws {
        try CToolchain.requireLibrary(file: file, line: line)
        if EmbedTailOrderTests.program == nil {
            let dir = try CToolchain.temporaryDirectory("tail-order")
            EmbedTailOrderTests.buildDirectory = dir
            EmbedTailOrderTests.program = try CToolchain.buildProgram(
                [CToolchain.testSources.appendingPathComponent("tail-order.c").path], named: "tail-order", in: dir,
                file: file, line: line)
        }
        let scratch = try CToolchain.temporaryDirectory("tail-order-files")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let result = try CToolchain.run(EmbedTailOrderTests.program!, [scratch.path, mode, String(rounds)], timeout: 400)
        XCTAssertFalse(result.timedOut, "tail-order \(mode) timed out", file: file, line: line)
        XCTAssertEqual(result.status, 0, "tail-order \(mode) failed:\n\(result.stdout)\n\(result.stderr)", file: file, line: line)
        XCTAssertEqual(result.lines.last, "ok", "tail-order \(mode) did not finish:\n\(result.stdout)", file: file, line: line)
        XCTAssertTrue(result.lines.first?.hasPrefix("delivered ") ?? false, result.stdout, file: file, line: line)
    }

    func testEveryFileBeforeItsSuccessorWithInotify() throws { try run("inotify", rounds: 40) }

    func testEveryFileBeforeItsSuccessorWhenPolling() throws { try run("poll", rounds: 25) }
}

import Foundation
import XCTest

/// Pins the assumption behind `withBorrowed` (`Sources/ReactiveUVEmbed/Handles.swift`): the
/// object behind a handle C passes in stays alive for the whole call, even when C lets go of
/// its reference from a callback that call runs. `C/handle-lifetime.c` releases C's only
/// reference to a subject from a subscriber's callback while `ruv_subject_send_next` is
/// delivering on it, and lets go of every handle it owns from a map callback before
/// appending to that callback's buffer.
///
/// Each case runs plainly (the events, in order) and under valgrind's memcheck, whose
/// invalid-read report (error exit 9) is the deinit observer here: a handle freed while the
/// call still used it is an error there, and one never freed is a leak. The AddressSanitizer
/// lane builds the program with ASan instead (and skips valgrind).
final class EmbedHandleLifetimeTests: XCTestCase {
    nonisolated(unsafe) static var program: String?
    nonisolated(unsafe) static var buildDirectory: URL?

    override class func tearDown() {
        if let dir = buildDirectory { try? FileManager.default.removeItem(at: dir) }
        super.tearDown()
    }

    /// Builds `handle-lifetime` once; runs `name` plainly, then under valgrind when it can.
    func run(_ name: String, file: StaticString = #filePath, line: UInt = #line) throws -> [String] {
        try CToolchain.requireLibrary(file: file, line: line)
        if Self.program == nil {
            let dir = try CToolchain.temporaryDirectory("handle-lifetime")
            Self.buildDirectory = dir
            Self.program = try CToolchain.buildProgram(
                [CToolchain.testSources.appendingPathComponent("handle-lifetime.c").path], named: "handle-lifetime",
                in: dir, file: file, line: line)
        }
        let program = try XCTUnwrap(Self.program)
        let plain = try CToolchain.run(program, [name], timeout: 60)
        XCTAssertFalse(plain.timedOut, "handle-lifetime \(name) timed out", file: file, line: line)
        XCTAssertEqual(plain.status, 0, "handle-lifetime \(name) failed:\n\(plain.stdout)\n\(plain.stderr)", file: file, line: line)
        XCTAssertEqual(plain.lines.last, "ok", "handle-lifetime \(name) did not finish:\n\(plain.stdout)", file: file, line: line)
        if CToolchain.sanitizer == nil {
            guard FileManager.default.isExecutableFile(atPath: "/usr/bin/valgrind") else {
                XCTFail("valgrind is not installed (scripts/ensure-deps.sh installs it)", file: file, line: line)
                return plain.lines
            }
            let checked = try CToolchain.run(
                "/usr/bin/valgrind",
                ["--error-exitcode=9", "--leak-check=full", "--errors-for-leak-kinds=definite,indirect", "-q", program, name],
                timeout: 300)
            XCTAssertFalse(checked.timedOut, "handle-lifetime \(name) under valgrind timed out", file: file, line: line)
            XCTAssertEqual(
                checked.status, 0, "valgrind reported errors or leaks in \(name):\n\(checked.stderr.suffix(6000))",
                file: file, line: line)
            XCTAssertEqual(checked.lines, plain.lines, "the same events under valgrind", file: file, line: line)
        }
        return plain.lines
    }

    func testASubjectReleasedFromItsOwnSubscriberDuringASendOutlivesTheSend() throws {
        XCTAssertEqual(try run("subject-release"), [
            "a next one", "b next one",
            "a next last", "a released the subject", "b next last",
            "send returned 0",
            "ok",
        ])
    }

    func testAMapCallbackThatLetsGoOfEveryHandleStillAppendsToItsBuffer() throws {
        XCTAssertEqual(try run("buffer-let-go"), [
            "map got v", "map appended: 0",
            "send returned 0",
            "send returned 0",
            "ok",
        ])
    }
}

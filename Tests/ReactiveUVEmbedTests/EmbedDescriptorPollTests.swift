import Foundation
import XCTest

/// `ruv_descriptor_poll` from C (`C/descriptor-poll.c`): a socketpair the program owns is
/// watched, each write to the peer shows up as "1" (RUV_POLL_READABLE) and the program
/// reads the bytes itself; argument checks; a closed descriptor fails with EBADF.
final class EmbedDescriptorPollTests: XCTestCase {
    func testAForeignDescriptorIsWatchedWhileItsOwnerDoesTheIO() throws {
        try CToolchain.requireLibrary()
        let dir = try CToolchain.temporaryDirectory("poll")
        defer { try? FileManager.default.removeItem(at: dir) }
        let program = try CToolchain.buildProgram(
            [CToolchain.testSources.appendingPathComponent("descriptor-poll.c").path], named: "descriptor-poll", in: dir)
        let result = try CToolchain.run(program, [], timeout: 60)
        XCTAssertFalse(result.timedOut)
        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
        XCTAssertEqual(result.lines, [
            "ready 1 read alpha",
            "ready 1 read beta",
            "closed error EBADF",
            "completions 0",
            "ok",
        ])
    }
}

import Foundation
import XCTest

/// ReactiveUV's own loop inside event loops nobody here wrote (issue 32): `C/foreign-host.c`
/// built against GLib (`GMainLoop`, `g_unix_fd_add`) and against libevent (`event_base`,
/// which has no hook before it sleeps), with `pkg-config glib-2.0 libevent`. Each host
/// watches only the backend descriptor and one timer armed from the backend timeout; every
/// subscription is made from a host callback, outside `ruv_runtime_run_once`. It tails a
/// file through rotations (every line once, in order), serves TCP lines to a plain client
/// (every reply exact), ticks a timer, and then idles a second with few wake-ups (no busy
/// loop). Under a sanitizer build the programs are instrumented as the other C tests are.
final class EmbedForeignHostTests: XCTestCase {
    nonisolated(unsafe) static var buildDirectory: URL?

    override class func tearDown() {
        if let dir = buildDirectory { try? FileManager.default.removeItem(at: dir) }
        super.tearDown()
    }

    func pkgConfig(_ arguments: [String]) throws -> [String] {
        let result = try CToolchain.run("/usr/bin/pkg-config", arguments, timeout: 30)
        guard result.status == 0 else { throw XCTSkip("pkg-config \(arguments.joined(separator: " ")) failed: \(result.stderr)") }
        return result.stdout.split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init)
    }

    func runHost(_ define: String, package: String, file: StaticString = #filePath, line: UInt = #line) throws {
        try CToolchain.requireLibrary(file: file, line: line)
        if EmbedForeignHostTests.buildDirectory == nil {
            EmbedForeignHostTests.buildDirectory = try CToolchain.temporaryDirectory("foreign-host")
        }
        let flags = try ["-D" + define] + pkgConfig(["--cflags", package]) + ["-Wl,--no-as-needed"]
            + pkgConfig(["--libs", package])
        let program = try CToolchain.buildProgram(
            [CToolchain.testSources.appendingPathComponent("foreign-host.c").path], named: "foreign-host-\(package)",
            in: EmbedForeignHostTests.buildDirectory!, extraFlags: flags, file: file, line: line)
        let scratch = try CToolchain.temporaryDirectory("foreign-host-files")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let result = try CToolchain.run(program, [scratch.path], timeout: 150)
        XCTAssertFalse(result.timedOut, "\(package) host timed out:\n\(result.stdout)", file: file, line: line)
        XCTAssertEqual(result.status, 0, "\(package) host failed:\n\(result.stdout)\n\(result.stderr)", file: file, line: line)
        XCTAssertEqual(result.lines, [
            "host \(define == "HOST_GLIB" ? "glib" : "libevent")",
            "tail 4000 lines in order",
            "client 200 replies exact",
            "ticks at least 10",
            "idle wake-ups few",
            "ok",
        ], result.stdout + result.stderr, file: file, line: line)
    }

    func testInsideGLibsMainLoop() throws { try runHost("HOST_GLIB", package: "glib-2.0") }

    func testInsideLibeventsEventBase() throws { try runHost("HOST_LIBEVENT", package: "libevent") }
}

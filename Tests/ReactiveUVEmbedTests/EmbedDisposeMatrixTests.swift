import Foundation
import XCTest

/// The C API's disposal guarantee (issue 10 §1): `C/dispose-matrix.c`, built with `cc`
/// against reactiveuv.h and libreactiveuv.so, runs every loop source (timer, interval,
/// file read/lines/tail, unix signal, subject, connection lines/reads, TCP connect/listen)
/// against every way of ending a subscription from inside the event flow: dispose from its
/// own next-callback, dispose + release of the subscription and the signal there,
/// `ruv_signal_take(1)`, `ruv_signal_take_until` fired from the callback, dispose from
/// another subscriber's callback, dispose from another thread. Per cell it checks the first
/// value came, nothing was delivered after the dispose returned, and every handle closed;
/// at the end `uv_loop_close` on the host's loop succeeds.
final class EmbedDisposeMatrixTests: XCTestCase {
    func testEveryCSourceToleratesEveryWayOfDisposingFromInsideItsCallbacks() throws {
        try CToolchain.requireLibrary()
        let dir = try CToolchain.temporaryDirectory("dispose-matrix")
        defer { try? FileManager.default.removeItem(at: dir) }
        let program = try CToolchain.buildProgram(
            [CToolchain.testSources.appendingPathComponent("dispose-matrix.c").path], named: "dispose-matrix", in: dir)
        let result = try CToolchain.run(program, [dir.path], timeout: 300)
        XCTAssertFalse(result.timedOut, "dispose-matrix timed out:\n\(result.stdout)")
        XCTAssertEqual(result.status, 0, "dispose-matrix failed:\n\(result.stdout)\n\(result.stderr)")
        let cells = result.lines.filter { $0.hasPrefix("cell ") }
        let failures = result.lines.filter { $0.hasPrefix("FAIL") }
        XCTAssertEqual(failures, [])
        // 9 signal sources × 6 ways, less the second reader of a connection (2), plus TCP
        // connect and listen × 2 ways.
        XCTAssertEqual(cells.filter { $0.hasSuffix(" ok") }.count, 9 * 6 - 2 + 2 * 2, result.stdout)
        XCTAssertEqual(result.lines.last, "ok")
    }
}

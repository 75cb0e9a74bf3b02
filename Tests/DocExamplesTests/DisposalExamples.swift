import XCTest

import ReactiveUV

// DisposalGuarantee.md's example: `take(2)` disposes a connection's lines in the middle of
// one chunk; the connection closes and nothing more is delivered.

/// DisposalGuarantee.md: two lines out of a three-line chunk, then the connection closes.
func firstTwoEchoedLines(echoPort: Int, print: @escaping (String) -> Void) -> Disposable {
    TCP.connect(host: "127.0.0.1", port: echoPort)
        .flattenMap { c in c.write("a\nb\nc\n").then { c.lines } }
        .take(2)                              // disposes in the middle of the chunk "a\nb\nc\n"
        .subscribeNext { print($0) }          // a, b — then the connection closes
}

final class DisposalExampleTests: XCTestCase {
    func testTakeTwoEndsTheConnectionInTheMiddleOfAChunkAndEveryHandleCloses() {
        let before = MainLoopHoldings.now
        let serverOutput = Printed()
        var port = 0
        let server = echoServer(port: 0, onListening: { port = $0.port }, print: serverOutput.print)
        XCTAssertTrue(runMainLoop { port != 0 })

        let printed = Printed()
        let client = firstTwoEchoedLines(echoPort: port, print: printed.print)
        XCTAssertTrue(runMainLoop { printed.lines.count >= 2 })
        // Both ends of the connection close: the client's by the dispose, the server's
        // after it read the client's end of stream. Only the listener is left. (At most: a
        // handle an earlier test left closing may close meanwhile, as the final check allows.)
        XCTAssertTrue(pollMainLoop { MainLoopHoldings.now.handles <= before.handles + 1 }, "\(MainLoopHoldings.now)")
        XCTAssertEqual(printed.lines, ["a", "b"])
        client.dispose()
        server.dispose()
        XCTAssertEqual(serverOutput.lines, [])
        assertMainLoopHandlesClosed(since: before)
    }
}

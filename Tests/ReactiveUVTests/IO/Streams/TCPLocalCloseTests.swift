import CLibUV
import CSystemShims
import Glibc
import XCTest

@testable import ReactiveUV

/// A local close ends a connection's readers and senders silently (issue 32): disposing a
/// listen subscription closes the connections it accepted, and a client's unfinished last
/// line is not delivered as if it were complete, nor does a `send` of the replies fail with
/// `ENOTCONN … (already closed)` — the subscriber chose to stop, as closing the loop does.
final class TCPLocalCloseTests: XCTestCase {
    func testDisposingTheListenSubscriptionInventsNoLineAndReportsNoError() throws {
        let loop = try EventLoop()
        let lines = Locked<[String]>([])
        let sent = Recorder<Void>()
        let (port, server, errors) = startServer(on: loop) { c in
            // Each line answered; the lines recorded as they pass.
            sent.subscribe(c.send(c.lines.doNext { line in lines.withLock { $0.append(line) } }.map { Array("echo: \($0)\n".utf8) }))
            return .never()
        }
        XCTAssertGreaterThan(port, 0)

        // A plain client: one whole line and an unfinished one, then it reads until EOF.
        let received = Locked("")
        let sawEOF = Locked(false)
        let client = TestThread {
            let s = connectBlockingClient(port: port)
            guard s >= 0 else { return sawEOF.withLock { $0 = false } }
            writeAll(s, "whole\npartial")
            var buffer = [UInt8](repeating: 0, count: 256)
            while true {
                let n = read(s, &buffer, buffer.count)
                if n <= 0 {
                    sawEOF.withLock { $0 = n == 0 }
                    break
                }
                received.withLock { $0 += String(decoding: buffer[0..<n], as: UTF8.self) }
            }
            close(s)
        }
        XCTAssertTrue(runUntil(loop) { received.value == "echo: whole\n" }, received.value)
        // The unfinished line is in the server's buffer by now or soon; either way it must
        // not come out as a line when the subscription is disposed.
        _ = loop.run(until: { false }, timeout: 0.1)
        server.dispose()
        // The positive marker: the client sees the connection end.
        XCTAssertTrue(runUntil(loop) { sawEOF.value })
        client.join()

        XCTAssertEqual(lines.value, ["whole"], "no line invented from the unfinished one")
        XCTAssertNil(sent.error, "no ENOTCONN for a close of our own: \(String(describing: sent.error))")
        XCTAssertEqual(received.value, "echo: whole\n")
        XCTAssertNil(errors.error)
        assertAllHandlesClosedAndClose(loop)
    }

    /// Runs `loop` in short slices until `condition` holds (bounded): the condition is set
    /// by the client thread, which wakes no loop, so one long `run(until:)` would sleep on.
    func runUntil(_ loop: EventLoop, timeout: Double = 60, _ condition: () -> Bool) -> Bool {
        let deadline = csys_monotonic_ns() + UInt64(timeout * 1e9)
        while !condition() && csys_monotonic_ns() < deadline { _ = loop.run(until: condition, timeout: 0.02) }
        return condition()
    }
}

import CLibUV
import Glibc
import XCTest

@testable import ReactiveUV

/// A connection's `lines` across subscriptions: the lines read from the socket and not yet
/// delivered go to the next `lines` subscription, in order. Each subscription split with a
/// splitter of its own, and the lines after the one a subscriber took last were lost with
/// it (`c.lines.take(1).concat(c.lines)`: the header, then nothing; found by probing,
/// 2026-11-27).
final class ConnectionLinesTests: XCTestCase {
    /// A server whose handler reads with `read(connection)`; a client that writes `text`
    /// (in one write) and ends its side. Returns what the handler's signal delivered.
    func serve(_ text: String, read: @escaping (TCPConnection) -> Signal<String>) throws -> Recorder<String> {
        let loop = try EventLoop()
        let received = Recorder<String>()
        let (port, server, _) = startServer(on: loop) { c in
            received.subscribe(read(c))
            return .never()
        }
        let client = Recorder<Void>()
        let clientSubscription = client.subscribe(
            TCP.connect(host: "127.0.0.1", port: port, on: loop).flattenMap { c in c.write(text).then { c.shutdown() } })
        XCTAssertTrue(loop.run(until: { received.terminated }, timeout: 60), "\(received.values.count) lines")
        clientSubscription.dispose()
        server.dispose()
        assertAllHandlesClosedAndClose(loop)
        return received
    }

    /// The header line, then the body: every line once, in order, and the end of stream.
    func testAHeaderLineThenTheRestGetsEveryLine() throws {
        let received = try serve("HEADER\nbody1\nbody2\nbody3\n") { c in c.lines.take(1).concat(c.lines) }
        XCTAssertNil(received.error)
        XCTAssertTrue(received.completed)
        XCTAssertEqual(received.values, ["HEADER", "body1", "body2", "body3"])
    }

    /// 20,000 numbered lines (with a partial last line) taken 7 at a time by one `lines`
    /// subscription after another, each made when the one before completes: every line
    /// once, in order — across chunk boundaries, partial lines and the last line's missing
    /// break. A subscription with another limit takes the same carried state.
    func testLinesTakenAFewAtATimeBySuccessiveSubscriptionsAreAllDelivered() throws {
        let count = 20_000
        let text = (0..<count).map { "line \($0)" }.joined(separator: "\n")  // no break after the last
        let received = try serve(text) { c in
            Signal<String>.create { subscriber in
                // Each group subscribes the next from its completion (no nesting: the
                // chain stays one group deep).
                func group(_ n: Int) {
                    var taken = 0
                    let lines = n % 2 == 0 ? c.lines : c.lines(maxLength: 64)
                    _ = lines.take(7).subscribe(
                        next: { line in
                            taken += 1
                            subscriber.sendNext(line)
                        },
                        error: { subscriber.sendError($0) },
                        completed: { if taken == 7 { group(n + 1) } else { subscriber.sendCompleted() } })
                }
                group(0)
                return nil
            }
        }
        XCTAssertNil(received.error)
        XCTAssertEqual(received.values.count, count)
        XCTAssertEqual(received.values, (0..<count).map { "line \($0)" })
    }

    /// Two `lines` subscriptions at once — the second made while the first is given a line
    /// and stays: the second fails with `EBUSY`, the first reads on.
    func testASecondLinesSubscriptionAtOnceFailsWithEBUSY() throws {
        let second = Recorder<String>()
        let received = try serve("a\nb\n") { c in
            var made = false
            return c.lines.doNext { _ in
                if made { return }
                made = true
                second.subscribe(c.lines)
            }
        }
        XCTAssertEqual(received.values, ["a", "b"])
        XCTAssertTrue(received.completed)
        XCTAssertEqual((second.error as? UVError)?.code, UV_EBUSY.rawValue, "\(String(describing: second.error))")
    }
}

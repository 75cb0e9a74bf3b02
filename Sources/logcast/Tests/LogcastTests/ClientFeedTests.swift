import ReactiveUV
import XCTest
@testable import logcast

/// A client's lifecycle (`ClientState`, owned by `ClientFeed`) and the fan-out's notice
/// allowance, on a fan-out driven by hand: the transport below holds each write until the
/// test completes it, so "a client whose socket is full" is a state the test sets, not a
/// race with the kernel's buffers (LogcastClientTests does it over real TCP).
///
/// XCTest: the fan-out is main-loop only, and XCTest methods run on the main thread. The
/// pump is called directly; one it scheduled itself finds its fan-out gone ([weak self]).
final class ClientFeedTests: XCTestCase {
    /// A `ClientTransport` that records what the fan-out does with it and holds each write
    /// (and the shutdown) until the test ends it.
    final class HeldTransport: ClientTransport {
        var written: [String] = []
        var inFlight: [Subscriber<Void>] = []
        var shutdowns = 0
        var closes = 0
        let shutdownDone = Subject<Void>()
        var reads: Signal<[UInt8]> { .never() }
        var description: String { "held transport" }

        func write(_ bytes: [UInt8]) -> Signal<Void> {
            Signal<Void>.create { subscriber in
                self.written.append(String(decoding: bytes, as: UTF8.self))
                self.inFlight.append(subscriber)
                return nil
            }
        }

        /// Completes the oldest write in flight.
        func complete() { inFlight.removeFirst().sendCompleted() }

        func shutdown() -> Signal<Void> {
            shutdowns += 1
            return shutdownDone
        }

        func close() { closes += 1 }
    }

    func makeFeed(queueLimit: Int = 1000, disconnect: Bool = false) -> (LineFanOut, ClientFeed, HeldTransport, Stats) {
        let stats = Stats()
        let fanOut = LineFanOut(stats: stats, queueLimit: queueLimit, disconnectSlowClients: disconnect)
        let transport = HeldTransport()
        return (fanOut, fanOut.add(transport), transport, stats)
    }

    /// Records every end the feed says.
    func watchEnds(_ feed: ClientFeed) -> () -> [String] {
        var ends: [String] = []
        _ = feed.ended.subscribeNext { ends.append("\($0.reason) filter=\($0.filter.map(String.init) ?? "-")") }
        return { ends }
    }

    func testAClientGoesFromAuthenticatingThroughFollowingAndDrainingToClosedAndSaysItsEndOnce() {
        let (fanOut, feed, transport, _) = makeFeed()
        let ends = watchEnds(feed)
        XCTAssertEqual(feed.state, .authenticating)
        // Nothing but admission leaves authenticating.
        feed.setPaused(true)
        XCTAssertFalse(feed.setFilter(7))
        XCTAssertEqual(feed.state, .authenticating)
        // Sent replies, no line.
        fanOut.ingest(prefix: Array("f: ".utf8), line: "before".utf8)
        fanOut.reply(feed, "ERR authentication required")
        fanOut.pump()
        XCTAssertEqual(transport.written, ["ERR authentication required\n"])
        transport.complete()

        feed.admit(access: nil)
        XCTAssertEqual(feed.state, .following(filter: nil, paused: false))
        XCTAssertTrue(feed.setFilter(7))
        feed.setPaused(true)
        XCTAssertEqual(feed.state, .following(filter: 7, paused: true))
        feed.setPaused(false)
        fanOut.ingest(prefix: Array("f: ".utf8), line: "one".utf8)
        fanOut.reply(feed, "BYE")
        feed.drain("BYE")
        XCTAssertEqual(feed.state, .draining(reason: "BYE"))
        XCTAssertEqual(ends(), ["BYE filter=7"], "its end is said as it starts draining, with the filter to release")
        // Draining: nothing more is queued; what was is written, then the shutdown.
        fanOut.reply(feed, "OK late")
        XCTAssertFalse(fanOut.notice(feed, "HEARTBEAT 1"))
        fanOut.ingest(prefix: Array("f: ".utf8), line: "after".utf8)
        fanOut.pump()
        XCTAssertEqual(transport.written.last, "BYE\n", "the line went through filter 7, which no set holds; the goodbye last")
        XCTAssertEqual(transport.shutdowns, 0, "the shutdown waits for the write")
        transport.complete()
        XCTAssertEqual(transport.shutdowns, 1)
        var closed = false
        _ = feed.closed.subscribe(completed: { closed = true })
        XCTAssertFalse(closed)
        transport.shutdownDone.sendCompleted()
        XCTAssertEqual(feed.state, .closed(reason: "BYE"))
        XCTAssertTrue(closed)
        XCTAssertEqual(transport.closes, 1)
        // Closed is final: no transition, no second end, no second close.
        feed.admit(access: nil)
        feed.drain("again")
        feed.close("again")
        XCTAssertEqual(feed.state, .closed(reason: "BYE"))
        XCTAssertEqual(ends(), ["BYE filter=7"])
        XCTAssertEqual(transport.closes, 1)
        XCTAssertTrue(fanOut.feeds.isEmpty, "the fan-out let it go")
    }

    func testAFailedWriteClosesAFollowingClientAndSaysWhy() {
        let (fanOut, feed, transport, _) = makeFeed()
        let ends = watchEnds(feed)
        feed.admit(access: nil)
        fanOut.reply(feed, "OK GREP ")
        fanOut.pump()
        transport.inFlight.removeFirst().sendError(SignalError.timedOut)
        XCTAssertEqual(feed.state, .closed(reason: "write failed: \(SignalError.timedOut)"))
        XCTAssertEqual(ends(), ["write failed: \(SignalError.timedOut) filter=-"])
        XCTAssertEqual(transport.closes, 1)
        XCTAssertEqual(transport.shutdowns, 0)
        XCTAssertTrue(fanOut.feeds.isEmpty)
    }

    /// Issue 35, item 5: the fan-out's notices to a client whose write is in flight do not
    /// end it, however close to its queue limit its lines are; they have an allowance of
    /// their own, and a notice past it is refused (said again later). A reply it asked for
    /// still counts.
    func testNoticesToAClientAWhiskerUnderItsLimitHaveAnAllowanceAndRepliesStillCount() {
        let (fanOut, feed, transport, stats) = makeFeed(queueLimit: 100)
        let ends = watchEnds(feed)
        feed.admit(access: nil)
        fanOut.reply(feed, "OK GREP ")
        fanOut.pump()
        XCTAssertEqual(transport.written, ["OK GREP \n"])
        // Its socket is full from here on: that write stays in flight.
        // 96 bytes behind: "f: " + 92 + "\n", a whisker under the limit of 100.
        fanOut.ingest(prefix: Array("f: ".utf8), line: String(repeating: "x", count: 92).utf8)
        fanOut.pump()
        var queued = 0
        while fanOut.notice(feed, "HEARTBEAT 1") { queued += 1 }
        XCTAssertEqual(queued, LineFanOut.noticeAllowance / 12, "12 bytes each, within the allowance")
        XCTAssertEqual(feed.state, .following(filter: nil, paused: false), "not ended for the fan-out's notices")
        // Notices do not count as bytes behind either: 4 more bytes (100 in all) are kept.
        fanOut.ingest(prefix: Array("f: ".utf8), line: Array<UInt8>())
        fanOut.pump()
        XCTAssertEqual(feed.linesDropped, 0)
        XCTAssertEqual(stats.linesDropped, 0)
        // One byte more is past the limit: the lines still in the blocks are dropped (those
        // already queued before a notice stay in their place).
        fanOut.ingest(prefix: Array("f: ".utf8), line: "y".utf8)
        fanOut.pump()
        XCTAssertEqual(feed.linesDropped, 2)
        XCTAssertEqual(feed.state, .following(filter: nil, paused: false))
        // A reply it asked for counts against the limit with its lines.
        fanOut.reply(feed, String(repeating: "S", count: 10))
        XCTAssertEqual(feed.state, .closed(reason: "not reading its replies: 107 bytes queued (limit 100)"))
        XCTAssertEqual(ends(), ["not reading its replies: 107 bytes queued (limit 100) filter=-"])
        XCTAssertEqual(transport.closes, 1)
    }

    func testWrittenNoticesFreeTheAllowance() {
        let (fanOut, feed, transport, _) = makeFeed(queueLimit: 100)
        feed.admit(access: nil)
        while fanOut.notice(feed, "DROPPED 12345") {}
        XCTAssertFalse(fanOut.notice(feed, "DROPPED 12345"))
        fanOut.pump()
        XCTAssertEqual(transport.written.count, 1)
        XCTAssertTrue(fanOut.notice(feed, "DROPPED 12346"), "handed to the transport, they no longer count")
        transport.complete()
        fanOut.pump()
        XCTAssertEqual(transport.written.last, "DROPPED 12346\n")
    }

    func testAPausedClientWithAWriteInFlightSkipsLinesAndDropsNone() {
        let (fanOut, feed, transport, stats) = makeFeed(queueLimit: 10)
        feed.admit(access: nil)
        feed.setPaused(true)
        fanOut.reply(feed, "OK PAUSE")
        fanOut.pump()
        XCTAssertEqual(transport.written, ["OK PAUSE\n"])
        // Far past its limit while that write is in flight, and a reply asked for before
        // the pump visits it (the reply catches it up): skipped, not lost.
        fanOut.ingest(prefix: Array("f: ".utf8), line: String(repeating: "z", count: 100).utf8)
        fanOut.reply(feed, "STATS")
        XCTAssertEqual(feed.linesDropped, 0)
        XCTAssertEqual(stats.linesDropped, 0)
        transport.complete()
        fanOut.pump()
        XCTAssertEqual(transport.written, ["OK PAUSE\n", "STATS\n"], "its replies, none of the skipped lines")
        XCTAssertEqual(feed.state, .following(filter: nil, paused: true))
    }

    func testAClientTooSlowUnderTheDisconnectPolicyIsClosedFromWhateverItWasDoing() {
        let (fanOut, feed, transport, _) = makeFeed(queueLimit: 10, disconnect: true)
        let ends = watchEnds(feed)
        feed.admit(access: nil)
        // A reply is written at once (lines may wait for more while they stream in).
        fanOut.reply(feed, "OK")
        fanOut.pump()
        XCTAssertEqual(transport.written, ["OK\n"])
        fanOut.ingest(prefix: Array("f: ".utf8), line: "0123456789".utf8)
        // The transition catches up first, which finds it too slow: that end stands.
        feed.setPaused(true)
        XCTAssertEqual(feed.state, .closed(reason: "too slow: 14 bytes behind (limit 10)"))
        XCTAssertEqual(ends(), ["too slow: 14 bytes behind (limit 10) filter=-"])
        XCTAssertEqual(transport.closes, 1)
    }
}

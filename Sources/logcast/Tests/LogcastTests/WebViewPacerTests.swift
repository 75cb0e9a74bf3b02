import Foundation
import Testing

@testable import logcast

/// The web view's frames under load (WebViewPacer): a page is sent the newest lines, at most
/// what it keeps, after an exact count of the older lines passed over; replies are never
/// skipped and keep their place; the page's filter, access and chosen file decide which
/// lines count. Real blocks from the fan-out's own builder.
@Suite struct WebViewPacerTests {
    let file = "/var/log/app.log"
    let other = "/var/log/db.log"

    /// A sealed block of `numbers` as `<path>: n-<number>` lines.
    func block(_ numbers: Range<Int>, path: String? = nil, sequence: Int = 0) -> LineBlock {
        var builder = LineBlockBuilder()
        let chunk = numbers.map { String(format: "n-%06d\n", $0) }.joined()
        builder.append(prefix: Array(((path ?? file) + ": ").utf8), chunk: Array(chunk.utf8))
        return builder.seal(sequence: sequence)
    }

    /// The frame's messages decoded: the skip count (0 when none is said) and the lines' texts.
    func decode(_ messages: [String]) -> (skipped: Int, lines: [String], replies: [String], order: [String]) {
        var skipped = 0, lines: [String] = [], replies: [String] = [], order: [String] = []
        for message in messages {
            let object = try! JSONSerialization.jsonObject(with: Data(message.utf8)) as! [String: Any]
            switch object["t"] as! String {
            case "skipped":
                skipped += object["lines"] as! Int
                order.append("skipped")
            case "lines":
                let got = (object["lines"] as! [[String]]).map { $0[1] }
                lines += got
                order.append("lines")
            default:
                replies.append(object["text"] as! String)
                order.append("reply")
            }
        }
        return (skipped, lines, replies, order)
    }

    @Test func aBurstIsTheNewestLinesAfterAnExactSkipCount() {
        var pacer = WebViewPacer(maxLines: 2000, knownFiles: [file])
        // 10,000 lines in 20 blocks, written in three writes.
        let blocks = (0..<20).map { block(($0 * 500 + 1)..<($0 * 500 + 501), sequence: $0) }
        pacer.add(outbox: [], blocks: blocks[0..<5], filter: nil, access: nil, chosen: nil)
        pacer.add(outbox: [], blocks: blocks[5..<12], filter: nil, access: nil, chosen: nil)
        pacer.add(outbox: [], blocks: blocks[12..<20], filter: nil, access: nil, chosen: nil)
        // The blocks a frame's worth of newer lines covers were let go as they came.
        #expect(pacer.waitingLines <= 2000 + 500)
        let (messages, skipped) = pacer.frame()
        let frame = decode(messages)
        #expect(skipped == 8000)
        #expect(frame.skipped == 8000)
        #expect(frame.order.first == "skipped")
        #expect(frame.lines == (8001...10000).map { String(format: "n-%06d", $0) })
        #expect(pacer.isEmpty)
        #expect(pacer.frame().messages.isEmpty)
    }

    @Test func aFrameUnderTheLimitSkipsNothing() {
        var pacer = WebViewPacer(maxLines: 2000, knownFiles: [file])
        pacer.add(outbox: [], blocks: [block(1..<1501)], filter: nil, access: nil, chosen: nil)
        let frame = decode(pacer.frame().messages)
        #expect(frame.skipped == 0)
        #expect(frame.order == ["lines"])
        #expect(frame.lines.count == 1500)
    }

    @Test func repliesAreNeverSkippedAndKeepTheirPlace() {
        var pacer = WebViewPacer(maxLines: 100, knownFiles: [file])
        // Queued bytes: 150 lines, then a reply; then a block of 50; then DROPPED and 30 more.
        let queued = (1...150).map { "\(file): " + String(format: "n-%06d", $0) }.joined(separator: "\n") + "\nOK GREP x\n"
        pacer.add(outbox: Array(queued.utf8), blocks: [block(151..<201)], filter: nil, access: nil, chosen: nil)
        pacer.add(outbox: Array("DROPPED 7\n".utf8), blocks: [block(201..<231)], filter: nil, access: nil, chosen: nil)
        let frame = decode(pacer.frame().messages)
        #expect(frame.skipped == 130)
        #expect(frame.lines == (131...230).map { String(format: "n-%06d", $0) })
        #expect(frame.replies == ["OK GREP x", "DROPPED 7"])
        // The reply comes after line 150 and before 151, as it was queued.
        #expect(frame.order == ["skipped", "lines", "reply", "lines", "reply", "lines"])
    }

    @Test func theChosenFileAndTheFilterDecideWhatCounts() {
        var pacer = WebViewPacer(maxLines: 10, knownFiles: [file, other])
        // Two files interleaved by block; the page chose `other`: 30 of its lines, newest 10.
        let blocks = (0..<6).map { block(($0 * 10 + 1)..<($0 * 10 + 11), path: $0 % 2 == 0 ? file : other, sequence: $0) }
        pacer.add(outbox: [], blocks: blocks[...], filter: nil, access: nil, chosen: other)
        let chosen = decode(pacer.frame().messages)
        #expect(chosen.skipped == 20)
        #expect(chosen.lines == (51...60).map { String(format: "n-%06d", $0) })

        // A filter: the block's matches (as the filter set's scan marks them) are the lines.
        let filtered = block(1..<101)
        let pattern: PatternID = 3
        filtered.matches[pattern] = stride(from: 4, to: 100, by: 5).map(UInt32.init)  // n-5, n-10, … n-100
        pacer.add(outbox: [], blocks: [filtered], filter: pattern, access: nil, chosen: nil)
        let frame = decode(pacer.frame().messages)
        #expect(frame.skipped == 10)
        #expect(frame.lines == stride(from: 55, through: 100, by: 5).map { String(format: "n-%06d", $0) })
    }

    @Test func pagesSentTheSameBlocksShareOneEncodingAndTheirOwnSkipCounts() {
        let cache = WebViewFrameCache(purgesOnTimer: false)
        let blocks = (0..<8).map { block(($0 * 1000 + 1)..<($0 * 1000 + 1001), sequence: $0) }
        var first = WebViewPacer(maxLines: 2000, knownFiles: [file], cache: cache)
        var second = WebViewPacer(maxLines: 2000, knownFiles: [file], cache: cache)
        var filtered = WebViewPacer(maxLines: 2000, knownFiles: [file], cache: cache)
        // The same blocks, in different writes.
        first.add(outbox: [], blocks: blocks[0..<8], filter: nil, access: nil, chosen: nil)
        second.add(outbox: [], blocks: blocks[0..<3], filter: nil, access: nil, chosen: nil)
        second.add(outbox: [], blocks: blocks[3..<8], filter: nil, access: nil, chosen: nil)
        filtered.add(outbox: [], blocks: blocks[6..<8], filter: nil, access: nil, chosen: file)
        let a = first.frame(), b = second.frame(), c = filtered.frame()
        #expect(cache.hits == 1)
        #expect(a.messages == b.messages)
        #expect(decode(a.messages).lines == (6001...8000).map { String(format: "n-%06d", $0) })
        #expect(a.skipped == 6000 && b.skipped == 6000)
        // Another choice (a chosen file) is encoded for itself, with the same lines here.
        #expect(decode(c.messages).lines == decode(a.messages).lines && c.skipped == 0)
    }

    @Test func aPausedPagesRepliesAreNotSentTwiceButItsSEQIs() {
        var pacer = WebViewPacer(maxLines: 2000, knownFiles: [file])
        let queued = "\(file): n-000001\nOK STATS\nSEQ 4\n"
        pacer.add(outbox: Array(queued.utf8), blocks: [], filter: nil, access: nil, chosen: nil, repliesSent: true)
        let frame = decode(pacer.frame().messages)
        #expect(frame.lines == ["n-000001"])
        #expect(frame.replies == ["SEQ 4"])
    }
}

import Testing
@testable import ReactiveUV

@Suite struct LineBufferTests {
    func split(_ chunks: [String], max: Int = 100) throws -> ([String], String?) {
        var b = LineBuffer(maxLength: max)
        var out: [String] = []
        for c in chunks { try b.append(Array(c.utf8)) { out.append($0) } }
        return (out, b.finish())
    }

    @Test func splitsAcrossChunksAndDropsCR() throws {
        let (lines, rest) = try split(["ab\ncd", "e\r", "\nfg\n\nh"])
        #expect(lines == ["ab", "cde", "fg", ""])
        #expect(rest == "h")
    }

    @Test func limitIsOnContentBytes() throws {
        #expect(try split(["abcd\r\n"], max: 4).0 == ["abcd"])
        #expect(throws: LineError.lineTooLong(maxLength: 4)) { try split(["abcde\n"], max: 4) }
        #expect(throws: LineError.lineTooLong(maxLength: 4)) { try split(["ab", "cde"], max: 4) }
        #expect(throws: LineError.lineTooLong(maxLength: 4)) { try split(["ab", "cde\n"], max: 4) }
    }

    /// A CRLF line exactly at the limit, however reads split it: the `\r` is part of the
    /// break, also while it waits alone at the end of a read for its `\n` (it failed when a
    /// read ended between the two; found by probing TCP lines, 2026-11-27). One byte more
    /// fails at every split.
    @Test func aCRLFLineAtTheLimitIsAcceptedWhereverAReadEnds() throws {
        let atLimit = Array("abcde\r\nxy\n".utf8), over = Array("abcdef\r\n".utf8)
        for cut in 0...atLimit.count {
            for second in cut...atLimit.count {
                let chunks = [atLimit[..<cut], atLimit[cut..<second], atLimit[second...]].map { String(decoding: $0, as: UTF8.self) }
                #expect(try split(chunks, max: 5).0 == ["abcde", "xy"], "\(chunks)")
            }
        }
        for cut in 0...over.count {
            let chunks = [over[..<cut], over[cut...]].map { String(decoding: $0, as: UTF8.self) }
            #expect(throws: LineError.lineTooLong(maxLength: 5), "\(chunks)") { try split(chunks, max: 5) }
        }
        // A `\r` at the limit that is not followed by `\n` was content: over the limit.
        #expect(throws: LineError.lineTooLong(maxLength: 5)) { try split(["abcde\r", "x"], max: 5) }
    }

    @Test func invalidUTF8IsReplacedNotRejected() throws {
        var b = LineBuffer()
        var out: [String] = []
        try b.append([0x61, 0xFF, 0x62, 10]) { out.append($0) }
        #expect(out == ["a\u{FFFD}b"])
    }

    @Test func linesOperatorSendsLastPartialLineAndFailsOnLongLine() throws {
        let chunks = Signal<[UInt8]>.fromArray([Array("x\ny".utf8), Array("z".utf8)])
        #expect(try chunks.lines().toArray() == ["x", "yz"])
        var events: [Event<String>] = []
        Signal<[UInt8]>.fromArray([Array("ok\n".utf8), Array("toolong\n".utf8)]).lines(maxLength: 3)
            .subscribeEvents { events.append($0) }
        #expect(events == [.next("ok"), .error(LineError.lineTooLong(maxLength: 3))])
    }
}

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

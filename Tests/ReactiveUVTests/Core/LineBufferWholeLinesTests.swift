import Testing
@testable import ReactiveUV

@Suite struct LineBufferWholeLinesTests {
    func feed(_ chunks: [String], max: Int = 100) throws -> ([String], String?) {
        var b = LineBuffer(maxLength: max)
        var out: [String] = []
        for c in chunks {
            try Array(c.utf8).withUnsafeBytes { raw in
                try b.appendWholeLines(raw) { out.append(String(decoding: $0, as: UTF8.self)) }
            }
        }
        return (out, b.finishWholeLines().map { String(decoding: $0, as: UTF8.self) })
    }

    @Test func emitsCompleteLinesAsOneChunkAndKeepsThePartialOne() throws {
        let (chunks, rest) = try feed(["a\nb", "c\nd\ne", "f"])
        #expect(chunks == ["a\n", "bc\nd\n"])
        #expect(rest == "ef\n")
    }

    @Test func bytesAreUnchanged() throws {
        #expect(try feed(["x\r\ny\n"]).0 == ["x\r\ny\n"])
    }

    @Test func lineLimitHoldsAcrossChunks() throws {
        #expect(try feed(["abcd\r\n"], max: 4).0 == ["abcd\r\n"])
        #expect(throws: LineError.lineTooLong(maxLength: 4)) { try feed(["ok\nabcde\n"], max: 4) }
        #expect(throws: LineError.lineTooLong(maxLength: 4)) { try feed(["ab", "cd", "e"], max: 4) }
        #expect(throws: LineError.lineTooLong(maxLength: 4)) { try feed(["abc", "de\n"], max: 4) }
    }
}

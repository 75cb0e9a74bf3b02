import ReactiveUVHTTP
import Testing

/// The event-stream format both ways: what the server writes, and what the parser reads,
/// split anywhere.
@Suite struct ServerSentEventParserTests {
    @Test func encodingSplitsDataLinesAndCannotBeInjected() {
        let e = ServerSentEvent(data: "one\ntwo\r\nthree", id: "7\ndata: evil", event: "tick\r\n", retry: 500)
        #expect(String(decoding: e.encoded, as: UTF8.self) == "event: tick\nid: 7data: evil\nretry: 500\ndata: one\ndata: two\ndata: three\n\n")
    }

    @Test func parsesWhatIsEncodedWhateverTheSplits() throws {
        let events = [
            ServerSentEvent(data: "a", id: "1"),
            ServerSentEvent(data: "multi\nline", id: "2", event: "update"),
            ServerSentEvent(data: "", id: "3"),
        ]
        let wire = Array("retry: 1500\n\n: heartbeat\n\n".utf8) + events.flatMap(\.encoded)
        for size in [1, 2, 5, wire.count] {
            var parser = ServerSentEventParser()
            var got: [ServerSentEvent] = []
            var i = 0
            while i < wire.count {
                got += try parser.parse(Array(wire[i..<min(wire.count, i + size)]))
                i += size
            }
            #expect(got == events, "reads of \(size)")
            #expect(parser.lastEventID == "3")
            #expect(parser.reconnectionTime == 1500)
        }
    }

    @Test func crAndCRLFLineEndsAndFieldsWithoutSpace() throws {
        var parser = ServerSentEventParser()
        let got = try parser.parse(Array("data:x\r\ndata: y\rid:9\r\n\r\nevent: e\ndata\n\n".utf8))
        #expect(got == [ServerSentEvent(data: "x\ny", id: "9"), ServerSentEvent(data: "", id: "9", event: "e")])
    }

    @Test func overlongLinesAreRefused() {
        var parser = ServerSentEventParser(maxLineBytes: 10, maxEventBytes: 15)
        #expect(throws: ServerSentEventParser.Failure.tooLong(limit: 10)) { try parser.parse(Array("data: 0123456789\n".utf8)) }
        var events = ServerSentEventParser(maxLineBytes: 100, maxEventBytes: 15)
        #expect(throws: ServerSentEventParser.Failure.tooLong(limit: 15)) { try events.parse(Array("data: 0123456789\ndata: 0123456789\n".utf8)) }
    }
}

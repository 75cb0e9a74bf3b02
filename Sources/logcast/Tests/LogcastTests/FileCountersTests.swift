import Testing

@testable import logcast

/// `/metrics`' per-file line count: every line of a chunk once, a last line without its
/// break included, whatever the lengths.
@Suite struct FileCountersTests {
    @Test func linesAreCountedAsTheBytesSay() {
        let cases: [[UInt8]] = [
            [], Array("\n".utf8), Array("\n\n\n".utf8), Array("a".utf8), Array("a\nb".utf8), Array("a\nb\n".utf8),
            Array((String(repeating: "x", count: 70_000) + "\n" + "tail").utf8),
            (0..<5_000).flatMap { Array((String(repeating: "y", count: $0 % 97) + "\n").utf8) },
        ]
        for chunk in cases {
            let counters = FileCounters(exists: true)
            counters.delivered(chunk)
            let feeds = chunk.reduce(0) { $0 + ($1 == 10 ? 1 : 0) }
            let expected = feeds + (chunk.last.map { $0 != 10 ? 1 : 0 } ?? 0)
            #expect(FileCounters.lineFeeds(in: chunk) == feeds, "\(chunk.count) bytes")
            #expect(counters.lines == expected, "\(chunk.count) bytes")
            #expect(counters.bytes == chunk.count)
        }
    }
}

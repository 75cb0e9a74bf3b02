import XCTest

@testable import logcast

/// `FilterSet.scan` on its own: a block large enough to be split between the loop thread
/// and the helper gives every pattern exactly its lines, in order — also when the
/// helper's match buffer fills (many patterns matching every line), and the same as
/// blocks too small to be split.
final class FilterSetScanTests: XCTestCase {
    func block(_ lines: [String]) -> LineBlock {
        var builder = LineBlockBuilder()
        builder.append(prefix: Array("f: ".utf8), chunk: Array(lines.map { $0 + "\n" }.joined().utf8))
        return builder.seal(sequence: 0)
    }

    func testASplitScanFindsWhatAWholeScanFindsEvenWhenTheHelpersBufferFills() throws {
        // 40 patterns; `line` matches every line, so the upper half's 10,000 lines bring
        // the helper 10,000+ pairs: more than its first 4,096-pair buffer holds.
        var patterns: [(id: PatternID, text: String)] = [(0, "line"), (1, "-[0-9]*7$"), (2, "absent")]
        for k in 3..<40 { patterns.append((PatternID(k), "-\(k)[0-9]*$")) }
        let set = try FilterSet.compile(patterns).get()
        let lines = (0..<20_000).map { "line-\($0)" }
        let big = block(lines)
        XCTAssertTrue(set.scan(big), "20,000 lines are split")
        func expected(_ id: PatternID) -> [UInt32] {
            switch id {
            case 0: return (0..<20_000).map { UInt32($0) }
            case 1: return (0..<20_000).filter { $0 % 10 == 7 }.map { UInt32($0) }
            case 2: return []
            default: return (0..<20_000).filter { "\($0)".hasPrefix("\(id)") }.map { UInt32($0) }
            }
        }
        for (id, _) in patterns {
            XCTAssertEqual(big.matches[id] ?? [], expected(id), "pattern \(id)")
        }
        // A second split scan with the grown buffer, and small blocks scanned whole, agree.
        let again = block(lines)
        XCTAssertTrue(set.scan(again))
        XCTAssertEqual(again.matches, big.matches)
        let small = block(Array(lines[..<(FilterSet.splitLines - 1)]))
        XCTAssertFalse(set.scan(small), "below the split size the loop scans alone")
        for (id, _) in patterns {
            XCTAssertEqual(small.matches[id] ?? [], expected(id).filter { $0 < FilterSet.splitLines - 1 }, "pattern \(id), small block")
        }
    }
}

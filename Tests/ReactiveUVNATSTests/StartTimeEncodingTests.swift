import Testing

@testable import ReactiveUVNATS

/// cnats 3.4 sends a start time's nanoseconds without zero padding, so a fraction below
/// 0.1 s would move later; `consume(from: .time)` starts at the whole second instead and
/// skips what came before (JetStream.startTimeCnatsEncodes says why).
struct StartTimeEncodingTests {
    @Test func aFractionBelowATenthOfASecondIsRoundedDownToItsSecond() {
        #expect(JetStream.startTimeCnatsEncodes(1_700_000_005_012_345_678) == 1_700_000_005_000_000_000)
        #expect(JetStream.startTimeCnatsEncodes(1_700_000_005_000_000_001) == 1_700_000_005_000_000_000)
        #expect(JetStream.startTimeCnatsEncodes(1_700_000_005_099_999_999) == 1_700_000_005_000_000_000)
    }

    @Test func timesCnatsEncodesExactlyAreKept() {
        #expect(JetStream.startTimeCnatsEncodes(1_700_000_005_000_000_000) == nil)  // whole second
        #expect(JetStream.startTimeCnatsEncodes(1_700_000_005_100_000_000) == nil)  // nine digits
        #expect(JetStream.startTimeCnatsEncodes(1_700_000_005_987_654_321) == nil)
    }
}

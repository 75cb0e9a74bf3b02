import ReactiveUV
import Testing

@testable import logcast

/// What the NATS connect loop says while servers refuse or are away: the first failure,
/// then nothing for the same one until a minute passed, a different one at once, and the
/// count of failed attempts when it connects.
@Suite struct RetryReportTests {
    let start = SchedulerTime(nanoseconds: 1_000_000_000)

    @Test func theSameErrorIsSaidOnceAMinuteWithTheAttemptsCounted() {
        var report = RetryReport()
        let refused = "connection refused"
        #expect(report.failed(refused, now: start) == "connection refused; retrying (every 2 s at most; said again once a minute while it lasts)")
        // 29 more attempts, 2 s apart: nothing said.
        for k in 1...29 { #expect(report.failed(refused, now: start.advanced(by: Double(2 * k))) == nil, "attempt \(k + 1)") }
        // The 31st, 60 s after the first: said again with the count.
        #expect(report.failed(refused, now: start.advanced(by: 60)) == "connection refused; still retrying (31 attempts failed)")
        #expect(report.failed(refused, now: start.advanced(by: 62)) == nil)
        #expect(report.succeeded() == " after 32 failed attempts")
        // A new episode starts from nothing.
        #expect(report.succeeded() == "")
        #expect(report.failed(refused, now: start.advanced(by: 100))?.hasSuffix("retrying (every 2 s at most; said again once a minute while it lasts)") == true)
        #expect(report.succeeded() == " after 1 failed attempt")
    }

    @Test func aDifferentErrorIsSaidAtOnce() {
        var report = RetryReport()
        _ = report.failed("connection refused", now: start)
        #expect(report.failed("Authorization Violation", now: start.advanced(by: 2)) == "Authorization Violation; still retrying (2 attempts failed)")
        #expect(report.failed("Authorization Violation", now: start.advanced(by: 4)) == nil)
        #expect(report.failed("connection refused", now: start.advanced(by: 6)) == "connection refused; still retrying (4 attempts failed)")
    }
}

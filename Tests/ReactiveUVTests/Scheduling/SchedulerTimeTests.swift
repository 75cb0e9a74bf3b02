import ReactiveUV
import Testing

/// `SchedulerTime` arithmetic with seconds (issue 13 §2).
@Suite struct SchedulerTimeTests {
    @Test func addingAndSubtractingSecondsMovesTheTime() {
        let t = SchedulerTime(nanoseconds: 2_000_000_000)
        #expect((t + 1.5).nanoseconds == 3_500_000_000)
        #expect((1.5 + t).nanoseconds == 3_500_000_000)
        #expect((t - 0.25).nanoseconds == 1_750_000_000)
        #expect((t + 1) - t == 1)
        #expect(t - (t + 2) == -2)
        var u = t
        u += 0.5
        u -= 2
        #expect(u.nanoseconds == 500_000_000)
    }

    @Test func arithmeticClampsInsteadOfTrapping() {
        let t = SchedulerTime(nanoseconds: 1_000)
        #expect((t - 10).nanoseconds == 0, "never before the origin")
        #expect((t + .infinity).nanoseconds > t.nanoseconds)
        #expect((t + .nan).nanoseconds == t.nanoseconds, "NaN seconds move nothing")
        #expect((SchedulerTime(nanoseconds: .max) + 1).nanoseconds == .max)
    }

    @Test func worksWithATestSchedulersClock() {
        let scheduler = TestScheduler()
        let deadline = scheduler.now + 3
        scheduler.advance(by: 3)
        #expect(scheduler.now == deadline)
        #expect(scheduler.now - SchedulerTime(nanoseconds: 0) == 3)
    }
}

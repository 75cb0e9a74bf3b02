import Testing
@testable import ReactiveUV
import ReactiveUVTestKit

/// using (beyond RAC 2, catalogue §20 ★): a resource per subscription, disposed with it.
@Suite struct UsingTests {
    final class Resource: Disposable, @unchecked Sendable {}

    @Test func usingDisposesTheResourceOnCompletion() {
        var resources: [Resource] = []
        let log = opRecord(Signal<Int>.using({ () -> Resource in
            let r = Resource()
            resources.append(r)
            return r
        }, { _ in .fromArray([1, 2]) }))
        #expect(log.events == [.next(1), .next(2), .completed])
        #expect(resources.count == 1 && resources[0].isDisposed)
    }

    @Test func usingDisposesTheResourceOnErrorAndOnDisposal() {
        let r1 = Resource(), r2 = Resource()
        let log = opRecord(Signal<Int>.using({ r1 }, { _ in .error(OpError.boom) }))
        #expect(log.events == [.error(OpError.boom)])
        #expect(r1.isDisposed)
        let p = OpProbe()
        let log2 = opRecord(Signal<Int>.using({ r2 }, { _ in Signal<Int>.never().probed(p) }))
        #expect(!r2.isDisposed)
        log2.dispose()
        #expect(r2.isDisposed && p.live == 0)
    }

    @Test func usingMakesAResourcePerSubscriptionAndAThrowingFactoryIsAnError() {
        var made = 0
        let s = Signal<Int>.using({ () -> Resource in
            made += 1
            return Resource()
        }, { _ in .return(made) })
        #expect(opRecord(s).values == [1])
        #expect(opRecord(s).values == [2])
        let failing = Signal<Int>.using({ () throws -> Resource in throw OpError.boom }, { _ in .return(1) })
        #expect(opRecord(failing).events == [.error(OpError.boom)])
    }
}

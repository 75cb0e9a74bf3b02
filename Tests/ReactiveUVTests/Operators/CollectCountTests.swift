import Testing
@testable import ReactiveUV
import ReactiveUVTestKit

/// collect(count:) (beyond RAC 2, catalogue §20 ★) under a re-entrant send.
@Suite struct CollectCountTests {
    @Test func collectCountUnderAReentrantSend() {
        let source = Subject<Int>()
        var got: [[Int]] = []
        source.collect(count: 2).subscribeNext { [unowned source] chunk in
            got.append(chunk)
            if chunk == [1, 2] {
                source.sendNext(3)
                source.sendNext(4)
            }
        }
        source.sendNext(1)
        source.sendNext(2)
        #expect(got == [[1, 2], [3, 4]])
    }
}

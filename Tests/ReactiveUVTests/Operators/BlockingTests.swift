import Glibc
import Testing
import XCTest
@testable import ReactiveUV

/// first, firstOrDefault, waitUntilCompleted, toArray, blockingSequence (catalogue §4i),
/// called from a test thread that runs no loop; sources on this thread or on a background
/// scheduler's loop thread. Serialized: each test blocks its thread while it waits.
@Suite(.serialized) struct BlockingTests {
    /// Sends `values` then completes (or fails) on a background scheduler's loop thread.
    func background(_ values: [Int], error: OpError? = nil) -> Signal<Int> {
        let tail: Signal<Int> = error.map { .error($0) } ?? .empty()
        return Signal.fromArray(values).concat(tail).subscribeOn(Scheduler.background())
    }

    @Test func firstReturnsTheFirstValueAndDisposesTheSource() throws {
        let p = OpProbe()
        let source = Signal<Int>.create { s in
            s.sendNext(1)
            s.sendNext(2)
            return nil
        }.probed(p)
        #expect(try source.first() == 1)
        #expect(p.live == 0, "subscribes to take(1): disposed after the first value")
        #expect(try background([7, 8]).first() == 7)
    }

    @Test func firstReturnsNilOnCompletionAndThrowsTheError() throws {
        #expect(try Signal<Int>.empty().first() == nil)
        #expect(try background([]).first() == nil)
        #expect(throws: OpError.boom) { try Signal<Int>.error(OpError.boom).first() }
        #expect(throws: OpError.boom) { try background([], error: .boom).first() }
    }

    @Test func firstOrDefaultReturnsTheDefaultOnCompletionAndThrowsTheError() throws {
        #expect(try Signal<Int>.empty().firstOrDefault(5) == 5)
        #expect(try Signal.fromArray([1, 2]).firstOrDefault(5) == 1)
        #expect(try background([3]).firstOrDefault(5) == 3)
        #expect(throws: OpError.boom) { try background([], error: .boom).firstOrDefault(5) }
        #expect(try background([4], error: .boom).firstOrDefault(5) == 4, "a value before the error is the answer")
    }

    @Test func firstOrDefaultReportsSuccessAndError() {
        var success = false
        var error: (any Error)?
        #expect(background([4]).firstOrDefault(0, success: &success, error: &error) == 4)
        #expect(success && error == nil)
        #expect(Signal<Int>.empty().firstOrDefault(9, success: &success, error: &error) == 9)
        #expect(success && error == nil, "completion without a value is a success")
        #expect(background([], error: .boom).firstOrDefault(9, success: &success, error: &error) == 9)
        #expect(!success)
        #expect(error as? OpError == .boom)
    }

    @Test func waitUntilCompletedIgnoresValuesAndThrowsTheError() throws {
        try background([1, 2, 3]).waitUntilCompleted()
        try Signal<Int>.empty().waitUntilCompleted()
        #expect(throws: OpError.boom) { try background([1], error: .boom).waitUntilCompleted() }
        var error: (any Error)?
        #expect(background([1]).waitUntilCompleted(error: &error))
        #expect(!Signal<Int>.error(OpError.other).waitUntilCompleted(error: &error))
        #expect(error as? OpError == .other)
    }

    @Test func toArrayReturnsAllValuesOrThrows() throws {
        #expect(try background([1, 2, 3]).toArray() == [1, 2, 3])
        #expect(try Signal<Int>.empty().toArray() == [])
        #expect(try Signal.fromArray([4, 5]).toArray() == [4, 5])
        #expect(throws: OpError.boom) { try background([1, 2], error: .boom).toArray() }
    }

    @Test func blockingOperatorsOnAValueFromAnotherThreadLater() throws {
        // The value arrives from a background loop after a (virtual-free) hop: deliverOn.
        let bg = Scheduler.background()
        #expect(try Signal.fromArray([1, 2]).deliverOn(bg).toArray() == [1, 2])
        #expect(try Signal.fromArray([9]).deliverOn(bg).first() == 9)
    }

    @Test func blockingSequenceYieldsEveryValueThenEnds() {
        #expect(Array(Signal.fromArray([1, 2, 3]).blockingSequence) == [1, 2, 3])
        #expect(Array(background([4, 5, 6]).blockingSequence) == [4, 5, 6])
        #expect(Array(background([1], error: .boom).blockingSequence) == [1], "an error ends the sequence")
        let failing = background([1, 2], error: .boom).blockingSequence.makeIterator()
        #expect(failing.next() == 1)
        #expect(failing.error == nil, "values remain: no error yet")
        #expect(failing.next() == 2)
        #expect(failing.next() == nil)
        #expect(failing.error as? OpError == .boom, "the iterator keeps the error that ended it")
        let completing = Signal.fromArray([1]).blockingSequence.makeIterator()
        #expect(completing.next() == 1)
        #expect(completing.next() == nil)
        #expect(completing.error == nil, "completion is no error")
    }

    @Test func blockingSequenceFromABackgroundThreadValueByValue() {
        let bg = Scheduler.background()
        var got: [Int] = []
        for v in Signal.fromArray(Array(1...50)).deliverOn(bg).blockingSequence { got.append(v) }
        #expect(got == Array(1...50))
    }

    @Test func leavingABlockingSequenceEarlyDisposesTheSubscription() {
        let p = OpProbe()
        let source = Signal<Int>.create { s in
            s.sendNext(1)
            s.sendNext(2)
            s.sendNext(3)
            return nil
        }.probed(p)
        var got: [Int] = []
        do {
            for v in source.blockingSequence {
                got.append(v)
                if v == 2 { break }
            }
        }
        #expect(got == [1, 2])
        #expect(p.live == 0)
    }
}

/// The asynchronous waits spin the main loop (catalogue §5): XCTest, on the main thread.
final class BlockingMainLoopTests: XCTestCase {
    func testAsynchronousFirstOrDefaultRunsTheMainLoopUntilAValueArrives() throws {
        let value = try Signal.fromArray([5, 6]).deliverOn(Scheduler.main).asynchronousFirstOrDefault(0, timeout: 30)
        XCTAssertEqual(value, 5)
        XCTAssertEqual(try Signal<Int>.empty().deliverOn(Scheduler.main).asynchronousFirstOrDefault(7, timeout: 30), 7)
    }

    func testAsynchronousFirstOrDefaultThrowsTheErrorOrTimesOut() {
        XCTAssertThrowsError(try Signal<Int>.error(OpError.boom).deliverOn(Scheduler.main).asynchronousFirstOrDefault(0)) {
            XCTAssertEqual($0 as? OpError, .boom)
        }
        // A signal that never answers: the outcome does not depend on how long the wait is.
        XCTAssertThrowsError(try Signal<Int>.never().asynchronousFirstOrDefault(0, timeout: 0.05)) {
            XCTAssertEqual($0 as? SignalError, .timedOut)
        }
    }

    func testAsynchronouslyWaitUntilCompleted() {
        let p = OpProbe()
        XCTAssertNoThrow(try Signal.fromArray([1, 2]).probed(p).deliverOn(Scheduler.main).asynchronouslyWaitUntilCompleted(timeout: 30))
        XCTAssertEqual(p.live, 0)
        XCTAssertThrowsError(try Signal<Int>.error(OpError.other).deliverOn(Scheduler.main).asynchronouslyWaitUntilCompleted()) {
            XCTAssertEqual($0 as? OpError, .other)
        }
        XCTAssertThrowsError(try Signal<Int>.never().probed(p).asynchronouslyWaitUntilCompleted(timeout: 0.05))
        XCTAssertEqual(p.live, 0, "the wait disposes its subscription when it gives up")
    }

    func testBlockingFirstOnTheMainThreadRunsTheMainLoop() throws {
        // On a loop's own thread the blocking operators run that loop, so work queued to it
        // (here: deliverOn(main)) still arrives.
        XCTAssertEqual(try Signal.fromArray([3]).deliverOn(Scheduler.main).first(), 3)
        XCTAssertEqual(try Signal.fromArray([1, 2]).deliverOn(Scheduler.main).toArray(), [1, 2])
    }
}

/// The README's former example of a blocking wait that surfaces the error, compiled and run
/// exactly as it was written (issue 13 §2). The documentation's examples now use a refused
/// connect instead (Tests/DocExamplesTests), which needs no privileges to show.
final class BlockingErrorReadmeTests: XCTestCase {
    /// `do { try TCP.listen(host: "127.0.0.1", port: 80).first() } catch UVError.permissionDenied`
    /// catches EACCES. Binding a port below 1024 needs CAP_NET_BIND_SERVICE: when the tests
    /// run as root, the capability is dropped from this (the main) thread's effective set for
    /// the duration of the call (capabilities are per thread on Linux, and `first()` binds on
    /// the main loop, that is on this thread), then restored.
    func testReadmeListenOnPort80FirstThrowsPermissionDenied() throws {
        let log = SeedLog()
        try withoutBindServiceCapability {
            do { try TCP.listen(host: "127.0.0.1", port: 80).first() }
            catch UVError.permissionDenied { log("permissionDenied") }
            catch { log("other: \(error)") }
        }
        XCTAssertEqual(log.entries, ["permissionDenied"])
        // The failed listener closed its handle (the main loop is shared: count IO objects).
        XCTAssertTrue(EventLoop.main.run(until: { ioResourceCount(EventLoop.main) == 0 }, timeout: 10))
    }

    /// The error names the code, the operation and the address.
    func testFirstThrowsTheUVErrorWithWhatWasBeingDone() throws {
        var caught: (any Error)?
        try withoutBindServiceCapability {
            do { _ = try TCP.listen(host: "127.0.0.1", port: 80).first() } catch { caught = error }
        }
        let description = String(describing: caught ?? SeedError("nothing thrown"))
        XCTAssertTrue(description.contains("EACCES"), description)
        XCTAssertTrue(description.contains("127.0.0.1:80"), description)
        XCTAssertTrue(EventLoop.main.run(until: { ioResourceCount(EventLoop.main) == 0 }, timeout: 10))
    }

    /// Runs `body` with CAP_NET_BIND_SERVICE cleared from the calling thread's effective
    /// capabilities (kept in the permitted set, so it can be restored); unprivileged
    /// processes lack it anyway and run `body` as is.
    private func withoutBindServiceCapability(_ body: () throws -> Void) throws {
        typealias CapCall = @convention(c) (UnsafeMutableRawPointer, UnsafeMutableRawPointer) -> Int32
        guard let getSym = dlsym(nil, "capget"), let setSym = dlsym(nil, "capset") else {
            XCTFail("glibc exports capget/capset")
            return
        }
        let capget = unsafeBitCast(getSym, to: CapCall.self)
        let capset = unsafeBitCast(setSym, to: CapCall.self)
        // struct __user_cap_header_struct { u32 version; int pid; } (version 3: two data words),
        // struct __user_cap_data_struct { u32 effective, permitted, inheritable; }[2].
        var header: (UInt32, Int32) = (0x2008_0522, 0)
        var data = [UInt32](repeating: 0, count: 6)
        let got = withUnsafeMutableBytes(of: &header) { h in data.withUnsafeMutableBytes { capget(h.baseAddress!, $0.baseAddress!) } }
        XCTAssertEqual(got, 0, "capget: errno \(errno)")
        let bindService: UInt32 = 1 << 10  // CAP_NET_BIND_SERVICE
        let saved = data
        if data[0] & bindService != 0 {
            data[0] &= ~bindService
            let set = withUnsafeMutableBytes(of: &header) { h in data.withUnsafeMutableBytes { capset(h.baseAddress!, $0.baseAddress!) } }
            XCTAssertEqual(set, 0, "capset: errno \(errno)")
        }
        defer {
            if saved[0] & bindService != 0 {
                var restore = saved
                header = (0x2008_0522, 0)
                let back = withUnsafeMutableBytes(of: &header) { h in restore.withUnsafeMutableBytes { capset(h.baseAddress!, $0.baseAddress!) } }
                XCTAssertEqual(back, 0, "capset (restore): errno \(errno)")
            }
        }
        try body()
    }
}

import CSystemShims
import Glibc
import XCTest

@testable import ReactiveUV

/// The event loop's work queue: scheduled blocks and `execute` work share one FIFO queue;
/// a scheduled block is cancelled by disposing the disposable `schedule` returned, which
/// the loop looks up by the block's position instead of touching it per entry.
final class WorkQueueTests: XCTestCase {
    /// A block disposed by an earlier block of the same batch does not run.
    func testBlockDisposedByAnEarlierBlockOfTheSameBatchNeverRuns() throws {
        let loop = try EventLoop()
        let scheduler = loop.scheduler
        let ran = Confined<[Int]>([])
        let victim = Confined<Disposable?>(nil)
        scheduler.schedule {
            ran.value.append(1)
            victim.value?.dispose()
        }
        victim.value = scheduler.schedule { ran.value.append(2) }
        scheduler.schedule { ran.value.append(3) }
        XCTAssertTrue(loop.run(until: { ran.value.last == 3 }, timeout: 30))
        XCTAssertEqual(ran.value, [1, 3])
        XCTAssertEqual(victim.value?.isDisposed, true)
        XCTAssertTrue(loop.cancelledPositions.isEmpty, "the record is consumed when the entry is reached")
        XCTAssertNoThrow(try loop.close())
    }

    /// A disposal on another thread that happens before the loop reaches the block (here:
    /// the running block waits for the other thread to say it disposed) stops it, even
    /// though the block was already in the batch being run.
    func testBlockDisposedFromAnotherThreadWhileItsBatchRunsNeverRuns() throws {
        let loop = try EventLoop()
        let scheduler = loop.scheduler
        let ran = Confined<[String]>([])
        let disposedElsewhere = Latch()
        let victim = Locked<Disposable?>(nil)
        scheduler.schedule {
            ran.value.append("first")
            let other = TestThread {
                victim.value?.dispose()
                disposedElsewhere.countDown()
            }
            XCTAssertTrue(disposedElsewhere.wait(timeout: 30))
            other.join()
        }
        victim.withLock { $0 = scheduler.schedule { ran.value.append("disposed") } }
        scheduler.schedule { ran.value.append("last") }
        XCTAssertTrue(loop.run(until: { ran.value.last == "last" }, timeout: 30))
        XCTAssertEqual(ran.value, ["first", "last"])
        XCTAssertTrue(loop.cancelledPositions.isEmpty)
        XCTAssertNoThrow(try loop.close())
    }

    /// Every other block of 10,000 disposed from another thread before the loop runs:
    /// exactly the others run, in order, and no cancellation record is left behind.
    func testHalfOfTenThousandBlocksDisposedElsewhere() throws {
        let loop = try EventLoop()
        let scheduler = loop.scheduler
        let ran = Confined<[Int]>([])
        let disposables = Locked<[Disposable]>([])
        let n = 10_000
        TestThread {
            for i in 0..<n {
                let d = scheduler.schedule { ran.value.append(i) }!
                disposables.withLock { $0.append(d) }
            }
        }.join()
        TestThread {
            for (i, d) in disposables.value.enumerated() where i % 2 == 1 { d.dispose() }
        }.join()
        scheduler.schedule { ran.value.append(-1) }
        XCTAssertTrue(loop.run(until: { ran.value.last == -1 }, timeout: 60))
        let expected = Array(stride(from: 0, to: n, by: 2)) + [-1]
        XCTAssertTrue(ran.value == expected, "\(ran.value.count) ran, first odd: \(ran.value.first { $0 % 2 != 0 } ?? 0)")
        XCTAssertTrue(loop.cancelledPositions.isEmpty)
        XCTAssertEqual(loop.cancellations.load(), 0)
        XCTAssertFalse(loop.hasQueuedWork)
        XCTAssertNoThrow(try loop.close())
    }

    /// Disposing after the block ran, or twice, records nothing and changes nothing.
    func testDisposingAfterTheBlockRanIsANoOp() throws {
        let loop = try EventLoop()
        let ran = Confined(0)
        let d = loop.scheduler.schedule { ran.value += 1 }!
        XCTAssertTrue(loop.run(until: { ran.value == 1 }, timeout: 30))
        d.dispose()
        d.dispose()
        XCTAssertTrue(d.isDisposed)
        XCTAssertTrue(loop.cancelledPositions.isEmpty)
        XCTAssertEqual(loop.cancellations.load(), 0)
        XCTAssertNoThrow(try loop.close())
    }

    /// Blocks of two schedulers and `execute` work interleaved on one loop run in the
    /// order they were handed in, each block with its own scheduler as `current` and
    /// `execute` work with none (a loop thread that is not the main thread).
    func testCurrentFollowsEachEntryThroughAMixedBatch() throws {
        let loop = try EventLoop()
        let a = loop.scheduler
        let b = LoopScheduler(loop: loop, name: "b")
        let seen = Confined<[String]>([])
        // The loop is bound to this (the main) thread, where `current` is `Scheduler.main`
        // when no scheduler runs a block.
        @Sendable func name(_ s: Scheduler?) -> String {
            s === a ? "a" : s === b ? "b" : s === Scheduler.main ? "main" : s == nil ? "nil" : "other"
        }
        a.schedule { seen.value.append("a:" + name(Scheduler.current)) }
        a.schedule { seen.value.append("a:" + name(Scheduler.current)) }
        loop.execute { seen.value.append("x:" + name(Scheduler.current)) }
        _ = b.schedule { seen.value.append("b:" + name(Scheduler.current)) }
        a.schedule { seen.value.append("a:" + name(Scheduler.current)) }
        XCTAssertTrue(loop.run(until: { seen.value.count == 5 }, timeout: 30))
        XCTAssertEqual(seen.value, ["a:a", "a:a", "x:main", "b:b", "a:a"])
        XCTAssertTrue(Scheduler.current === Scheduler.main, "restored after the drain")
        XCTAssertNoThrow(try loop.close())
    }

    /// A background scheduler nobody holds any more still runs the blocks queued on it
    /// (queue entries keep it alive), with itself as `current`.
    func testBlocksOutliveTheirBackgroundScheduler() {
        let seen = Latch()
        let wasCurrent = Locked(false)
        do {
            let scheduler = Scheduler.background(name: "transient")
            let weakScheduler = WeakBox(scheduler)
            scheduler.schedule {
                wasCurrent.withLock { $0 = Scheduler.current === weakScheduler.object && weakScheduler.object?.name == "transient" }
                seen.countDown()
            }
        }
        XCTAssertTrue(seen.wait(timeout: 30))
        XCTAssertTrue(wasCurrent.value)
    }

    /// After `close()`, `schedule` returns a disposable and the block never runs.
    func testScheduleAfterCloseIsDropped() throws {
        let loop = try EventLoop()
        let scheduler = LoopScheduler(loop: loop, name: "kept")
        XCTAssertNoThrow(try loop.close())
        let ran = Confined(false)
        let d = scheduler.schedule { ran.value = true }
        XCTAssertNotNil(d)
        d?.dispose()
        XCTAssertFalse(ran.value)
        XCTAssertFalse(loop.hasQueuedWork)
    }

    /// The queue's buffer grows through a burst far beyond the capacity it keeps, gives
    /// the memory back, and runs every entry once, in order, across rounds.
    func testBurstBeyondTheRetainedCapacity() throws {
        let loop = try EventLoop()
        let scheduler = loop.scheduler
        let n = WorkQueue.retainedCapacity * 8 + 3
        let ran = Confined<[Int]>([])
        ran.value.reserveCapacity(n)
        for i in 0..<n {
            if i % 3 == 0 { loop.execute { ran.value.append(i) } } else { scheduler.schedule { ran.value.append(i) } }
        }
        XCTAssertTrue(loop.hasQueuedWork)
        XCTAssertTrue(loop.run(until: { ran.value.count == n }, timeout: 60))
        XCTAssertTrue(ran.value == Array(0..<n), "\(ran.value.count) of \(n) ran")
        XCTAssertFalse(loop.hasQueuedWork)
        XCTAssertNoThrow(try loop.close())
    }

    /// The loop layer's task tag is opaque: a tagged task runs with the tag in the thread's
    /// context slot, switched only between tasks with different tags, untagged work sees
    /// the slot as it was outside the drain, and a retaining tag keeps its object alive
    /// exactly until its task ran.
    func testTaskContextsAreSetPerTagAndReleasedAfterTheTaskRan() throws {
        final class Tag {}
        let loop = try EventLoop()
        let seen = Confined<[String]>([])
        var one: Tag? = Tag()
        let two = Tag()
        let weakOne = WeakBox(one!)
        let oneAddress = UInt(bitPattern: Unmanaged.passUnretained(one!).toOpaque())
        let twoAddress = UInt(bitPattern: Unmanaged.passUnretained(two).toOpaque())
        let name: @Sendable () -> String = {
            switch EventLoop.currentTaskContext.map({ UInt(bitPattern: $0) }) {
            case nil: return "none"
            case oneAddress: return "one"
            case twoAddress: return "two"
            default: return "other"
            }
        }
        loop.enqueue(LoopTask(body: { seen.value.append(name()) }, context: .retaining(one!)))
        loop.enqueue(LoopTask(body: { seen.value.append(name()) }, context: .retaining(one!)))
        loop.execute { seen.value.append(name()) }
        loop.enqueue(LoopTask(body: { seen.value.append(name()) }, context: .borrowing(two)))
        loop.enqueue(LoopTask(body: { seen.value.append(name()) }, context: .retaining(one!)))
        one = nil
        XCTAssertNotNil(weakOne.object, "queued tasks hold their tag's object")
        XCTAssertTrue(loop.run(until: { seen.value.count == 5 }, timeout: 30))
        XCTAssertEqual(seen.value, ["one", "one", "none", "two", "one"])
        XCTAssertNil(EventLoop.currentTaskContext, "restored after the drain")
        XCTAssertNil(weakOne.object, "every retaining tag was given back")
        withExtendedLifetime(two) {}
        XCTAssertNoThrow(try loop.close())
    }

    /// A task handed to a closed loop is dropped, and its tag's reference given back.
    func testTaskForAClosedLoopGivesItsTagBack() throws {
        final class Tag {}
        let loop = try EventLoop()
        try loop.close()
        var tag: Tag? = Tag()
        let weak = WeakBox(tag!)
        XCTAssertNil(loop.enqueue(LoopTask(body: { XCTFail("ran on a closed loop") }, context: .retaining(tag!))))
        tag = nil
        XCTAssertNil(weak.object)
    }
}

/// A weak reference, so a test can drop its last strong one.
final class WeakBox<T: AnyObject>: @unchecked Sendable {
    weak var object: T?
    init(_ object: T) { self.object = object }
}

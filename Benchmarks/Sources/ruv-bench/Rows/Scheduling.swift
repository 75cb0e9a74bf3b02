import CNetBench
import ReactiveUV

#if canImport(Glibc)
import Glibc
#endif

// Blocks per second through `Scheduler.main.schedule`, against raw libuv
// (CNetBench/schedule_baseline.c). Each block increments a counter; the run ends when all
// have run. From the loop thread: n blocks are scheduled on the main thread, then the main
// loop runs them. From another thread: a second thread schedules while the main loop runs.
// Blocks per second = 1e9 / ns.
//
// Like the C baseline, which enqueues the same (function, context) pair n times, the main
// rows schedule one closure value n times. `schedule-closure` schedules a new closure
// literal per block instead (`for … { scheduler.schedule { counter.count += 1 } }`), which
// adds Swift's allocation of a closure context per block to the same work.

extension Row {
    static let scheduleLoop = Row(
        name: "schedule-loop",
        title: "Scheduler.main.schedule from the loop thread (baseline: raw uv_async + locked queue)",
        unit: "block", size: 1_000_000,
        reactiveUV: Scheduling.fromLoopThread, openCombine: nil,
        baseline: { n in Scheduling.checked(cnb_async_queue_run(Int64(n), 0), n) })

    static let scheduleLoopClosure = Row(
        name: "schedule-closure",
        title: "Scheduler.main.schedule { new closure } from the loop thread (baseline: raw uv_async + locked queue)",
        unit: "block", size: 1_000_000,
        reactiveUV: Scheduling.closuresFromLoopThread, openCombine: nil,
        baseline: { n in Scheduling.checked(cnb_async_queue_run(Int64(n), 0), n) })

    static let scheduleLoopTimer = Row(
        name: "schedule-timer",
        title: "Scheduler.main.schedule from the loop thread (baseline: one raw 0 ms uv_timer per block)",
        unit: "block", size: 1_000_000,
        reactiveUV: Scheduling.fromLoopThread, openCombine: nil,
        baseline: { n in Scheduling.checked(cnb_timer_run(Int64(n)), n) })

    static let scheduleThread = Row(
        name: "schedule-thread",
        title: "Scheduler.main.schedule from another thread (baseline: raw uv_async + locked queue)",
        unit: "block", size: 1_000_000,
        reactiveUV: Scheduling.fromOtherThread, openCombine: nil,
        baseline: { n in Scheduling.checked(cnb_async_queue_run(Int64(n), 1), n) })
}

enum Scheduling {
    /// A counter touched only on the main thread (by the blocks).
    final class Counter: @unchecked Sendable {
        var count = 0
    }

    static func fromLoopThread(_ n: Int) -> Int {
        let counter = Counter()
        let scheduler = Scheduler.main
        let block = { counter.count += 1 }
        for _ in 0..<n { scheduler.schedule(block) }
        _ = EventLoop.main.run(until: { counter.count == n }, timeout: 600)
        return counter.count
    }

    static func closuresFromLoopThread(_ n: Int) -> Int {
        let counter = Counter()
        let scheduler = Scheduler.main
        for _ in 0..<n { scheduler.schedule { counter.count += 1 } }
        _ = EventLoop.main.run(until: { counter.count == n }, timeout: 600)
        return counter.count
    }

    static func fromOtherThread(_ n: Int) -> Int {
        let counter = Counter()
        let thread = BenchThread {
            let scheduler = Scheduler.main
            let block = { counter.count += 1 }
            for _ in 0..<n { scheduler.schedule(block) }
        }
        _ = EventLoop.main.run(until: { counter.count == n }, timeout: 600)
        thread.join()
        return counter.count
    }

    /// The baseline's checksum (the number of blocks run), or exit on a libuv error.
    static func checked(_ ns: Int64, _ n: Int) -> Int {
        if ns < 0 {
            printError("raw libuv baseline failed: error \(ns)")
            exit(1)
        }
        return n
    }
}

/// A joinable pthread running a closure.
final class BenchThread: @unchecked Sendable {
    // Thread-safety: `thread` is written once in init, read by join on the creating thread.
    private final class Body {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }

    private var thread = pthread_t()

    init(_ body: @escaping @Sendable () -> Void) {
        let context = Unmanaged.passRetained(Body(body)).toOpaque()
        let rc = pthread_create(&thread, nil, { context in
            Unmanaged<Body>.fromOpaque(context!).takeRetainedValue().run()
            return nil
        }, context)
        precondition(rc == 0, "pthread_create failed: \(rc)")
    }

    func join() { pthread_join(thread, nil) }
}

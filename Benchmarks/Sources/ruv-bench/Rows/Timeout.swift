import ReactiveUV

// Values pushed through subject → timeout(an hour, on a TestScheduler) → sink: the per-value
// cost of a time limit on a live signal (logcast's connection handshakes, TLS). The timer
// never fires; the row measures what every value pays. OpenCombine's `timeout` needs a
// Dispatch scheduler, not in its core product, so there is no OpenCombine column.

extension Row {
    static let timeout = Row(
        name: "timeout",
        title: "subject→timeout(1 h)→sink (10M values)",
        unit: "value",
        size: 10_000_000,
        reactiveUV: Timeout.reactiveUV,
        openCombine: nil,
        baseline: Timeout.baseline
    )
}

enum Timeout {
    static func reactiveUV(_ n: Int) -> Int {
        let subject = ReactiveUV.Subject<Int>()
        var sum = 0
        let subscription = subject.timeout(3600, on: TestScheduler()).subscribeNext { sum &+= $0 }
        for i in 0..<n { subject.sendNext(i) }
        subscription.dispose()
        return sum
    }

    /// A forwarding closure that checks a flag under a lock (as a time limit racing its
    /// timer must), then the sink.
    static func baseline(_ n: Int) -> Int {
        var sum = 0
        let lock = BaselineLock()
        var done = false
        let sink: (Int) -> Void = opaque { sum &+= $0 }
        let guarded: (Int) -> Void = opaque { value in
            lock.lock()
            if !done { sink(value) }
            lock.unlock()
        }
        for i in 0..<n { guarded(i) }
        done = true
        return sum
    }
}

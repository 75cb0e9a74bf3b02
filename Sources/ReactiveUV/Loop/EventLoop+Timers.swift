import CLibUV
import CSystemShims

// Timers: one `uv_timer_t` per timer (owned by a `UVHandle`), started at an absolute deadline.
//
// Why the prepare handle: libuv keeps time in whole milliseconds, so two timers whose
// deadlines differ by less than a millisecond share a due time, and libuv then orders them
// by start order, not by deadline. A timer's uv callback therefore only marks it due; once
// per iteration, right after libuv's timer phase, the loop's `uv_prepare_t` runs the due
// timers sorted by (deadline in nanoseconds, scheduling order). The prepare handle is
// started by the first timer that fires and stopped once none is due, so the turns without
// a due timer (nearly all of a busy server's) pay nothing for it. That also keeps user code
// out of libuv 1.44's timer phase, where a 0 ms timer started from a timer callback is due
// again at once and starves IO (fixed only in libuv 1.45).
//
// Why absolute milliseconds: a timer is started with `timeout = ceil(deadline / 1 ms) -
// uv_now()` after `uv_update_time`, so its due time in libuv's heap is exactly
// `ceil(deadline / 1 ms)`, whenever it was started and however stale `uv_now` was. libuv's
// loop time is CLOCK_MONOTONIC (or its coarse variant) in milliseconds, the same clock as
// `csys_monotonic_ns`, so due times sort as deadlines do, and a timer never fires before
// its deadline on our clock (the coarse clock never runs ahead of the precise one). Should
// that ever not hold, `fire()` re-arms a timer that woke early instead of running it.

extension EventLoop {
    /// Runs `block` on the loop's thread at `deadline`, and then every `interval` if given.
    ///
    /// Usable from any thread (from another thread the timer is started through
    /// ``execute(_:)``). Timers fire in deadline order, equal deadlines in the order they
    /// were scheduled, and never before their deadline on `csys_monotonic_ns`'s clock. A
    /// repeating timer keeps its phase (deadline + k × interval) and skips ticks it fell
    /// behind on rather than bursting.
    ///
    /// - Parameters:
    ///   - deadline: monotonic nanoseconds (`csys_monotonic_ns`).
    ///   - interval: nanoseconds between runs of a repeating timer (at least 1), or `nil`.
    ///   - block: the work, run on the loop's thread.
    /// - Returns: a disposable that cancels the timer, from any thread: once `dispose()`
    ///   returns, `block` never starts again (a run already in progress on the loop thread
    ///   finishes). The `uv_timer_t` is closed on the loop's thread and freed in its close
    ///   callback.
    func scheduleTimer(at deadline: UInt64, repeatEvery interval: UInt64?, _ block: @escaping () -> Void) -> Disposable {
        let timer = LoopTimer(
            loop: self, sequence: timerSequence.fetchAdd(1), deadline: deadline,
            interval: interval.map { max($0, 1) }, block: block)
        if isCurrentThread {
            timer.start()
        } else {
            execute { timer.start() }
        }
        return timer
    }

    /// The prepare handle's callback (and the tail of every `runUV`): runs the timers that
    /// fired since the last call, in deadline order.
    func drainDueTimers() {
        if dueTimers.isEmpty { return }
        callbackDepth += 1
        defer { callbackDepth -= 1 }
        var due: [LoopTimer] = []
        swap(&due, &dueTimers)
        if due.count > 1 {
            due.sort { $0.deadline != $1.deadline ? $0.deadline < $1.deadline : $0.sequence < $1.sequence }
        }
        for timer in due { timer.fire() }
        // Nothing due any more (a timer that fired during the blocks, from a loop run
        // inside one, is run by the next pass): the prepare handle rests until a timer
        // fires again. After `close()` the handle is closing, and closing stopped it.
        if dueTimers.isEmpty && !closedOnLoop { uv_prepare_stop(prepareHandle) }
    }

    /// Starts the prepare handle for the timers due in this iteration (a timer's callback,
    /// loop thread).
    ///
    /// Why not keep it started: its callback ran on every turn of the loop, and reaching
    /// the loop from the handle (a retain and a release of it) was ~80 of an echoed
    /// message's instructions (callgrind, ruv-echo), for turns that almost never have a
    /// timer due. Started from libuv's timer phase, the handle runs in the same
    /// iteration's prepare phase, which follows it, so due timers still run in the
    /// iteration that fired them; starting a started handle does nothing.
    @inline(__always)
    func startDueTimerPass() {
        guard !closedOnLoop else { return }
        // Fails only with a NULL callback.
        _ = uv_prepare_start(prepareHandle, EventLoop.prepareCallback)
    }

    /// The prepare handle's callback: the due timers' pass.
    static let prepareCallback: uv_prepare_cb = { handle in
        guard let handle else { return }
        UVHandleCore.owner(of: handle, as: EventLoop.self).drainDueTimers()
    }
}

/// One timer on an ``EventLoop``, and the disposable that cancels it.
///
/// Thread-safety: the disposed bit (inherited from ``Disposable``, atomic) is the only
/// state touched off the loop thread; everything else belongs to the loop's thread.
final class LoopTimer: Disposable, @unchecked Sendable {
    let loop: EventLoop
    /// Scheduling order, to break ties between equal deadlines.
    let sequence: Int
    /// The next run, in monotonic nanoseconds.
    var deadline: UInt64
    /// Nanoseconds between runs, or `nil` for a one-shot timer.
    let interval: UInt64?
    /// The work; released once the timer is finished.
    var block: (() -> Void)?
    /// The libuv handle, from `start()` until its close callback (which releases this
    /// timer: the handle keeps it alive until then).
    var handle: UVHandle<uv_timer_t>?

    init(loop: EventLoop, sequence: Int, deadline: UInt64, interval: UInt64?, block: @escaping () -> Void) {
        self.loop = loop
        self.sequence = sequence
        self.deadline = deadline
        self.interval = interval
        self.block = block
        super.init()
    }

    /// Creates and arms the handle (loop thread).
    ///
    /// `uv_timer_init` and `uv_timer_start` fail only on misuse (a closing loop, a NULL
    /// callback); should they, the timer is cancelled: it never runs, and nothing is left.
    func start() {
        if isDisposed || loop.closedOnLoop {
            block = nil
            return
        }
        let loop = self.loop
        do {
            let h = try UVHandle<uv_timer_t>(loop: loop, type: UV_TIMER, operation: "uv_timer_init") {
                uv_timer_init(loop.uvLoop, $0)
            }
            h.owner = self
            h.onLoopShutdown = { [unowned self] in
                _ = markDisposed()
                closeHandle()  // with the close callback that lets go of the block
            }
            handle = h
        } catch {
            _ = markDisposed()
            block = nil
            return
        }
        arm()
    }

    /// Starts the uv timer so that it is due at `ceil(deadline / 1 ms)` on the loop's clock.
    /// Never called from inside libuv's timer phase (see the top of this file).
    func arm() {
        guard let handle, !handle.isClosing else { return }
        uv_update_time(loop.uvLoop)
        let now = uv_now(loop.uvLoop)
        let due = EventLoop.milliseconds(deadline)
        do {
            try handle.check(uv_timer_start(handle.pointer, { h in
                guard let h else { return }
                let timer = UVHandleCore.owner(of: h, as: LoopTimer.self)
                let loop = timer.loop
                if loop.dueTimers.isEmpty { loop.startDueTimerPass() }
                loop.dueTimers.append(timer)
            }, due > now ? due - now : 0, 0), "uv_timer_start")
        } catch {
            _ = markDisposed()
            closeHandle()
        }
    }

    /// Runs the block if the timer is still live and due, then re-arms or closes it.
    func fire() {
        guard !isDisposed, let block else { return }
        if csys_monotonic_ns() < deadline {
            // Woke before the deadline on our clock (see the top of the file): wait the rest.
            arm()
            return
        }
        block()
        if isDisposed { return }  // disposed by the block itself: already closing
        guard let interval else {
            self.block = nil
            closeHandle()
            return
        }
        let now = csys_monotonic_ns()
        var next = EventLoop.adding(deadline, Int64(clamping: interval))
        if next <= now {
            // Fell behind (a long block, a busy loop): skip the missed ticks, keep the phase.
            let missed = (now - deadline) / interval
            let (step, overflow) = (missed + 1).multipliedReportingOverflow(by: interval)
            next = overflow ? UInt64.max : EventLoop.adding(deadline, Int64(clamping: step))
        }
        deadline = next
        arm()
    }

    /// Closes the timer's handle (loop thread; idempotent); the memory goes in the close
    /// callback, which also lets go of the block.
    func closeHandle() {
        handle?.close { [self] in
            handle = nil
            block = nil
        }
    }

    /// Cancels the timer from any thread: marks it disposed first (so its block never
    /// starts afterwards), then closes the handle on the loop's thread.
    override func dispose() {
        guard markDisposed() else { return }
        if loop.isCurrentThread {
            closeHandle()
        } else {
            loop.execute { [self] in closeHandle() }
        }
    }
}

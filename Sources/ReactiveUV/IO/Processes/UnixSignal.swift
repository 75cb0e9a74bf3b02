import CLibUV

/// Unix signals (`SIGINT`, `SIGTERM`, `SIGHUP`, ...) as signals, through libuv's
/// `uv_signal_t`.
public enum UnixSignal {
    /// Sends `signum` each time the process receives that signal.
    ///
    /// libuv installs its own handler for the signal while at least one watch for it is
    /// active, on any loop, and forwards each arrival to every active watch, so several
    /// subscribers (on the same loop or on different ones) each see every arrival. Arrivals
    /// close together may be merged into one, as the kernel merges pending signals.
    ///
    /// When the last watch for a signal stops, libuv resets its disposition to the
    /// **default** (`SIG_DFL`), not to what it was before: after disposing, a `SIGUSR1`
    /// terminates the process as if nobody had listened. `SIGKILL` and `SIGSTOP` cannot be
    /// watched.
    ///
    /// The watch keeps its loop alive (a program that waits for `SIGTERM` keeps running).
    ///
    /// - Parameters:
    ///   - signum: the signal number, such as `SIGTERM`.
    ///   - loop: the loop to run on (see ``File``'s rule: by default the subscribing
    ///     thread's loop, else ``EventLoop/main``).
    /// - Returns: a cold signal of `signum`, once per arrival. Events arrive on the loop's
    ///   thread. It never completes; it fails with a ``UVError`` (`EINVAL` during signal on
    ///   `signal 0`) when libuv cannot watch the number. A subscription made on the loop's
    ///   thread is watching when `subscribe` returns; one made elsewhere starts when the loop
    ///   gets to it. Disposal (from any thread) stops the watch and closes the handle.
    public static func signal(_ signum: Int32, on loop: EventLoop? = nil) -> Signal<Int32> {
        AnonymousSignal { observer, lifetime in
            EventLoop.startWatcher(
                on: loop, operation: "UnixSignal.signal", target: "signal \(signum)", observer: observer, lifetime: lifetime
            ) { loop, send, fail in UnixSignalWatcher(loop: loop, signum: signum, send: send, fail: fail) }
        }
    }
}

/// One subscription of ``UnixSignal/signal(_:on:)``: a `uv_signal_t` owned by a
/// ``UVHandle``, which keeps this object alive until the handle's close callback.
///
/// Thread-safety: loop-thread confined.
final class UnixSignalWatcher: LoopSourceWatcher, @unchecked Sendable {
    let loop: EventLoop
    let signum: Int32
    let send: (Int32) -> Void
    let fail: (any Error) -> Void
    private var handle: UVHandle<uv_signal_t>?
    private var stopped = false

    init(loop: EventLoop, signum: Int32, send: @escaping (Int32) -> Void, fail: @escaping (any Error) -> Void) {
        self.loop = loop
        self.signum = signum
        self.send = send
        self.fail = fail
    }

    func start() {
        if stopped { return }
        do {
            let h = try UVHandle<uv_signal_t>(
                loop: loop, type: UV_SIGNAL, operation: "uv_signal_init", target: "signal \(signum)"
            ) { uv_signal_init(loop.uvLoop, $0) }
            h.owner = self
            handle = h
            try h.started(uv_signal_start(h.pointer, { h, signum in
                guard let h else { return }
                let watcher = UVHandleCore.owner(of: h, as: UnixSignalWatcher.self)
                if !watcher.stopped { watcher.send(signum) }
            }, signum), "signal")
        } catch {
            stop()
            fail(error)
        }
    }

    /// Stops and closes the handle (loop thread; re-entrant from the callback).
    func stop() {
        if stopped { return }
        stopped = true
        handle?.close()
        handle = nil
    }
}

import CLibUV
import CSystemShims
import Glibc

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
    /// When the last watch for a signal stops, the signal's action is what it was before
    /// the first one started (libuv alone would reset it to `SIG_DFL`): a host that
    /// ignored `SIGPIPE` or handled `SIGTERM` itself still does after disposing, so a
    /// second `SIGTERM` during its cleanup does not kill it. (The action is saved when the
    /// first of our watches of the signal starts, on any loop; a host's own `uv_signal_t`
    /// of the same signal started after ours and stopped before ours leaves libuv's
    /// handler in place, which then forwards to nobody.) `SIGKILL` and `SIGSTOP` cannot be
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
    /// Counted in ``SignalDispositions`` (undone at stop).
    private var savedDisposition = false

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
            SignalDispositions.shared.watchStarting(signum)
            savedDisposition = true
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
        // uv_close stops the watch at once (libuv resets the action if it was the last).
        handle?.close()
        handle = nil
        if savedDisposition {
            savedDisposition = false
            SignalDispositions.shared.watchStopped(signum)
        }
    }
}

/// The action each watched signal had before the first of our watches of it started, and
/// how many watches of it run (across every loop): the last one to stop puts the action
/// back, where libuv would leave `SIG_DFL`.
///
/// Thread-safety: `mutex` guards `saved` (watches start and stop on their loops' threads).
final class SignalDispositions: @unchecked Sendable {
    static let shared = SignalDispositions()

    private let mutex = csys_mutex_create(false)!
    private var saved: [Int32: (count: Int, action: sigaction)] = [:]

    /// A watch of `signum` is about to start (before libuv installs its handler).
    func watchStarting(_ signum: Int32) {
        csys_mutex_lock(mutex)
        defer { csys_mutex_unlock(mutex) }
        if let entry = saved[signum] {
            saved[signum] = (entry.count + 1, entry.action)
            return
        }
        var action = sigaction()
        if sigaction(signum, nil, &action) != 0 { return }  // not a signal: nothing to restore
        saved[signum] = (1, action)
    }

    /// A watch of `signum` stopped (after libuv stopped it): the last one restores.
    func watchStopped(_ signum: Int32) {
        csys_mutex_lock(mutex)
        defer { csys_mutex_unlock(mutex) }
        guard let entry = saved[signum] else { return }
        if entry.count > 1 {
            saved[signum] = (entry.count - 1, entry.action)
            return
        }
        saved[signum] = nil
        var action = entry.action
        _ = sigaction(signum, &action, nil)
    }
}

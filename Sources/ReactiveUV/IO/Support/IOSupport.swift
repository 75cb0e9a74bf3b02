import CLibUV
import CSystemShims
import Glibc

// Plumbing shared by the IO signals: which loop a signal runs on, how a subscription made
// on another thread reaches that loop, and process-wide setup IO needs once.

// The default loop of every stream signal is `EventLoop.sourceLoop(_:)` (shared with the
// file, tail, watch, signal and DNS signals, so they all follow one rule): the one passed,
// else the subscribing thread's own loop, else the main loop.

extension EventLoop {
    /// Runs `body` on this loop's thread: at once when called there, otherwise queued with
    /// ``execute(_:)``. IO objects use it for every libuv call made on behalf of a caller
    /// that may be on any thread (subscribing, disposing, writing, closing).
    ///
    /// `body` is not `@Sendable`: what it captures (a subscription's sink and lifetime, an
    /// IO object confined to this loop) is made safe by the threading contract: it only
    /// ever runs on the loop's thread.
    func perform(_ body: @escaping () -> Void) {
        if isCurrentThread {
            body()
        } else {
            let work = UncheckedSendable(body)
            execute { work.value() }
        }
    }

    /// Starts an IO subscription on this loop: runs `start` on the loop's thread unless the
    /// subscription was disposed before it got there (a dispose from another thread can
    /// overtake the hop). On a loop that ``close()`` has closed nothing could ever run, so
    /// the subscription fails at once with `closedLoopError(operation, target)` instead of
    /// waiting forever. A subscription still running when the loop closes is disposed then
    /// (``endAtClose(_:)``).
    func start<Value>(
        _ observer: @escaping Sink<Value>, _ lifetime: CompoundDisposable,
        operation: String, target: String?, _ start: @escaping () -> Void
    ) {
        if isClosed {
            observer(.error(closedLoopError(operation, target)))
            lifetime.dispose()
            return
        }
        IOProcessSetup.once()
        perform { [self] in
            if lifetime.isDisposed { return }
            endAtClose(lifetime)
            start()
        }
    }
}

/// Process-wide settings IO needs before its first handle.
enum IOProcessSetup {
    /// Ignores `SIGPIPE` unless the program installed its own handler.
    ///
    /// Why: libuv writes to sockets and pipes with plain `write(2)`, so a write to a peer
    /// that has gone raises `SIGPIPE`, whose default action kills the whole process. With
    /// the signal ignored the write fails with `EPIPE`, which we report as a ``UVError``.
    /// Children started by ``Subprocess`` get the default disposition back (libuv resets
    /// every signal in the child before `exec`).
    static let ignoreSIGPIPE: Void = {
        var current = sigaction()
        sigaction(SIGPIPE, nil, &current)
        if current.__sigaction_handler.sa_handler == nil {  // SIG_DFL
            signal(SIGPIPE, SIG_IGN)
        }
    }()

    /// Runs the one-time setup (cheap after the first call).
    static func once() { _ = ignoreSIGPIPE }
}

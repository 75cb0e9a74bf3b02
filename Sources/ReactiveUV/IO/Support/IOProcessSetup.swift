import Glibc

/// Process-wide settings IO needs before its first handle (run by
/// `EventLoop.start(_:_:operation:target:_:)` for every IO subscription).
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

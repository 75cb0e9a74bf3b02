import CLibUV

// How the loop-sourced signals (files, tail, fs watch, unix signals, DNS) pick their loop
// and reach it: shared by every one of them so they agree on the rule.

extension EventLoop {
    /// The loop an IO signal runs on when its caller names none: the calling thread's own
    /// loop when it has one (``EventLoop/main`` on the main thread, a pool loop on a
    /// background scheduler's thread), otherwise ``EventLoop/main``.
    ///
    /// Chosen at subscription, so a signal built on one thread and subscribed on another
    /// follows the subscriber, as RAC's `currentScheduler` did.
    static func sourceLoop(_ loop: EventLoop?) -> EventLoop {
        loop ?? EventLoop.currentThreadLoop ?? EventLoop.main
    }

    /// Runs `work` on the loop's thread: inline when the caller is already there (so a
    /// subscription on the loop thread starts its handle before `subscribe` returns, and a
    /// dispose there takes effect at once), otherwise queued with ``execute(_:)``.
    func performOnLoop(_ work: @escaping @Sendable () -> Void) {
        if isCurrentThread {
            work()
        } else {
            execute(work)
        }
    }
}

/// The error an IO signal sends when it is subscribed on a loop that ``EventLoop/close()``
/// has already closed: nothing could ever run there, and silence would hang the subscriber.
func closedLoopError(_ operation: String, _ target: String?) -> UVError {
    UVError(code: UV_EINVAL.rawValue, operation: "\(operation) on a closed EventLoop", target: target)
}

/// Whether `text` holds a NUL byte, which C would silently read as the end of the string:
/// such a path or host name is refused with `EINVAL` instead of naming something else.
func containsNUL(_ text: String) -> Bool {
    text.utf8.contains(0)
}

/// A loop-confined source of one subscription (a file watch, a signal watch, a tail): started
/// and stopped on its loop's thread.
protocol LoopSourceWatcher: AnyObject, Sendable {
    func start()
    func stop()
}

extension EventLoop {
    /// The subscription glue every watcher-backed IO signal shares: picks the loop (see
    /// ``sourceLoop(_:)``), fails at once on a closed loop, hands the watcher a `send` that
    /// drops values after disposal and a `fail` that ends the subscription, and starts and
    /// stops it on the loop's thread (disposal may come from any thread). A subscription
    /// still running when the loop closes is disposed then (``endAtClose(_:)``).
    static func startWatcher<Value>(
        on loop: EventLoop?, operation: String, target: String,
        observer: @escaping Sink<Value>, lifetime: CompoundDisposable,
        make: (EventLoop, _ send: @escaping (Value) -> Void, _ fail: @escaping (any Error) -> Void) -> any LoopSourceWatcher
    ) {
        let loop = EventLoop.sourceLoop(loop)
        if loop.isClosed {
            observer(.error(closedLoopError(operation, target)))
            return
        }
        // (made here, not in `start`'s closure: the stop below needs the same watcher)
        let watcher = make(
            loop,
            { value in if !lifetime.isDisposed { observer(.next(value)) } },
            { error in
                if lifetime.isDisposed { return }
                observer(.error(error))
                lifetime.dispose()
            })
        lifetime.add(Disposable { loop.performOnLoop { watcher.stop() } })
        loop.start(observer, lifetime, operation: operation, target: target) { watcher.start() }
    }
}

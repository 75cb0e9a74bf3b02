import CLibUV

// How an IO signal picks its loop and starts its subscription there: shared by the stream,
// file, tail, watch, signal and DNS signals, so they all follow one rule. The hop itself is
// `EventLoop.perform(_:)` (`Loop/EventLoop+Perform.swift`).

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

/// The error an IO signal sends when it is subscribed on a loop that ``EventLoop/close()``
/// has already closed: nothing could ever run there, and silence would hang the subscriber.
func closedLoopError(_ operation: String, _ target: String?) -> UVError {
    UVError(code: UV_EINVAL.rawValue, operation: "\(operation) on a closed EventLoop", target: target)
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
        lifetime.add(Disposable { loop.perform { watcher.stop() } })
        loop.start(observer, lifetime, operation: operation, target: target) { watcher.start() }
    }
}

// The one way code inside the library hops onto a loop's thread when it may be called from
// any thread (subscribing, disposing, writing, closing, starting and stopping a watcher).
// Public callers use `execute(_:)`, which always queues; this one runs inline when it can.

extension EventLoop {
    /// Runs `body` on this loop's thread.
    ///
    /// - **At once**, before `perform` returns, when called on this loop's own thread
    ///   (``isCurrentThread``): a subscription made there starts its handle before
    ///   `subscribe` returns, and a dispose made there takes effect at once.
    /// - **Queued** with ``execute(_:)`` from any other thread: it runs on the loop's thread
    ///   after the work already queued, in the order this thread handed work in; after
    ///   ``close()`` began it is dropped without running, as ``execute(_:)`` drops it.
    ///
    /// `body` is not `@Sendable`: what it captures (a subscription's sink and lifetime, an
    /// IO object confined to this loop) is made safe by the threading contract, because it
    /// only ever runs on the loop's thread. A `@Sendable` closure can be passed as well.
    ///
    /// - Parameter body: the work; it runs once, on the loop's thread (or never, when the
    ///   loop closed first).
    func perform(_ body: @escaping () -> Void) {
        if isCurrentThread {
            body()
        } else {
            let work = UncheckedSendable(body)
            execute { work.value() }
        }
    }
}

import CSystemShims

extension EventLoop {
    /// The loop bound to the calling thread — ``main`` on the main thread, a pool loop on a
    /// background loop thread — or `nil` on any other thread. Blocking operators use it to
    /// run the loop instead of blocking the thread it must run on.
    static var currentThreadLoop: EventLoop? {
        if csys_thread_is_main() { return EventLoop.main }
        return LoopPool.currentThreadLoop
    }

    /// The loop a blocking wait can run on this thread: the thread's own loop, when none of
    /// its callbacks is running (libuv's `uv_run` is not re-entrant).
    static var runnableCurrentThreadLoop: EventLoop? {
        guard let loop = currentThreadLoop, !loop.isInsideLoop, !loop.isClosed else { return nil }
        return loop
    }
}

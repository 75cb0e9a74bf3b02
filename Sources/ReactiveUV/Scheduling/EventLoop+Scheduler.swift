// The loop's own scheduler, kept with the loop (see `LoopScheduler` for how it runs blocks).

extension EventLoop {
    /// The default serial scheduler of this loop: ``Scheduler/main`` for ``main``,
    /// otherwise one scheduler per loop, created on first use.
    ///
    /// Blocks scheduled on it run on the loop's thread, with ``Scheduler/current`` set to it.
    public var scheduler: Scheduler {
        if isMain { return Scheduler.main }
        // Kept with the loop (and dropped by its close()), so every call returns the same one.
        let object = attachment { LoopScheduler(loop: self, name: "ReactiveUV.loop.\(threadID)") }
        return unsafeDowncast(object, to: LoopScheduler.self)
    }
}

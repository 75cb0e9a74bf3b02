extension StreamConnection {
    /// Writes `bytes` when subscribed; completes once they are flushed to the kernel.
    ///
    /// When nothing is queued the bytes go to the kernel at once (`uv_try_write`) and the
    /// signal completes during `subscribe`; otherwise the rest is copied into one write
    /// request and the signal completes in its callback. Writes from one thread are
    /// written in the order they are subscribed.
    ///
    /// Backpressure: with ``BackpressurePolicy/dropAndCount`` a write refused because the
    /// queue is full completes without writing and is counted in ``droppedWrites``; with
    /// ``BackpressurePolicy/disconnect`` (or past the hard limit of
    /// ``BackpressurePolicy/pauseSource``) it fails with ``WriteQueueFullError`` and the
    /// connection closes.
    ///
    /// Errors: a ``UVError`` from libuv (`EPIPE`, `ECONNRESET`: the connection then closes);
    /// `EPIPE` after ``shutdown()``; `ENOTCONN` (or the error that closed it) once the
    /// connection is closed; `ECANCELED` when the connection closes with the bytes still
    /// queued.
    ///
    /// Disposing stops the notification only: bytes handed to the connection cannot be
    /// taken back (they are freed when flushed or when the connection closes).
    ///
    /// - Parameter bytes: the bytes to write.
    /// - Returns: a cold signal that sends no value and completes on ``loop``'s thread.
    public func write(_ bytes: [UInt8]) -> Signal<Void> { stream.writeSignal(bytes) }

    /// Writes the UTF-8 bytes of `text` (see ``write(_:)-([UInt8])``).
    ///
    /// - Parameter text: the text; no line break is added.
    /// - Returns: a cold signal that completes when the bytes are flushed.
    public func write(_ text: String) -> Signal<Void> { stream.writeSignal(Array(text.utf8)) }

    /// Writes every chunk `source` sends, in order; completes when `source` has completed
    /// and every byte is flushed.
    ///
    /// The source is subscribed on ``loop``'s thread; chunks it sends from another thread
    /// (a connection on another loop) hop to this loop in order. An error from the source
    /// or from a write fails the signal and disposes the source's subscription.
    ///
    /// Backpressure (``backpressure``, ``highWaterMark``): with
    /// ``BackpressurePolicy/pauseSource`` the reads that `source` subscribes to while it is
    /// being subscribed (`other.send(connection.reads)`, `c.send(File.read(path))`, through
    /// `map` and other synchronous operators too) are paused (`uv_read_stop`; a file's next
    /// read waits) while this connection's queue is above the mark, and resumed when it has
    /// drained to half of it. Nothing else
    /// can be paused: chunks from other sources are written up to four times the mark, and
    /// then the connection closes with ``WriteQueueFullError``. With
    /// ``BackpressurePolicy/dropAndCount`` chunks are dropped and counted while the queue
    /// is full, and sending goes on; with ``BackpressurePolicy/disconnect`` the connection
    /// closes.
    ///
    /// Disposing unsubscribes from the source; bytes already handed over stay queued.
    ///
    /// ```swift
    /// // An echo server: each connection sends back what it reads.
    /// TCP.listen(host: "127.0.0.1", port: 7070)
    ///     .flattenMap { c in c.send(c.reads).then { c.shutdown() }.catchTo(.empty()) }
    /// ```
    ///
    /// - Parameter source: the chunks to write.
    /// - Returns: a cold signal that sends no value and terminates on ``loop``'s thread.
    public func send(_ source: Signal<[UInt8]>) -> Signal<Void> { stream.sendSignal(source) }

    /// Ends our direction of the connection (a TCP half-close) after the queued writes are
    /// flushed: `uv_shutdown`. Completes when the end of stream has been sent.
    ///
    /// The peer's ``reads`` complete; it can still write to us, and our ``reads`` go on
    /// until it ends its side too, at which point the connection closes by itself. Writes
    /// after a shutdown fail with `EPIPE`. Subscribing again after it finished completes
    /// at once.
    ///
    /// - Returns: a cold signal that sends no value and terminates on ``loop``'s thread;
    ///   fails with a ``UVError`` when the shutdown fails (`ENOTCONN` once closed).
    public func shutdown() -> Signal<Void> { stream.shutdownSignal() }
}

// The write signals of a stream: one write, a whole signal of chunks, the shutdown. Shared
// by connections (StreamConnection+Writing) and a subprocess's standard input.

extension UVStream {
    /// A signal that writes `bytes` when subscribed and completes once they are flushed to
    /// the kernel (see ``StreamConnection/write(_:)``).
    func writeSignal(_ bytes: [UInt8]) -> Signal<Void> {
        AnonymousSignal { [self] observer, lifetime in
            loop.start(observer, lifetime, operation: "write", target: target) {
                let waiter = SingleWrite(observer, lifetime)
                switch bytes.withUnsafeBytes({ self.write($0, waiter) }) {
                case .done, .dropped: waiter.writeFinished(nil)
                case .queued: break
                case .failed(let error): waiter.writeFinished(error)
                }
            }
        }
    }

    /// A signal that writes every chunk `source` sends, in order, and completes when the
    /// source has completed and everything is flushed (see ``StreamConnection/send(_:)``).
    func sendSignal(_ source: Signal<[UInt8]>) -> Signal<Void> {
        AnonymousSignal { [self] observer, lifetime in
            loop.start(observer, lifetime, operation: "send", target: target) {
                StreamSender(stream: self, observer: observer, lifetime: lifetime).start(source)
            }
        }
    }

    /// A signal that shuts the write side down when subscribed (see
    /// ``StreamConnection/shutdown()``).
    func shutdownSignal() -> Signal<Void> {
        AnonymousSignal { [self] observer, lifetime in
            loop.start(observer, lifetime, operation: "shutdown", target: target) {
                self.shutdown { error in
                    guard !lifetime.isDisposed else { return }
                    if let error { observer(.error(error)) } else { observer(.completed) }
                    lifetime.dispose()
                }
            }
        }
    }
}

/// One `write` subscription waiting for its bytes to flush.
final class SingleWrite: WriteWaiter {
    let observer: Sink<Void>
    let lifetime: CompoundDisposable

    init(_ observer: @escaping Sink<Void>, _ lifetime: CompoundDisposable) {
        self.observer = observer
        self.lifetime = lifetime
    }

    override func writeFinished(_ error: (any Error)?) {
        guard !lifetime.isDisposed else { return }
        if let error { observer(.error(error)) } else { observer(.completed) }
        lifetime.dispose()
    }
}

/// One `send` subscription: writes each chunk of its source, applies the stream's
/// backpressure policy, and completes when the source completed and every queued write
/// finished. Loop thread only (chunks from other threads hop to it), which is why its
/// per-chunk fields skip the dynamic exclusivity check.
final class StreamSender: WriteWaiter {
    let stream: UVStream
    let observer: Sink<Void>
    let lifetime: CompoundDisposable
    /// The source's part of the subscription (ended when the send finishes).
    var sourcePart: CompoundDisposable?
    /// The source's reads that can be paused.
    let flow = FlowControl()
    /// Queued writes whose callback has not run.
    @exclusivity(unchecked) var outstanding = 0
    @exclusivity(unchecked) var sourceCompleted = false
    @exclusivity(unchecked) var finished = false
    @exclusivity(unchecked) var paused = false

    init(stream: UVStream, observer: @escaping Sink<Void>, lifetime: CompoundDisposable) {
        self.stream = stream
        self.observer = observer
        self.lifetime = lifetime
    }

    /// Subscribes to `source` on the loop thread, collecting its pausable reads.
    func start(_ source: Signal<[UInt8]>) {
        let part = lifetime.child()
        sourcePart = part
        let loop = stream.loop
        // The collected reads' sinks lead back to this sender (source.attach below), so
        // they are let go when the source's part ends (finished or disposed): otherwise a
        // connection sending its own reads (an echo) keeps itself alive for good.
        let flow = self.flow
        part.add(Disposable { loop.perform { flow.removeAll() } })
        flow.collect {
            source.attach({ [self] event in
                if loop.isCurrentThread {
                    receive(event)
                } else {
                    // Another thread's source (a connection on another loop): keep its
                    // order by going through the loop's FIFO queue.
                    let hop = UncheckedSendable((self, event))
                    loop.execute { hop.value.0.receive(hop.value.1) }
                }
            }, part)
        }
    }

    func receive(_ event: Event<[UInt8]>) {
        if finished || lifetime.isDisposed { return }
        switch event {
        case .next(let bytes):
            bytes.withUnsafeBytes { write($0) }
        case .error(let error):
            finish(.error(error))
        case .completed:
            sourceCompleted = true
            if outstanding == 0 { finish(.completed) }
        }
    }

    /// Writes one chunk with the stream's policy, pausing the source past the mark; shared
    /// by `receive` and ``StreamConnection/sendDirect(_:)`` (whose chunks are borrowed).
    func write(_ bytes: UnsafeRawBufferPointer) {
        switch stream.write(bytes, self) {
        case .done, .dropped:
            break
        case .queued:
            outstanding += 1
            if stream.policy == .pauseSource && !paused && stream.writeQueueSize >= stream.highWaterMark.load() {
                pause()
            }
        case .failed(let error):
            finish(.error(error))
        }
    }

    override func writeFinished(_ error: (any Error)?) {
        outstanding -= 1
        if finished { return }
        if let error {
            finish(.error(error))
        } else if sourceCompleted && outstanding == 0 {
            finish(.completed)
        }
    }

    /// Stops the source's pausable reads until the queue drains to half the mark.
    private func pause() {
        paused = true
        flow.setPaused(true)
        stream.whenDrained { [self] in
            paused = false
            if !finished { flow.setPaused(false) }
        }
    }

    private func finish(_ event: Event<Void>) {
        // A failing write closes the stream, which may fail our own source (the stream's
        // reads) re-entrantly before the write reports back: finish once.
        guard !finished else { return }
        finished = true
        if let sourcePart { lifetime.end(sourcePart) }
        if !lifetime.isDisposed { observer(event) }
        lifetime.dispose()
    }
}

// `send` without a signal of chunks, for the package's own per-message writers (the
// WebSocket connection's `send(_:)` of messages): each chunk of `send(_:)` went through a
// subscriber (its lock, a retain and a release) and was an array made and freed per
// message; here the writer frames a message in memory it owns (the stack) and hands the
// bytes over borrowed, with the same sender, policy, pausing and completion.

/// The writing end of ``StreamConnection/sendDirect(_:)``: what `send(_:)`'s source would
/// send, called directly. Every member is for the loop thread only.
package struct StreamDirectSender {
    let sender: StreamSender

    /// Whether the send still takes chunks: `false` once it finished (a failed write, the
    /// source's end) or was disposed.
    package var isActive: Bool { !sender.finished && !sender.lifetime.isDisposed }

    /// Writes `bytes` as a chunk of ``StreamConnection/send(_:)`` (its backpressure policy,
    /// errors and order), from memory the caller owns: what the kernel does not take at
    /// once is copied before this returns, so the memory may be reused right after.
    /// Ignored once the send is no longer active.
    ///
    /// - Parameter bytes: the chunk, borrowed for the call.
    package func write(_ bytes: UnsafeRawBufferPointer) {
        guard isActive else { return }
        sender.write(bytes)
    }

    /// Fails the send with `error` (as the source failing would).
    package func fail(_ error: any Error) { sender.receive(.error(error)) }

    /// Ends the source: the send completes once every queued write has finished.
    package func complete() { sender.receive(.completed) }
}

extension StreamConnection {
    /// ``send(_:)`` for a writer that writes its chunks itself: `start` runs on the loop
    /// thread when the signal is subscribed, with the sender to write through, and returns
    /// the subscription that feeds it (disposed when the send ends or is disposed).
    ///
    /// Backpressure as ``send(_:)``: the reads `start` subscribes to while it runs are
    /// paused while the queue is above the high-water mark.
    ///
    /// - Parameter start: subscribes the writer's source; called once, on the loop thread.
    /// - Returns: a cold signal that sends no value and terminates on ``loop``'s thread.
    package func sendDirect(_ start: @escaping (StreamDirectSender) -> Disposable) -> Signal<Void> {
        let stream = self.stream
        return AnonymousSignal { observer, lifetime in
            stream.loop.start(observer, lifetime, operation: "send", target: stream.target) {
                StreamSender(stream: stream, observer: observer, lifetime: lifetime).startDirect(start)
            }
        }
    }
}

extension StreamSender {
    /// ``start(_:)`` for ``StreamConnection/sendDirect(_:)``: the source is whatever
    /// `subscribe` subscribes, with this sender as its writing end.
    func startDirect(_ subscribe: (StreamDirectSender) -> Disposable) {
        let part = lifetime.child()
        sourcePart = part
        let loop = stream.loop
        // As in `start`: the collected reads lead back here, so they go with the part.
        let flow = self.flow
        part.add(Disposable { loop.perform { flow.removeAll() } })
        flow.collect { part.add(subscribe(StreamDirectSender(sender: self))) }
    }
}

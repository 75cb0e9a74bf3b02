// A write without a signal, for the package's own per-message paths (the HTTP server's
// responses): `write(_:)` builds a signal, a subscriber, a lifetime and a loop-close hook
// for every write, about a third of the instructions an HTTP request cost; this is the
// same write with one object for its completion.

/// The completion of one ``StreamConnection/writeOnLoop(_:_:)``: `completion` runs once, on
/// the loop thread, with `nil` when the bytes were handed to the kernel or the error that
/// failed the write (the connection then closes, or is closed).
package final class DirectWrite: WriteWaiter {
    private var completion: (((any Error)?) -> Void)?

    /// A completion to pass to one write.
    ///
    /// - Parameter completion: run once, on the loop thread.
    package init(_ completion: @escaping ((any Error)?) -> Void) {
        self.completion = completion
    }

    override func writeFinished(_ error: (any Error)?) {
        // Let go of the closure before calling it: it may hold the writer, and the
        // request that holds this object lives until the write callback returns.
        guard let completion else { return }
        self.completion = nil
        completion(error)
    }
}

extension StreamConnection {
    /// Writes `bytes` as ``write(_:)-([UInt8])`` does, with its backpressure policy and
    /// errors, but from the loop thread only and without a signal: `done` hears the
    /// outcome, at once (written to the kernel, dropped by `.dropAndCount`, refused) or
    /// from the write callback (queued; `ECANCELED` when the connection closes first).
    ///
    /// - Parameters:
    ///   - bytes: the bytes to write.
    ///   - done: told once, on the loop thread.
    /// - Precondition: called on ``loop``'s thread.
    package func writeOnLoop(_ bytes: [UInt8], _ done: DirectWrite) {
        precondition(loop.isCurrentThread, "StreamConnection.writeOnLoop called off its loop's thread")
        switch bytes.withUnsafeBytes({ stream.write($0, done) }) {
        case .done, .dropped: done.writeFinished(nil)
        case .queued: break
        case .failed(let error): done.writeFinished(error)
        }
    }
}

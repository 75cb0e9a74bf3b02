// A write without a signal, for the package's own per-message paths (the HTTP server's
// responses): `write(_:)` builds a signal, a subscriber, a lifetime and a loop-close hook
// for every write, about a third of the instructions an HTTP request cost; this is the
// same write with one object for its completion.

/// The completion of ``StreamConnection/writeOnLoop(_:_:)``: `completion` runs on the loop
/// thread, with `nil` when the bytes were handed to the kernel or the error that failed the
/// write (the connection then closes, or is closed).
///
/// One-shot by default: `completion` runs once and is let go of before it runs (it may
/// hold the writer, and the request that holds this object lives until the write callback
/// returns). A writer that has one write in flight at a time may instead keep one
/// `reusable` object and pass it to each write (the HTTP server's connections do): no
/// object and no closure context per write. Its closure must not hold the writer strongly
/// (the writer holds it), and it runs once per write.
package final class DirectWrite: WriteWaiter {
    // Not an optional: a closure kept in an `Optional` is stored at its most general
    // abstraction, and every call through it made a reabstraction thunk's context, one
    // allocation and its release per write (~300 instructions of an HTTP request under
    // callgrind). A one-shot completion that has run is replaced by one doing nothing.
    private var completion: ((any Error)?) -> Void
    private let reusable: Bool

    /// A completion to pass to one write, or to each write in turn when `reusable`.
    ///
    /// - Parameters:
    ///   - reusable: keep `completion` after it ran, for the next write.
    ///   - completion: run once per write, on the loop thread.
    package init(reusable: Bool = false, _ completion: @escaping ((any Error)?) -> Void) {
        self.completion = completion
        self.reusable = reusable
    }

    override func writeFinished(_ error: (any Error)?) {
        if reusable {
            completion(error)
            return
        }
        let completion = self.completion
        self.completion = { _ in }
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
        bytes.withUnsafeBytes { writeOnLoop($0, done) }
    }

    /// ``writeOnLoop(_:_:)-([UInt8],_)`` from memory the caller owns: what the kernel does
    /// not take at once is copied before this returns (into the write request), so the
    /// memory may be reused as soon as it has returned, and also inside `done` when `done`
    /// runs before the return. The HTTP server writes its responses from one buffer it
    /// reuses, not an array made per response.
    ///
    /// - Parameters:
    ///   - bytes: the bytes to write.
    ///   - done: told once, on the loop thread.
    /// - Precondition: called on ``loop``'s thread.
    package func writeOnLoop(_ bytes: UnsafeRawBufferPointer, _ done: DirectWrite) {
        precondition(loop.isCurrentThread, "StreamConnection.writeOnLoop called off its loop's thread")
        switch stream.write(bytes, done) {
        case .done, .dropped: done.writeFinished(nil)
        case .queued: break
        case .failed(let error): done.writeFinished(error)
        }
    }
}

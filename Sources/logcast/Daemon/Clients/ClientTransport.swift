import ReactiveUV

/// How logcast reaches one client: the seam for connection types other than TCP.
///
/// The daemon serves a client through these five members only — its input bytes, one write
/// at a time (the fan-out never writes again before the previous write's signal has
/// completed, so a transport needs no queue of its own beyond one write), an orderly close
/// and an abrupt one. `StreamConnection` (TCP and Unix sockets) conforms as it is; another
/// transport (TLS, say) conforms with an adapter and is handed to
/// ``LogcastServer/accept(_:)`` like an accepted TCP connection.
protocol ClientTransport: AnyObject, CustomStringConvertible {
    /// The client's bytes, in order; completes at its end of stream.
    var reads: Signal<[UInt8]> { get }
    /// Writes `bytes`; completes once they are handed to the kernel (or errs).
    func write(_ bytes: [UInt8]) -> Signal<Void>
    /// Flushes what is queued, then ends our side of the stream.
    func shutdown() -> Signal<Void>
    /// Closes at once; idempotent.
    func close()
}

extension StreamConnection: ClientTransport {}

/// A transport that takes the fan-out's shared blocks themselves rather than their lines
/// copied out as bytes: the web view (``WebViewTransport``), which shows a person only the
/// newest lines a few times a second and so must not pay for every line it passes over.
///
/// Why a second write: the bytes a ``ClientTransport`` is written are the lines already
/// gathered (a copy per filtered client) and, for the web view, parsed and encoded once
/// per line per page; that was 0.4 µs a line a page against 0.2 µs for a line's whole
/// ingest (Benchmarks/README.md, "logcast's hidden costs"). Handed the blocks, the view
/// keeps references until its next frame and reads only the lines it sends. Everything
/// else is the same contract: one write at a time, completing when the fan-out may write
/// again; the lines are counted as sent when handed over.
protocol BlockClientTransport: ClientTransport {
    /// Writes `outbox` (lines already taken and replies, as ``ClientTransport/write(_:)``
    /// would get them), then the lines `filter` and `access` take from `blocks`, in order.
    ///
    /// - Parameters:
    ///   - outbox: bytes queued before the blocks' lines (may be empty).
    ///   - blocks: the shared blocks not yet written to this client, oldest first.
    ///   - filter: the client's pattern (`nil`: every line).
    ///   - access: the sources it may read (`nil`: every source).
    /// - Returns: a signal that completes when the fan-out may write again.
    func write(outbox: [UInt8], blocks: ArraySlice<LineBlock>, filter: PatternID?, access: SourceAccess?) -> Signal<Void>
}

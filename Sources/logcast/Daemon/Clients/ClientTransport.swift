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

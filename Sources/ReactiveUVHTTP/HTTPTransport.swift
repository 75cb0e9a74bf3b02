import ReactiveUV

/// A byte stream that HTTP and WebSocket run over: a TCP or Unix-socket connection, or a
/// TLS connection (`ReactiveUVHTTPS` makes `TLSConnection` one).
///
/// The server and the client see their connections only through this protocol, so one
/// implementation serves plain and encrypted peers alike. Every member has the meaning it
/// has on ``/ReactiveUV/StreamConnection``: `reads` until EOF, `write` and `send` complete
/// when flushed and are bounded by the connection's write queue, `close` from any thread.
public protocol HTTPTransport: AnyObject, Sendable, CustomStringConvertible {
    /// The loop the connection lives on; its events arrive on this loop's thread.
    var loop: EventLoop { get }
    /// The bytes the peer sends, chunk by chunk, until EOF (completion).
    var reads: Signal<[UInt8]> { get }
    /// Writes `bytes`; completes once they are handed to the kernel.
    func write(_ bytes: [UInt8]) -> Signal<Void>
    /// Writes every chunk of `source` in order, pausing it while the write queue is full.
    func send(_ source: Signal<[UInt8]>) -> Signal<Void>
    /// Closes the connection (any thread); pending reads complete, pending writes fail.
    func close()
    /// Ends our side once queued writes are flushed (TCP FIN; TLS close_notify, then FIN),
    /// leaving the peer's side open for reading: how a server ends a response on a
    /// connection without resetting bytes the peer still sends (lingering close).
    func shutdown() -> Signal<Void>
    /// Sends once and completes when the connection has closed, for whatever reason.
    var closed: Signal<Void> { get }
}

extension StreamConnection: HTTPTransport {}
// TLSConnection's conformance is in ReactiveUVHTTPS, so that a plain HTTP program does not
// link OpenSSL (whose relocations alone touch ~1.7 MiB at start-up).

/// A connection handed over by an HTTP server after `101 Switching Protocols` (or by a
/// client after the server's `101`): the transport, and the bytes that arrived after the
/// HTTP head and belong to the new protocol.
public struct HTTPUpgrade: Sendable {
    /// The connection, now speaking the upgraded protocol; the receiver owns it.
    public let transport: any HTTPTransport
    /// Bytes read past the end of the HTTP head; the new protocol's first bytes.
    public let leftover: [UInt8]

    /// Wraps an upgraded connection and the bytes already read from it.
    public init(transport: any HTTPTransport, leftover: [UInt8]) {
        self.transport = transport
        self.leftover = leftover
    }
}

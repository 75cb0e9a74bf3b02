import ReactiveUV

/// How an HTTP server treats its connections: limits, timeouts and queue bounds.
///
/// Every limit answers with a status and closes the connection (see ``HTTPParseError``);
/// every timeout closes the connection without an answer, since the peer is not reading or
/// not sending.
public struct HTTPServerOptions: Sendable {
    /// The most bytes of a request head (request line, fields, empty line); over it: 431.
    /// Also bounds chunked trailers. Default 64 KiB.
    public var maxHeadBytes = 64 * 1024
    /// The most bytes of a request line; over it: 414. Default 8 KiB.
    public var maxRequestLineBytes = 8 * 1024
    /// The most bytes of a request body; over it: 413 (at once when `Content-Length` says
    /// so, else when the chunks add up past it). Default 1 MiB.
    public var maxBodyBytes = 1 << 20
    /// Seconds a client may take from the first byte of a request head to its end before
    /// the connection is closed (slowloris). Default 10.
    public var headTimeout = 10.0
    /// Seconds a keep-alive connection may sit with no request under way before it is
    /// closed. Default 5.
    public var idleTimeout = 5.0
    /// Seconds a closing connection keeps reading (and discarding) after the last response,
    /// so bytes the client still sends do not reset the response away. Default 2.
    public var lingerTimeout = 2.0
    /// Requests read ahead of their responses on one connection (pipelining) before
    /// reading pauses. Default 16.
    public var maxPipelinedRequests = 16
    /// Body bytes held for a request whose body nobody has subscribed to yet before reading
    /// pauses. Default 64 KiB.
    public var bodyBufferBytes = 64 * 1024

    /// Starts a graceful shutdown when it sends a value (or completes): the server stops
    /// listening at once (the `listen` functions over TCP, Unix sockets and TLS close the
    /// listening socket, so new connects are refused; with ``HTTP/serve(_:options:)``, or a
    /// TLS handshake that was under way, a connection delivered from then on is closed at
    /// once), closes
    /// connections with no request under way, answers the requests in flight (their last
    /// answer with `Connection: close`), and closes what is left after
    /// ``shutdownTimeout``; then it stops listening and the request signal completes.
    /// `nil` (the default): the server runs until its subscription is disposed.
    public var shutdown: Signal<Void>?
    /// Seconds a graceful shutdown waits for the requests in flight. Default 10.
    public var shutdownTimeout = 10.0

    /// Socket options of accepted TCP connections: `TCP_NODELAY` by default, since a
    /// response is written whole and Nagle's delay would only hold its last segment back.
    public var tcp = TCPOptions(noDelay: true)
    /// The kernel's queue of connections not yet accepted. Default 1024.
    public var backlog = 1024

    /// The defaults above.
    public init() {}

    var parserLimits: HTTPParser.Limits {
        .init(maxHeadBytes: maxHeadBytes, maxStartLineBytes: maxRequestLineBytes, maxBodyBytes: maxBodyBytes)
    }
}

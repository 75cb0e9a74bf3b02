import ReactiveUV

/// Opens the connections an ``HTTPClient`` sends its requests over: the seam between the
/// client and a transport.
///
/// The client asks ``HTTPClientOptions/connector`` for `http://` URLs and
/// ``HTTPClientOptions/secureConnector`` for `https://` ones. ReactiveUVHTTP has TCP
/// only (``TCPHTTPConnector``); TLS is in the `ReactiveUVHTTPS` product
/// (`TLSHTTPConnector`, `HTTPClientOptions.https(trust:)`), so that a program that speaks
/// plain HTTP never links OpenSSL. A connector of your own (a Unix socket, a proxy tunnel)
/// goes in the same place.
public protocol HTTPConnector: Sendable {
    /// Connects to `host:port` and sends the connection, ready for an HTTP request.
    ///
    /// The subscription owns the connection, as with ``/ReactiveUV/TCP/connect(host:port:options:on:)``:
    /// the client keeps it subscribed while it pools the connection and disposes of it to
    /// close the connection. The client bounds the whole signal by `timeout` itself, so a
    /// connector need not; a TLS one also bounds its handshake with it.
    ///
    /// - Parameters:
    ///   - host: the URL's host (a name or a numeric address, without brackets).
    ///   - port: the URL's port, or the scheme's.
    ///   - timeout: ``HTTPClientOptions/connectTimeout``, in seconds.
    ///   - loop: the client's loop: the connection must live on it.
    /// - Returns: a cold signal of one connected transport; it fails when connecting does.
    func connect(host: String, port: Int, timeout: Double, on loop: EventLoop) -> Signal<any HTTPTransport>
}

/// The built-in connector for `http://`: a TCP connection with Nagle's algorithm off
/// (a request is written whole, and its answer should not wait for an ACK).
public struct TCPHTTPConnector: HTTPConnector {
    /// A TCP connector.
    public init() {}

    /// Connects with ``/ReactiveUV/TCP/connect(host:port:options:on:)``.
    ///
    /// - Parameters:
    ///   - host: the host to connect to.
    ///   - port: the port.
    ///   - timeout: unused: the client bounds the connect.
    ///   - loop: the client's loop.
    /// - Returns: a cold signal of one TCP connection.
    public func connect(host: String, port: Int, timeout: Double, on loop: EventLoop) -> Signal<any HTTPTransport> {
        TCP.connect(host: host, port: port, options: TCPOptions(noDelay: true), on: loop).map { $0 as any HTTPTransport }
    }
}

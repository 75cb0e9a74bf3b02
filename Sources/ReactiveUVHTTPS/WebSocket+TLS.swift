import ReactiveUV
import ReactiveUVHTTP
import ReactiveUVTLS

extension WebSocket {
    /// Connects to `wss://host:port/path`: `TLS.connect` (certificate verified against
    /// `trust`), then ``/ReactiveUVHTTP/WebSocket/handshake(over:host:path:headers:options:)``,
    /// as ReactiveUVHTTP's `WebSocket.connect(host:port:path:headers:options:on:)` does
    /// over TCP.
    ///
    /// The subscription owns the connection: after sending it the signal stays silent until
    /// the transport closes, then completes, and disposing it closes the transport.
    ///
    /// - Parameters:
    ///   - host: a numeric address or a name.
    ///   - port: the port.
    ///   - path: the request target, starting with `/`.
    ///   - serverName: the name to verify and send as SNI; `nil` for `host`.
    ///   - trust: the certificate authorities to verify the server against.
    ///   - headers: extra request headers.
    ///   - options: limits, compression, subprotocols, timeouts.
    ///   - loop: the loop to run on; `nil` for the default.
    /// - Returns: a cold signal of one connection; it fails with a
    ///   ``/ReactiveUVTLS/TLSError`` when the handshake or the verification does, or with
    ///   ``/ReactiveUVHTTP/WebSocketError/handshakeFailed(_:)``.
    public static func connectTLS(
        host: String, port: Int, path: String = "/", serverName: String? = nil, trust: TLSTrust = .system,
        headers: HTTPHeaders = HTTPHeaders(), options: WebSocketOptions = WebSocketOptions(), on loop: EventLoop? = nil
    ) -> Signal<WebSocketConnection> {
        TLS.connect(host: host, port: port, serverName: serverName, trust: trust, options: TCPOptions(noDelay: true), on: loop)
            .flattenMap { tls in
                handshake(over: tls, host: hostHeader(serverName ?? host, port, defaultPort: 443), path: path, headers: headers, options: options)
            }
    }
}

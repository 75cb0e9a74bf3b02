import ReactiveUV
import ReactiveUVHTTP
import ReactiveUVTLS

/// The connector for `https://`: a TCP connection, then a TLS handshake that verifies the
/// server's certificate for the URL's host against ``trust``.
///
/// Set it as ``/ReactiveUVHTTP/HTTPClientOptions/secureConnector``, or start from
/// `HTTPClientOptions.https(trust:)`, which does.
public struct TLSHTTPConnector: HTTPConnector {
    /// Whom servers are checked against.
    public var trust: TLSTrust

    /// A connector checking servers against `trust`.
    ///
    /// - Parameter trust: the certificate authorities; `.system` for the system's.
    public init(trust: TLSTrust = .system) {
        self.trust = trust
    }

    /// Connects with ``/ReactiveUVTLS/TLS/connect(host:port:serverName:trust:options:handshakeTimeout:on:)``:
    /// `host` is both the name verified and the SNI sent, and the handshake is bounded by
    /// `timeout`.
    ///
    /// - Parameters:
    ///   - host: the URL's host.
    ///   - port: the URL's port.
    ///   - timeout: seconds for the connect and the handshake.
    ///   - loop: the client's loop.
    /// - Returns: a cold signal of one verified TLS connection; fails with a
    ///   ``/ReactiveUVTLS/TLSError`` when the handshake or the verification does.
    public func connect(host: String, port: Int, timeout: Double, on loop: EventLoop) -> Signal<any HTTPTransport> {
        TLS.connect(
            host: host, port: port, serverName: host, trust: trust, options: TCPOptions(noDelay: true),
            handshakeTimeout: timeout, on: loop
        ).map { $0 as any HTTPTransport }
    }
}

extension HTTPClientOptions {
    /// The default options, with `https://` connected by a ``TLSHTTPConnector`` checking
    /// servers against `trust`.
    ///
    /// ```swift
    /// import ReactiveUVHTTPS
    ///
    /// var options = HTTPClientOptions.https(trust: .certificateAuthorities(path: "ca.pem"))
    /// options.connectTimeout = 5
    /// let client = HTTPClient(options: options)
    /// ```
    ///
    /// - Parameter trust: whom HTTPS servers are checked against; `.system` by default.
    /// - Returns: options whose client speaks `http://` and `https://`.
    public static func https(trust: TLSTrust = .system) -> HTTPClientOptions {
        var options = HTTPClientOptions()
        options.secureConnector = TLSHTTPConnector(trust: trust)
        return options
    }
}

import ReactiveUV
import ReactiveUVHTTP
import ReactiveUVTLS

extension HTTP {
    /// Serves HTTPS on `host:port` while subscribed: ReactiveUVHTTP's server over
    /// ``/ReactiveUVTLS/TLS/listen(host:port:certificate:key:clientCertificateAuthorities:options:handshakeTimeout:stopAccepting:on:onListening:onHandshakeError:)``.
    ///
    /// Everything but the transport is ReactiveUVHTTP's `HTTP.listen(host:port:options:on:onListening:)`:
    /// the same requests, limits, timeouts and shutdown (``/ReactiveUVHTTP/HTTPServerOptions/shutdown``
    /// also stops accepting TLS connections, and a handshake under way when it fires is
    /// finished, then its connection closed). A client whose handshake fails never reaches
    /// the application. A WebSocket upgraded on this server speaks `wss:`.
    ///
    /// ```swift
    /// import ReactiveUVHTTPS
    ///
    /// let server = HTTP.listen(port: 8443, certificate: "cert.pem", key: "key.pem")
    ///     .subscribeNext { request in request.respond(text: "Hello, World!") }
    /// ```
    ///
    /// - Parameters:
    ///   - host: the address to bind.
    ///   - port: the port; 0 lets the kernel choose (see `onListening`).
    ///   - certificate: the PEM certificate chain's path.
    ///   - key: the PEM private key's path.
    ///   - options: limits and timeouts.
    ///   - loop: the loop to serve on; `nil` for the subscribing thread's loop, else the main loop.
    ///   - onListening: called once with the bound address.
    /// - Returns: a cold signal of requests; fails if the certificate or key cannot be
    ///   loaded (``/ReactiveUVTLS/TLSError``) or listening fails.
    public static func listen(
        host: String = "127.0.0.1", port: Int, certificate: String, key: String,
        options: HTTPServerOptions = HTTPServerOptions(), on loop: EventLoop? = nil,
        onListening: ((SocketAddress) -> Void)? = nil
    ) -> Signal<HTTPRequest> {
        serve(
            TLS.listen(
                host: host, port: port, certificate: certificate, key: key, options: options.tcp,
                stopAccepting: options.shutdown, on: loop, onListening: onListening),
            options: options)
    }

    /// Sends one request, `http://` or `https://`, with a client shared by every caller on
    /// `loop` that gives the same `trust`.
    ///
    /// ReactiveUVHTTP's `HTTP.request(_:_:headers:body:on:)` speaks plain HTTP only (its
    /// shared client has no ``TLSHTTPConnector``); this one's client is made with
    /// `HTTPClientOptions.https(trust:)`. Both clients are dropped when
    /// the loop closes. See ``/ReactiveUVHTTP/HTTPClient/request(_:_:headers:body:)`` for
    /// what it sends and how it fails; a server whose certificate does not verify against
    /// `trust` fails it with a ``/ReactiveUVTLS/TLSError``.
    ///
    /// - Parameters:
    ///   - method: the method.
    ///   - url: an `http://` or `https://` URL.
    ///   - headers: request fields.
    ///   - body: the body.
    ///   - trust: whom `https://` servers are checked against (`.system` for the system's
    ///     authorities).
    ///   - loop: the loop for the shared client; `nil` for the main loop.
    /// - Returns: a cold signal of one response.
    public static func request(
        _ method: String = "GET", _ url: String, headers: HTTPHeaders = [:], body: [UInt8] = [],
        trust: TLSTrust, on loop: EventLoop? = nil
    ) -> Signal<HTTPResponse> {
        let loop = loop ?? .main
        let kind = "https \(trust)"
        return sharedClient(loop, kind: kind, make: { HTTPClient(options: .https(trust: trust), on: loop) })
            .request(method, url, headers: headers, body: body)
    }
}

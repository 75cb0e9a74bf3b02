import ReactiveUV

/// TLS servers and clients as signals: OpenSSL over ReactiveUV's TCP connections, through
/// memory BIOs (libuv does the IO; OpenSSL only transforms bytes).
///
/// `TLS.listen` and `TLS.connect` are `TCP.listen` and `TCP.connect` followed by a TLS
/// handshake; they send a ``TLSConnection`` once the handshake has finished, with the same
/// `reads` / `lines` / `write` / `send` surface as a TCP connection, in plaintext. Loops,
/// threads and ownership are TCP's (see ``/ReactiveUV/TCP``).
///
/// ```swift
/// TLS.listen(port: 4433, certificate: "server.pem", key: "server.key")
///     .flattenMap { c in c.send(c.reads).then { c.shutdown() }.catchTo(.empty()) }
///     .subscribe()
/// TLS.connect(host: "127.0.0.1", port: 4433, serverName: "localhost",
///             trust: .certificateAuthorities(path: "ca.pem"))
///     .flattenMap { c in c.write("hello\n").then { c.lines.take(1) } }
///     .subscribeNext { print($0) }
/// ```
///
/// Failures are ``TLSError``s saying what kind (``TLSError/Kind``: a rejected certificate,
/// a peer that is not speaking TLS, a handshake timeout, …), OpenSSL's reason, and the
/// peer; failures of the TCP connection stay ``/ReactiveUV/UVError``s.
public enum TLS {
    /// The default time a handshake may take: 10 seconds.
    public static let defaultHandshakeTimeout = 10.0

    /// Listens on `host:port` while subscribed and sends each client whose TLS handshake
    /// succeeded.
    ///
    /// The certificate and key are loaded at subscription: a file that cannot be read, or
    /// a key that is not the certificate's, fails the subscription at once with a
    /// ``TLSError`` (`.configuration`) naming the file. Each accepted TCP connection then
    /// handshakes (`SSL_accept` over memory BIOs); a client whose handshake fails (it
    /// speaks plain text, rejects our certificate, offers nothing we accept, or stays
    /// silent past `handshakeTimeout`) is closed and reported to `onHandshakeError`: it
    /// never fails the server. Otherwise as ``/ReactiveUV/TCP/listen(host:port:backlog:options:on:onListening:)``:
    /// disposing stops listening and closes every connection.
    ///
    /// - Parameters:
    ///   - host: the address to bind.
    ///   - port: the port; 0 lets the kernel choose (see `onListening`).
    ///   - certificate: a PEM file with the server's certificate, then any intermediates.
    ///   - key: a PEM file with its private key (unencrypted).
    ///   - options: TCP options of every accepted connection (backpressure counts ciphertext).
    ///   - handshakeTimeout: seconds a client may take to finish its handshake.
    ///   - loop: the loop to listen on; `nil` for TCP's default.
    ///   - onListening: called once with the bound address (loop thread).
    ///   - onHandshakeError: called on the loop thread for each client whose handshake failed.
    ///   - clientCertificateAuthorities: a PEM file of CAs; when given, a client must
    ///     present a certificate one of them issued (verified during the handshake; its
    ///     subject is ``TLSConnection/peerSubject``), or its handshake fails
    ///     (`.certificateRejected` or `.handshakeFailed`) and `onHandshakeError` hears of it.
    /// - Returns: a cold signal of TLS connections.
    public static func listen(
        host: String = "127.0.0.1", port: Int, certificate: String, key: String,
        clientCertificateAuthorities: String? = nil,
        options: TCPOptions = TCPOptions(), handshakeTimeout: Double = TLS.defaultHandshakeTimeout,
        on loop: EventLoop? = nil, onListening: ((SocketAddress) -> Void)? = nil,
        onHandshakeError: ((TLSError) -> Void)? = nil
    ) -> Signal<TLSConnection> {
        listen(
            host: host, port: port, certificate: certificate, key: key, clientCertificateAuthorities: clientCertificateAuthorities,
            options: options, handshakeTimeout: handshakeTimeout, stopAccepting: nil, on: loop, onListening: onListening,
            onHandshakeError: onHandshakeError)
    }

    /// Listens on `host:port` while subscribed, and stops accepting when `stopAccepting`
    /// fires: the first half of a graceful shutdown.
    ///
    /// As ``listen(host:port:certificate:key:clientCertificateAuthorities:options:handshakeTimeout:on:onListening:onHandshakeError:)``,
    /// except that when `stopAccepting` sends a value or completes, the listening socket
    /// closes at once (new connects are refused: `ECONNREFUSED`), as
    /// ``/ReactiveUV/TCP/listen(host:port:backlog:options:stopAccepting:on:onListening:)``
    /// does: the connections already accepted stay open and owned by the subscription, and
    /// so do handshakes under way, which still deliver their connection when they finish.
    /// The signal does not complete then (completion would close the connections): dispose
    /// it when the last one is done.
    ///
    /// ```swift
    /// let draining = Subject<Void>()
    /// let server = TLS.listen(port: 4433, certificate: "server.pem", key: "server.key", stopAccepting: draining)
    /// // later: draining.sendNext(()) — no new connections, the accepted ones go on
    /// ```
    ///
    /// - Parameters:
    ///   - host: the address to bind.
    ///   - port: the port; 0 lets the kernel choose (see `onListening`).
    ///   - certificate: a PEM file with the server's certificate, then any intermediates.
    ///   - key: a PEM file with its private key (unencrypted).
    ///   - clientCertificateAuthorities: a PEM file of CAs a client's certificate must come
    ///     from; `nil` asks for none.
    ///   - options: TCP options of every accepted connection (backpressure counts ciphertext).
    ///   - handshakeTimeout: seconds a client may take to finish its handshake.
    ///   - stopAccepting: stops listening (not the connections) on its first value or its
    ///     completion; `nil` for never.
    ///   - loop: the loop to listen on; `nil` for TCP's default.
    ///   - onListening: called once with the bound address (loop thread).
    ///   - onHandshakeError: called on the loop thread for each client whose handshake failed.
    /// - Returns: a cold signal of TLS connections.
    public static func listen(
        host: String = "127.0.0.1", port: Int, certificate: String, key: String,
        clientCertificateAuthorities: String? = nil,
        options: TCPOptions = TCPOptions(), handshakeTimeout: Double = TLS.defaultHandshakeTimeout,
        stopAccepting: Signal<Void>?, on loop: EventLoop? = nil, onListening: ((SocketAddress) -> Void)? = nil,
        onHandshakeError: ((TLSError) -> Void)? = nil
    ) -> Signal<TLSConnection> {
        Signal.defer {
            let context: TLSContext
            do {
                context = try TLSContext.server(
                    certificate: certificate, key: key, clientCertificateAuthorities: clientCertificateAuthorities)
            } catch {
                return .error(error)
            }
            return TCP.listen(host: host, port: port, options: options, stopAccepting: stopAccepting, on: loop, onListening: onListening)
                .flattenMap { tcp -> Signal<TLSConnection> in
                    handshake(tcp, context: context, serverName: nil, timeout: handshakeTimeout)
                        .catch { error in
                            tcp.close()
                            if let error = error as? TLSError { onHandshakeError?(error) }
                            return .empty()
                        }
                }
        }
    }

    /// Connects to `host:port`, handshakes, and sends the connection once the server's
    /// certificate has been verified.
    ///
    /// As ``/ReactiveUV/TCP/connect(host:port:options:on:)``: the subscription owns the
    /// connection, which stays open while subscribed; after sending it the signal stays
    /// silent until the connection closes, then completes. It fails with a ``TLSError``
    /// when the handshake fails: `.certificateRejected` (expired, untrusted, issued for
    /// another name: the reason says which), `.peerNotTLS` (the server answered in plain
    /// text), `.handshakeFailed`, `.closedDuringHandshake`, `.handshakeTimedOut` (a server
    /// that never answers); and with a ``/ReactiveUV/UVError`` when TCP cannot connect.
    ///
    /// - Parameters:
    ///   - host: a numeric address or a name.
    ///   - port: the port.
    ///   - serverName: the name the server's certificate must carry, also sent as SNI;
    ///     `nil` for `host` itself. An IP address is matched against the certificate's IP
    ///     entries.
    ///   - trust: which authorities to trust (default: the system's).
    ///   - options: TCP options (backpressure counts ciphertext).
    ///   - handshakeTimeout: seconds the handshake may take.
    ///   - loop: the loop the connection lives on; `nil` for TCP's default.
    /// - Returns: a cold signal of one connection.
    public static func connect(
        host: String, port: Int, serverName: String? = nil, trust: TLSTrust = .system,
        options: TCPOptions = TCPOptions(), handshakeTimeout: Double = TLS.defaultHandshakeTimeout,
        on loop: EventLoop? = nil
    ) -> Signal<TLSConnection> {
        Signal.defer {
            let context: TLSContext
            do { context = try TLSContext.client(trust: trust) } catch {
                return .error(error)
            }
            return TCP.connect(host: host, port: port, options: options, on: loop)
                .flattenMap { tcp in
                    handshake(tcp, context: context, serverName: serverName ?? host, timeout: handshakeTimeout)
                }
        }
    }

    /// Runs the handshake on an established TCP connection: sends the TLS connection and
    /// completes when it finishes, fails with a ``TLSError`` when it does not.
    static func handshake(_ tcp: TCPConnection, context: TLSContext, serverName: String?, timeout: Double) -> Signal<TLSConnection> {
        let target = tcp.description
        let operation = context.isServer ? "TLS accept" : "TLS connect"
        let steps = Signal<TLSConnection>.create { subscriber in
            // Subscribed on the loop thread: flattenMap subscribes where TCP delivers.
            let session: TLSSession
            do { session = try TLSSession(context: context, serverName: serverName, target: target) } catch {
                subscriber.sendError(error)
                return nil
            }
            let reads = SerialDisposable()
            func flush() {
                if let output = session.takeOutput() { _ = tcp.write(output).subscribe() }
            }
            func step() {
                switch session.handshake() {
                case .needMoreBytes:
                    flush()
                case .done:
                    flush()
                    // Stop reading: what arrives next is the application's, read by the
                    // connection's own `reads` (bytes already fed stay in the BIO).
                    reads.dispose()
                    subscriber.sendNext(TLSConnection(tcp: tcp, session: session))
                    subscriber.sendCompleted()
                case .failed(let error):
                    flush()  // the alert telling the peer why
                    subscriber.sendError(error)
                }
            }
            reads.inner = tcp.reads.subscribe(
                next: { chunk in
                    if !session.sawPeerBytes, let first = chunk.first, !TLSSession.looksLikeTLS(firstByte: first) {
                        subscriber.sendError(TLSError(
                            .peerNotTLS, "the peer's first bytes are not a TLS record: \(printable(chunk.prefix(16)))",
                            operation: operation, target: target))
                        return
                    }
                    session.feed(chunk)
                    step()
                },
                error: { subscriber.sendError($0) },
                completed: {
                    subscriber.sendError(TLSError(
                        .closedDuringHandshake, "the peer closed the connection during the handshake",
                        operation: operation, target: target))
                })
            if !subscriber.isDisposed { step() }  // a client speaks first: its ClientHello
            return reads
        }
        return steps
            .timeout(timeout, on: tcp.loop.scheduler)
            .catch { error in
                if case SignalError.timedOut = error {
                    return .error(TLSError(
                        .handshakeTimedOut, "no handshake within \(timeout) s", operation: operation, target: target))
                }
                return .error(error)
            }
    }

    /// The first bytes of a non-TLS peer, quoted for an error message.
    static func printable(_ bytes: ArraySlice<UInt8>) -> String {
        var text = "\""
        for byte in bytes {
            switch byte {
            case 0x20..<0x7f where byte != 0x22 && byte != 0x5c: text.append(Character(Unicode.Scalar(byte)))
            case 0x0a: text += "\\n"
            case 0x0d: text += "\\r"
            default: text += "\\x" + String(byte, radix: 16)
            }
        }
        return text + "\""
    }
}

import ReactiveUV

extension WebSocket {
    /// Connects to `ws://host:port/path` and sends the connection once the server's `101`
    /// has been checked.
    ///
    /// `TCP.connect`, then ``handshake(over:host:path:headers:options:)``. As with
    /// ``/ReactiveUV/TCP/connect(host:port:options:on:)``, the subscription owns the
    /// connection: after sending it the signal stays silent until the transport closes,
    /// then completes, and disposing it closes the transport — keep it subscribed
    /// (`flattenMap`) for as long as the conversation lasts.
    ///
    /// ```swift
    /// WebSocket.connect(host: "127.0.0.1", port: 8080, path: "/ws")
    ///     .flattenMap { ws in
    ///         Signal.merge([ws.send(text: "hello").ignoreValues().map { _ in "" }, ws.messages.take(1).map { "\($0)" }])
    ///     }
    ///     .subscribeNext { print($0) }
    /// ```
    ///
    /// - Parameters:
    ///   - host: a numeric address or a name.
    ///   - port: the port.
    ///   - path: the request target, starting with `/` (with any query).
    ///   - headers: extra request headers (`Origin`, `Authorization`, …); a field with CR,
    ///     LF or NUL fails the signal instead of being written.
    ///   - options: limits, compression offered, subprotocols offered, timeouts.
    ///   - loop: the loop to run on; `nil` for the default (see ``/ReactiveUV/TCP``).
    /// - Returns: a cold signal of one connection; it fails with a ``/ReactiveUV/UVError``
    ///   when the TCP connection cannot be made, or ``WebSocketError/handshakeFailed(_:)``.
    public static func connect(
        host: String, port: Int, path: String = "/", headers: HTTPHeaders = HTTPHeaders(),
        options: WebSocketOptions = WebSocketOptions(), on loop: EventLoop? = nil
    ) -> Signal<WebSocketConnection> {
        TCP.connect(host: host, port: port, options: TCPOptions(noDelay: true), on: loop)
            .flattenMap { tcp in
                handshake(over: tcp, host: hostHeader(host, port, defaultPort: 80), path: path, headers: headers, options: options)
            }
    }

    /// `Host`'s value: the port only when it is not the scheme's, IPv6 in brackets
    /// (`package`: ReactiveUVHTTPS's `connectTLS` sends it too).
    package static func hostHeader(_ host: String, _ port: Int, defaultPort: Int) -> String {
        let name = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        return port == defaultPort ? name : "\(name):\(port)"
    }

    /// Runs the client's opening handshake over a connected transport (RFC 6455 §4.1):
    /// writes the `GET` with a random `Sec-WebSocket-Key`, reads the response head (at most
    /// 16 KiB), checks the `101`, `Upgrade`, `Connection`, `Sec-WebSocket-Accept`, the
    /// subprotocol and the extension chosen, and sends the ``WebSocketConnection`` (with
    /// the bytes read past the head) and completes.
    ///
    /// Fails with ``WebSocketError/handshakeFailed(_:)`` (a non-`101` status, a wrong
    /// accept value, an extension or subprotocol we did not offer, a head too large or cut
    /// short) or with ``/ReactiveUV/SignalError/timedOut`` after
    /// ``WebSocketOptions/handshakeTimeout``; the transport is then closed.
    ///
    /// - Parameters:
    ///   - transport: a connected TCP, Unix-socket or TLS connection.
    ///   - host: the `Host` header's value.
    ///   - path: the request target.
    ///   - headers: extra request headers.
    ///   - options: the client's options.
    /// - Returns: a cold signal of one connection.
    public static func handshake(
        over transport: any HTTPTransport, host: String, path: String, headers: HTTPHeaders = HTTPHeaders(),
        options: WebSocketOptions = WebSocketOptions()
    ) -> Signal<WebSocketConnection> {
        Signal<WebSocketConnection>.create { subscriber in
            let client = WebSocketClientHandshake(options: options)
            let request: [UInt8]
            do { request = try client.request(host: host, path: path, headers: headers) } catch {
                subscriber.sendError(error)
                return nil
            }
            let lifetime = CompoundDisposable()
            let reading = CompoundDisposable()
            lifetime.add(reading)
            lifetime.add(transport.write(request).subscribe(error: { subscriber.sendError($0) }))
            var head: [UInt8] = []
            var done = false
            // The outcome waits until the reads subscription is gone: a TLS transport can
            // deliver the head while `subscribe` is still running (records that came with
            // its handshake), and the connection must be able to read as soon as it is sent.
            var subscribed = false
            var outcome: Event<WebSocketConnection>?
            func end(_ event: Event<WebSocketConnection>) {
                done = true
                reading.dispose()
                if subscribed { deliver(event) } else { outcome = event }
            }
            func deliver(_ event: Event<WebSocketConnection>) {
                switch event {
                case .next(let connection):
                    subscriber.sendNext(connection)
                    subscriber.sendCompleted()
                case .error(let error):
                    subscriber.sendError(error)
                case .completed:
                    subscriber.sendCompleted()
                }
            }
            reading.add(transport.reads.subscribe(
                next: { chunk in
                    guard !done else { return }
                    head += chunk
                    guard let headEnd = WebSocketClientHandshake.headEnd(head) else {
                        if head.count > WebSocketClientHandshake.maxHeadSize {
                            end(.error(WebSocketError.handshakeFailed("response head larger than \(WebSocketClientHandshake.maxHeadSize) bytes")))
                        }
                        return
                    }
                    do {
                        let agreed = try client.check(head: Array(head[..<(headEnd - 2)]))
                        end(.next(WebSocketConnection(
                            upgrade: HTTPUpgrade(transport: transport, leftover: Array(head[headEnd...])), role: .client,
                            options: options, compression: agreed.compression, subprotocol: agreed.subprotocol)))
                    } catch {
                        end(.error(error))
                    }
                },
                error: { error in if !done { end(.error(error)) } },
                completed: {
                    if !done { end(.error(WebSocketError.handshakeFailed("the connection closed before the response head ended"))) }
                }))
            subscribed = true
            if let outcome { deliver(outcome) }
            return lifetime
        }
        .timeout(options.handshakeTimeout, on: transport.loop.scheduler)
        .catch { error in
            transport.close()
            return .error(error)
        }
    }
}

import ReactiveUV

/// HTTP/1.1 as signals: a server is the signal of the requests it reads.
///
/// ```swift
/// let server = HTTP.listen(port: 8080).subscribeNext { request in
///     request.respond(text: "Hello, World!")
/// }
/// ```
///
/// HTTPS (`listen(host:port:certificate:key:options:on:onListening:)`) and a client's
/// `https://` are in the `ReactiveUVHTTPS` product, so that a plain HTTP program does not
/// load OpenSSL.
public enum HTTP {
    /// Serves HTTP on `host:port` while subscribed: each request read is sent as a value.
    ///
    /// Subscribing listens (``/ReactiveUV/TCP/listen(host:port:backlog:options:on:onListening:)``);
    /// each connection is read by the server (keep-alive, pipelining, the limits and
    /// timeouts of `options`), and each request is sent on the connection's loop thread for
    /// the application to answer (``HTTPRequest/respond(status:headers:body:)``).
    /// Malformed or hostile requests never reach the application: they are answered with
    /// their status (400, 413, 414, 431, 505) and the connection closed. Disposing stops
    /// listening and closes every connection. It fails only when listening fails
    /// (`EADDRINUSE`, ...); a connection's failure is that connection's alone.
    ///
    /// - Parameters:
    ///   - host: the address to bind.
    ///   - port: the port; 0 lets the kernel choose (see `onListening`).
    ///   - options: limits and timeouts.
    ///   - loop: the loop to serve on; `nil` for the subscribing thread's loop, else the main loop.
    ///   - onListening: called once with the bound address.
    /// - Returns: a cold signal of requests.
    public static func listen(
        host: String = "127.0.0.1", port: Int, options: HTTPServerOptions = HTTPServerOptions(),
        on loop: EventLoop? = nil, onListening: ((SocketAddress) -> Void)? = nil
    ) -> Signal<HTTPRequest> {
        serve(TCP.listen(host: host, port: port, backlog: options.backlog, options: options.tcp, stopAccepting: options.shutdown, on: loop, onListening: onListening), options: options)
    }

    /// Serves HTTP on a Unix domain socket at `path` while subscribed; see
    /// ``listen(host:port:options:on:onListening:)``.
    ///
    /// - Parameters:
    ///   - path: the socket's path.
    ///   - options: limits and timeouts.
    ///   - loop: the loop to serve on.
    ///   - onListening: called once with the path when listening has started.
    /// - Returns: a cold signal of requests.
    public static func listen(
        unixSocket path: String, options: HTTPServerOptions = HTTPServerOptions(),
        on loop: EventLoop? = nil, onListening: ((String) -> Void)? = nil
    ) -> Signal<HTTPRequest> {
        serve(UnixSocket.listen(path: path, backlog: options.backlog, stopAccepting: options.shutdown, on: loop, onListening: onListening), options: options)
    }

    /// Serves HTTP on every connection `connections` sends (any ``HTTPTransport``): what
    /// the `listen` functions are made of, for a transport of your own.
    ///
    /// - Parameters:
    ///   - connections: a signal of accepted connections; its subscription owns them.
    ///   - options: limits and timeouts.
    /// - Returns: a cold signal of requests.
    public static func serve<T: HTTPTransport>(_ connections: Signal<T>, options: HTTPServerOptions = HTTPServerOptions()) -> Signal<HTTPRequest> {
        Signal.create { subscriber in
            let lifetime = CompoundDisposable()
            let state = HTTPBox<HTTPServerState?>(nil)
            let listening = SerialDisposable()
            // The server's shared state, made on the loop of the first connection (or of
            // the shutdown signal, whichever comes first).
            func server(_ loop: EventLoop) -> HTTPServerState {
                if let made = state.value { return made }
                let made = HTTPServerState(options: options, loop: loop, requests: subscriber)
                made.onDrained = {
                    listening.dispose()
                    subscriber.sendCompleted()
                }
                state.value = made
                return made
            }
            if let shutdown = options.shutdown {
                // The server's state lives on its loop; before the first connection there
                // is none, and nothing is in flight: stop listening and complete at once.
                let drain = {
                    if let made = state.value {
                        made.loop.execute { made.drain() }
                    } else {
                        listening.dispose()
                        subscriber.sendCompleted()
                    }
                }
                lifetime.add(shutdown.take(1).subscribe(next: { _ in drain() }, completed: drain))
            }
            let accepted = connections.subscribe(
                next: { transport in
                    HTTPServerConnection(transport: transport, server: server(transport.loop)).start()
                },
                error: { subscriber.sendError($0) },
                completed: { subscriber.sendCompleted() })
            listening.inner = accepted
            lifetime.add(listening)
            lifetime.add(Disposable {
                if let server = state.value {
                    server.loop.execute { server.stop() }
                }
            })
            return lifetime
        }
    }
}

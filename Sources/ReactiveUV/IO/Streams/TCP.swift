import CLibUV
import Glibc

/// TCP as signals: a server is a signal of accepted connections, a client a signal of one
/// connection.
///
/// Both take a host that is a numeric IPv4 or IPv6 address (`127.0.0.1`, `::1`, `[::1]`)
/// or a name, resolved with `uv_getaddrinfo`, and an optional loop (`on:`): by default the
/// subscribing thread's loop when it is a loop thread, else ``EventLoop/main``. Their events
/// arrive on that loop's thread. Failures are ``UVError``s naming the code, the operation
/// and the address: `ECONNREFUSED (connection refused) during connect on 127.0.0.1:7070`.
public enum TCP {
    /// Listens on `host:port` while subscribed: RAC-style, a server is the signal of the
    /// connections it accepts.
    ///
    /// Subscribing binds and listens (`uv_tcp_bind`, `uv_listen`) on the loop's thread;
    /// each accepted connection is sent as a value. The subscription owns the connections
    /// it sent: disposing it stops listening (`uv_close`) **and** closes every accepted
    /// connection still open (from any thread: the close hops to the loop). A connection
    /// that ends on its own is forgotten at once. It never completes; it fails with a
    /// ``UVError`` when it cannot listen (`EADDRINUSE`, `EACCES`, a name that does not
    /// resolve) or when accepting fails for good (running out of descriptors does not end
    /// it). Errors of one connection are that connection's, never the server's.
    ///
    /// ```swift
    /// let server = TCP.listen(host: "127.0.0.1", port: 0, onListening: { print("on", $0) })
    ///     .flattenMap { c in c.send(c.reads).then { c.shutdown() }.catchTo(.empty()) }
    ///     .subscribe()
    /// ```
    ///
    /// - Parameters:
    ///   - host: the address to bind; `0.0.0.0` or `::` for every interface.
    ///   - port: the port; 0 lets the kernel choose (see `onListening`).
    ///   - backlog: the kernel's queue of connections not yet accepted.
    ///   - options: applied to every accepted connection.
    ///   - requestedLoop: the loop to listen on; `nil` for the default (see ``TCP``).
    ///   - onListening: called once on the loop's thread when listening has started, with
    ///     the bound address (the real port when `port` is 0).
    /// - Returns: a cold signal of accepted connections.
    public static func listen(
        host: String = "127.0.0.1", port: Int, backlog: Int = 511, options: TCPOptions = TCPOptions(),
        on requestedLoop: EventLoop? = nil, onListening: ((SocketAddress) -> Void)? = nil
    ) -> Signal<TCPConnection> {
        listen(host: host, port: port, backlog: backlog, options: options, stopAccepting: nil, on: requestedLoop, onListening: onListening)
    }

    /// Listens on `host:port` while subscribed, and stops accepting when `stopAccepting`
    /// fires: the first half of a graceful shutdown.
    ///
    /// As ``listen(host:port:backlog:options:on:onListening:)``, except that when
    /// `stopAccepting` sends a value or completes, the listening socket closes at once
    /// (new connects are refused: `ECONNREFUSED`) while the connections already accepted
    /// stay open and owned by the subscription, so they can finish their work; disposing
    /// the subscription still closes them. The signal does not complete then (completion
    /// would close the connections): dispose it when the last one is done.
    ///
    /// ```swift
    /// let draining = Subject<Void>()
    /// let server = TCP.listen(port: 8080, stopAccepting: draining)
    /// // later: draining.sendNext(()) — no new connections, the accepted ones go on
    /// ```
    ///
    /// - Parameters:
    ///   - host: the address to bind.
    ///   - port: the port; 0 lets the kernel choose.
    ///   - backlog: the kernel's queue of connections not yet accepted.
    ///   - options: applied to every accepted connection.
    ///   - stopAccepting: stops listening (not the connections) on its first value or its
    ///     completion; `nil` for never.
    ///   - requestedLoop: the loop to listen on; `nil` for the default (see ``TCP``).
    ///   - onListening: called once on the loop's thread when listening has started.
    /// - Returns: a cold signal of accepted connections.
    public static func listen(
        host: String = "127.0.0.1", port: Int, backlog: Int = 511, options: TCPOptions = TCPOptions(),
        stopAccepting: Signal<Void>?, on requestedLoop: EventLoop? = nil, onListening: ((SocketAddress) -> Void)? = nil
    ) -> Signal<TCPConnection> {
        AnonymousSignal { observer, lifetime in
            let loop = EventLoop.sourceLoop(requestedLoop)
            loop.start(observer, lifetime, operation: "listen", target: "\(host):\(port)") {
                let resolution = AddressResolution.resolve(host: host, port: port, on: loop) { result in
                    guard !lifetime.isDisposed else { return }
                    switch result {
                    case .failure(let error):
                        observer(.error(error))
                        lifetime.dispose()
                    case .success(let addresses):
                        startListening(
                            at: addresses[0], backlog: backlog, options: options, stopAccepting: stopAccepting, loop: loop,
                            observer: observer, lifetime: lifetime, onListening: onListening)
                    }
                }
                if let resolution { lifetime.add(Disposable { loop.perform { resolution.stop() } }) }
            }
        }
    }

    /// The listener of a TCP listen subscription (loop thread; not yet listening).
    ///
    /// An accepted client is named "client of TARGET" until ``TCPConnection`` names it by
    /// its peer's address: one string made here for every client, not one per accept.
    static func listener(
        loop: EventLoop, target: String, options: TCPOptions, observer: @escaping Sink<TCPConnection>,
        lifetime: CompoundDisposable
    ) throws -> StreamListener {
        let clientTarget = "client of \(target)"
        return try StreamListener(
            loop: loop, type: UV_TCP, target: target,
            observer: { observer($0.map { unsafeDowncast($0, to: TCPConnection.self) }) },
            lifetime: lifetime,
            makeClient: {
                try UVStream(loop: loop, type: UV_TCP, target: clientTarget, operation: "accept", limits: options.limits) {
                    uv_tcp_init(loop.uvLoop, uvCast($0))
                }
            },
            wrap: { TCPConnection(stream: $0, options: options) },
            initialize: { uv_tcp_init(loop.uvLoop, uvCast($0)) })
    }

    /// Binds, listens and reports the bound address (loop thread).
    private static func startListening(
        at address: SocketAddress, backlog: Int, options: TCPOptions, stopAccepting: Signal<Void>?, loop: EventLoop,
        observer: @escaping Sink<TCPConnection>, lifetime: CompoundDisposable,
        onListening: ((SocketAddress) -> Void)?
    ) {
        let target = address.description
        let listener: StreamListener
        do {
            listener = try TCP.listener(loop: loop, target: target, options: options, observer: observer, lifetime: lifetime)
        } catch {
            observer(.error(error))
            lifetime.dispose()
            return
        }
        lifetime.add(Disposable { loop.perform { listener.close() } })
        do {
            let rc = address.withSockaddr { uv_tcp_bind(uvCast(listener.handle), $0, 0) }
            try uvCheck(rc, "bind", target)
            try listener.listen(backlog: backlog)
        } catch {
            if !lifetime.isDisposed { observer(.error(error)) }
            lifetime.dispose()
            return
        }
        let bound = SocketAddress.local(of: uvCast(listener.handle)) ?? address
        listener.stopListening(on: stopAccepting)
        onListening?(bound)
    }

    /// Connects to `host:port` when subscribed and sends the connection once established.
    ///
    /// The subscription owns the connection: it stays open while subscribed and disposing
    /// closes it (during the connect, that cancels the attempt silently; from any thread).
    /// After sending the connection the signal stays silent until the connection has
    /// closed, for whatever reason, and then completes, so a `flattenMap` over it ends
    /// when the conversation does. It fails with a ``UVError`` when the connection cannot
    /// be made (`ECONNREFUSED`, `ETIMEDOUT`, `ENETUNREACH`, a name that does not resolve);
    /// a name with several addresses is tried address by address, and the last failure is
    /// reported. Errors while connected go to the reads and writes that see them.
    ///
    /// - Parameters:
    ///   - host: a numeric address or a name.
    ///   - port: the port, 1–65535.
    ///   - options: applied to the connection once established.
    ///   - requestedLoop: the loop the connection lives on; `nil` for the default (see ``TCP``).
    /// - Returns: a cold signal of one connection.
    public static func connect(
        host: String, port: Int, options: TCPOptions = TCPOptions(), on requestedLoop: EventLoop? = nil
    ) -> Signal<TCPConnection> {
        AnonymousSignal { observer, lifetime in
            let loop = EventLoop.sourceLoop(requestedLoop)
            loop.start(observer, lifetime, operation: "connect", target: "\(host):\(port)") {
                TCPConnectAttempt(loop: loop, options: options, observer: observer, lifetime: lifetime)
                    .start(host: host, port: port)
            }
        }
    }
}

/// The state of one `TCP.connect` subscription (loop thread only).
final class TCPConnectAttempt: @unchecked Sendable {
    // Thread-safety: loop thread only; the disposal hops there.
    let loop: EventLoop
    let options: TCPOptions
    let observer: Sink<TCPConnection>
    let lifetime: CompoundDisposable
    var resolution: DNSResolver?
    var addresses: [SocketAddress] = []
    var index = 0
    /// The handle being connected, then the connection's.
    var stream: UVStream?
    var connection: TCPConnection?
    var cancelled = false

    init(loop: EventLoop, options: TCPOptions, observer: @escaping Sink<TCPConnection>, lifetime: CompoundDisposable) {
        self.loop = loop
        self.options = options
        self.observer = observer
        self.lifetime = lifetime
    }

    func start(host: String, port: Int) {
        lifetime.add(Disposable { [self] in loop.perform { self.cancel() } })
        resolution = AddressResolution.resolve(host: host, port: port, on: loop) { [self] result in
            resolution = nil
            guard !cancelled else { return }
            switch result {
            case .failure(let error): fail(error)
            case .success(let list):
                addresses = list
                attempt()
            }
        }
    }

    /// Connects to `addresses[index]`.
    private func attempt() {
        let address = addresses[index]
        let target = address.description
        let stream: UVStream
        do {
            stream = try UVStream(loop: loop, type: UV_TCP, target: target, operation: "connect", limits: options.limits) {
                uv_tcp_init(self.loop.uvLoop, uvCast($0))
            }
        } catch {
            fail(error)
            return
        }
        self.stream = stream
        // The request holds this attempt until its callback.
        let request = UVRequest<uv_connect_t>(UV_CONNECT, owner: self)
        do {
            try address.withSockaddr { sockaddr in
                try request.submit("connect", target, on: loop) { request in
                    uv_tcp_connect(request, uvCast(stream.handle), sockaddr) { request, status in
                        guard let request else { return }
                        UVRequest<uv_connect_t>.finish(request).owner(as: TCPConnectAttempt.self).connected(status)
                    }
                }
            }
        } catch {
            failed(error as? UVError ?? UVError(code: UV_EINVAL.rawValue, operation: "connect", target: target))
        }
    }

    private func connected(_ status: Int32) {
        guard let stream else { return }
        if cancelled || status == UV_ECANCELED.rawValue {
            stream.close()  // already closing when cancelled
            return
        }
        if status < 0 {
            failed(uvError(status, "connect", stream.target))
            return
        }
        // TCP's simultaneous open: connecting to a local port nothing listens on can pick that
        // very port as the source and connect the socket to itself (the kernel allows it).
        // Whatever the caller wanted, it was not talking to itself; report the port as
        // closed, as it is, so retrying callers retry instead of writing into a mirror.
        if TCPConnectAttempt.isConnectedToItself(uvCast(stream.handle)) {
            failed(UVError(code: UV_ECONNREFUSED.rawValue, operation: "connect (the socket connected to itself: nothing listens)", target: stream.target))
            return
        }
        let connection = TCPConnection(stream: stream, options: options)
        self.connection = connection
        stream.whenClosed { [self] _ in
            guard !lifetime.isDisposed else { return }
            observer(.completed)
            lifetime.dispose()
        }
        if !lifetime.isDisposed { observer(.next(connection)) }
    }

    /// Whether a connected TCP handle's local and peer addresses are the same (a socket
    /// that connected to itself).
    static func isConnectedToItself(_ tcp: UnsafeMutablePointer<uv_tcp_t>) -> Bool {
        guard let local = SocketAddress.local(of: tcp) else { return false }
        return local == SocketAddress.peer(of: tcp)
    }

    /// One address failed: try the next, or report.
    private func failed(_ error: UVError) {
        stream?.close()
        stream = nil
        if index + 1 < addresses.count {
            index += 1
            attempt()
        } else {
            fail(error)
        }
    }

    private func fail(_ error: any Error) {
        guard !lifetime.isDisposed else { return }
        observer(.error(error))
        lifetime.dispose()
    }

    /// The subscription was disposed (loop thread): stop resolving, close the handle.
    private func cancel() {
        guard !cancelled else { return }
        cancelled = true
        resolution?.stop()
        resolution = nil
        stream?.close()
    }
}

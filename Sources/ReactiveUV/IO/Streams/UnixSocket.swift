import CLibUV
import Glibc

/// Unix domain stream sockets (`AF_UNIX`, libuv's `uv_pipe_t`) as signals, shaped like
/// ``TCP``: a server is the signal of the connections it accepts, a client the signal of
/// one connection.
///
/// Named `UnixSocket` rather than libuv's `Pipe` so it is not mistaken for `pipe(2)`.
/// Paths are limited to 107 bytes (`sun_path`); a longer one fails with `ENAMETOOLONG`
/// rather than being truncated. Events arrive on the loop's thread (by default the calling
/// thread's loop when it is a loop thread, else ``EventLoop/main``).
public enum UnixSocket {
    /// Listens on the socket file `path` while subscribed.
    ///
    /// Same contract as ``TCP/listen(host:port:backlog:options:on:onListening:)``:
    /// disposing stops listening, closes the connections it accepted and removes the
    /// socket file (libuv unlinks it on close). Fails with `EADDRINUSE` when `path`
    /// exists (a stale socket is not removed for you), `EACCES` (also for a directory that
    /// does not exist: libuv's `uv_pipe_bind` reports `ENOENT` as `EACCES`), `ENAMETOOLONG`.
    ///
    /// - Parameters:
    ///   - path: the socket file to create.
    ///   - backlog: the kernel's queue of connections not yet accepted.
    ///   - options: applied to every accepted connection.
    ///   - requestedLoop: the loop to listen on; `nil` for the default.
    ///   - onListening: called once on the loop's thread when listening has started.
    /// - Returns: a cold signal of accepted connections; it never completes.
    public static func listen(
        path: String, backlog: Int = 511, options: UnixSocketOptions = UnixSocketOptions(),
        on requestedLoop: EventLoop? = nil, onListening: ((String) -> Void)? = nil
    ) -> Signal<UnixSocketConnection> {
        listen(path: path, backlog: backlog, options: options, stopAccepting: nil, on: requestedLoop, onListening: onListening)
    }

    /// Listens on the socket file `path` while subscribed, and stops accepting when
    /// `stopAccepting` fires: the first half of a graceful shutdown.
    ///
    /// As ``listen(path:backlog:options:on:onListening:)``, except that when `stopAccepting`
    /// sends a value or completes, the listening socket closes at once (libuv removes the
    /// socket file; new connects fail) while the connections already accepted stay open
    /// and owned by the subscription; disposing it still closes them. See
    /// ``TCP/listen(host:port:backlog:options:stopAccepting:on:onListening:)``.
    ///
    /// - Parameters:
    ///   - path: the socket file to create.
    ///   - backlog: the kernel's queue of connections not yet accepted.
    ///   - options: applied to every accepted connection.
    ///   - stopAccepting: stops listening (not the connections) on its first value or its
    ///     completion; `nil` for never.
    ///   - requestedLoop: the loop to listen on; `nil` for the default.
    ///   - onListening: called once on the loop's thread when listening has started.
    /// - Returns: a cold signal of accepted connections; it never completes.
    public static func listen(
        path: String, backlog: Int = 511, options: UnixSocketOptions = UnixSocketOptions(),
        stopAccepting: Signal<Void>?, on requestedLoop: EventLoop? = nil, onListening: ((String) -> Void)? = nil
    ) -> Signal<UnixSocketConnection> {
        AnonymousSignal { observer, lifetime in
            let loop = EventLoop.sourceLoop(requestedLoop)
            loop.start(observer, lifetime, operation: "listen", target: path) {
                if let error = checkPath(path, operation: "listen") {
                    observer(.error(error))
                    lifetime.dispose()
                    return
                }
                let listener: StreamListener
                do {
                    listener = try StreamListener(
                        loop: loop, type: UV_NAMED_PIPE, target: path, observer: { observer($0.map { unsafeDowncast($0, to: UnixSocketConnection.self) }) },
                        lifetime: lifetime,
                        makeClient: {
                            try UVStream(loop: loop, type: UV_NAMED_PIPE, target: path, operation: "accept", limits: options.limits) {
                                uv_pipe_init(loop.uvLoop, uvCast($0), 0)
                            }
                        },
                        wrap: { UnixSocketConnection(stream: $0, path: path) },
                        initialize: { uv_pipe_init(loop.uvLoop, uvCast($0), 0) })
                } catch {
                    observer(.error(error))
                    lifetime.dispose()
                    return
                }
                lifetime.add(Disposable { loop.perform { listener.close() } })
                do {
                    try uvCheck(uv_pipe_bind(uvCast(listener.handle), path), "bind", path)
                    try listener.listen(backlog: backlog)
                } catch {
                    if !lifetime.isDisposed { observer(.error(error)) }
                    lifetime.dispose()
                    return
                }
                listener.stopListening(on: stopAccepting)
                onListening?(path)
            }
        }
    }

    /// Connects to the socket file `path` when subscribed and sends the connection.
    ///
    /// Same contract as ``TCP/connect(host:port:options:on:)``: the subscription owns the
    /// connection, completes once it has closed, and disposing closes it (cancelling a
    /// connect in progress silently). Fails with `ENOENT` (no such socket),
    /// `ECONNREFUSED` (nobody listening), `EACCES`, `ENAMETOOLONG`.
    ///
    /// - Parameters:
    ///   - path: the socket file.
    ///   - options: applied to the connection.
    ///   - requestedLoop: the loop the connection lives on; `nil` for the default.
    /// - Returns: a cold signal of one connection.
    public static func connect(
        path: String, options: UnixSocketOptions = UnixSocketOptions(), on requestedLoop: EventLoop? = nil
    ) -> Signal<UnixSocketConnection> {
        AnonymousSignal { observer, lifetime in
            let loop = EventLoop.sourceLoop(requestedLoop)
            loop.start(observer, lifetime, operation: "connect", target: path) {
                if let error = checkPath(path, operation: "connect") {
                    observer(.error(error))
                    lifetime.dispose()
                    return
                }
                UnixConnectAttempt(loop: loop, path: path, options: options, observer: observer, lifetime: lifetime)
                    .start()
            }
        }
    }

    /// `ENAMETOOLONG` for paths that do not fit `sun_path` (libuv 1.44 would truncate
    /// them), `EINVAL` for empty ones or ones containing NUL.
    static func checkPath(_ path: String, operation: String) -> UVError? {
        let bytes = Array(path.utf8)
        if bytes.isEmpty || bytes.contains(0) {
            return UVError(code: UV_EINVAL.rawValue, operation: operation, target: path)
        }
        let capacity = MemoryLayout.size(ofValue: sockaddr_un().sun_path)
        if bytes.count >= capacity {
            return UVError(code: UV_ENAMETOOLONG.rawValue, operation: operation, target: path)
        }
        return nil
    }
}

/// The state of one `UnixSocket.connect` subscription (loop thread only).
final class UnixConnectAttempt: @unchecked Sendable {
    // Thread-safety: loop thread only; the disposal hops there.
    let loop: EventLoop
    let path: String
    let options: UnixSocketOptions
    let observer: Sink<UnixSocketConnection>
    let lifetime: CompoundDisposable
    var stream: UVStream?
    var cancelled = false

    init(
        loop: EventLoop, path: String, options: UnixSocketOptions,
        observer: @escaping Sink<UnixSocketConnection>, lifetime: CompoundDisposable
    ) {
        self.loop = loop
        self.path = path
        self.options = options
        self.observer = observer
        self.lifetime = lifetime
    }

    func start() {
        let stream: UVStream
        do {
            stream = try UVStream(loop: loop, type: UV_NAMED_PIPE, target: path, operation: "connect", limits: options.limits) {
                uv_pipe_init(self.loop.uvLoop, uvCast($0), 0)
            }
        } catch {
            observer(.error(error))
            lifetime.dispose()
            return
        }
        self.stream = stream
        lifetime.add(Disposable { [self] in
            loop.perform {
                self.cancelled = true
                self.stream?.close()
            }
        })
        // The request holds this attempt until its callback. uv_pipe_connect returns void
        // and reports every failure through the callback, so the submission is always
        // accepted (the 0 handed to the check).
        let request = UVRequest<uv_connect_t>(UV_CONNECT, owner: self)
        try? request.submit("connect", path, on: loop) { request in
            uv_pipe_connect(request, uvCast(stream.handle), path) { request, status in
                guard let request else { return }
                UVRequest<uv_connect_t>.finish(request).owner(as: UnixConnectAttempt.self).connected(status)
            }
            return 0
        }
    }

    private func connected(_ status: Int32) {
        guard let stream else { return }
        if cancelled || status == UV_ECANCELED.rawValue {
            stream.close()
            return
        }
        if status < 0 {
            stream.close()
            if !lifetime.isDisposed { observer(.error(uvError(status, "connect", path))) }
            lifetime.dispose()
            return
        }
        let connection = UnixSocketConnection(stream: stream, path: path)
        stream.whenClosed { [self] _ in
            guard !lifetime.isDisposed else { return }
            observer(.completed)
            lifetime.dispose()
        }
        if !lifetime.isDisposed { observer(.next(connection)) }
    }
}

/// A connection over a Unix domain socket, from ``UnixSocket/connect(path:options:on:)`` or
/// ``UnixSocket/listen(path:backlog:options:on:onListening:)``. Everything it does is
/// ``StreamConnection``'s.
public final class UnixSocketConnection: StreamConnection, @unchecked Sendable {
    // Thread-safety: `path` is immutable.

    /// The socket file the connection was made through.
    public let path: String

    init(stream: UVStream, path: String) {
        self.path = path
        super.init(stream: stream)
    }
}

/// Options for Unix domain socket connections.
public struct UnixSocketOptions: Sendable {
    /// Bytes the write queue may hold before ``backpressure`` acts; default 1 MiB.
    public var highWaterMark: Int
    /// What a full write queue does; default ``BackpressurePolicy/pauseSource``.
    public var backpressure: BackpressurePolicy

    /// Creates options.
    ///
    /// - Parameters:
    ///   - highWaterMark: the write queue's high-water mark, in bytes (at least 1).
    ///   - backpressure: the policy past the mark.
    public init(highWaterMark: Int = 1 << 20, backpressure: BackpressurePolicy = .pauseSource) {
        self.highWaterMark = highWaterMark
        self.backpressure = backpressure
    }

    var limits: WriteLimits { WriteLimits(highWaterMark: highWaterMark, policy: backpressure) }
}

import CLibUV
import Glibc

/// A listening socket (TCP or Unix domain) and the connections it accepted: the state of
/// one `listen` subscription.
///
/// It owns the listening handle (through a ``UVHandle``, which keeps this object alive until
/// the handle's close callback) and every accepted connection still open.
/// ``close()`` closes the handle **and** those connections: they belong to the
/// subscription. Accepted connections that close on their own are forgotten at once, so a
/// long-running server holds only live connections.
final class StreamListener: @unchecked Sendable {
    // Thread-safety: loop thread only.

    let loop: EventLoop
    /// The listening handle's owner.
    let uv: UVHandle<uv_stream_t>
    let type: uv_handle_type
    /// The address or path listened on, for errors.
    let target: String
    /// Makes the (not yet accepted) handle for the next client.
    let makeClient: () throws -> UVStream
    /// Wraps an accepted client.
    let wrap: (UVStream) -> StreamConnection
    /// The subscription's sink (callers adapt it to their connection type; a non-generic
    /// class because libuv's C callbacks cannot capture generic parameters).
    let observer: Sink<StreamConnection>
    let lifetime: CompoundDisposable
    var connections: [ObjectIdentifier: StreamConnection] = [:]
    var isClosing = false
    /// Whether the listening handle was closed by ``stopListening()`` while the accepted
    /// connections live on.
    var listeningStopped = false

    init(
        loop: EventLoop, type: uv_handle_type, target: String,
        observer: @escaping Sink<StreamConnection>, lifetime: CompoundDisposable,
        makeClient: @escaping () throws -> UVStream, wrap: @escaping (UVStream) -> StreamConnection,
        initialize: (UnsafeMutableRawPointer) -> Int32
    ) throws {
        self.uv = try UVHandle(loop: loop, type: type, operation: "listen", target: target) {
            initialize(UnsafeMutableRawPointer($0))
        }
        self.loop = loop
        self.type = type
        self.target = target
        self.observer = observer
        self.lifetime = lifetime
        self.makeClient = makeClient
        self.wrap = wrap
        uv.owner = self
        uv.onLoopShutdown = { [unowned self] in
            // The loop is closing (the connections are closed as handles of their own).
            for connection in connections.values { connection.stream.silent = true }
            close()
        }
    }

    /// The listening handle's memory.
    var handle: UnsafeMutableRawPointer { uv.memory }

    /// Starts listening (`uv_listen`).
    ///
    /// - Throws: ``UVError`` (`EADDRINUSE` surfaces here for TCP: libuv reports bind
    ///   errors when listening).
    func listen(backlog: Int) throws {
        let rc = uv_listen(uv.pointer, Int32(clamping: backlog)) { server, status in
            guard let server else { return }
            UVHandleCore.owner(of: server, as: StreamListener.self).accept(status)
        }
        try uv.started(rc, "listen")
    }

    private func accept(_ status: Int32) {
        if isClosing || listeningStopped { return }
        if status < 0 {
            // Running out of descriptors or memory, or a client that gave up before we
            // accepted it, is the moment's trouble, not the server's end: keep listening.
            if StreamListener.transientAcceptErrors.contains(status) { return }
            fail(uvError(status, "accept", target))
            return
        }
        let client: UVStream
        do {
            client = try makeClient()
        } catch {
            // Without a handle the pending connection cannot be accepted, and libuv stops
            // polling the listener until it is: end the subscription rather than hang.
            fail(error as? UVError ?? UVError(code: UV_ENOMEM.rawValue, operation: "accept", target: target))
            return
        }
        let rc = uv_accept(uv.pointer, client.uvStream)
        if rc < 0 {
            client.close()
            if StreamListener.transientAcceptErrors.contains(rc) { return }
            fail(uvError(rc, "accept", target))
            return
        }
        let connection = wrap(client)
        let key = ObjectIdentifier(connection)
        connections[key] = connection
        client.whenClosed { [weak self] _ in self?.connections[key] = nil }
        if !lifetime.isDisposed { observer(.next(connection)) }
    }

    /// Errors that do not end a listen subscription.
    static var transientAcceptErrors: Set<Int32> {
        [UV_EMFILE.rawValue, UV_ENFILE.rawValue, UV_ENOBUFS.rawValue, UV_ENOMEM.rawValue,
         UV_ECONNABORTED.rawValue, UV_EAGAIN.rawValue, UV_ECONNRESET.rawValue]
    }

    private func fail(_ error: UVError) {
        if !lifetime.isDisposed { observer(.error(error)) }
        lifetime.dispose()
        close()
    }

    /// Stops listening at once and keeps every accepted connection (loop thread);
    /// idempotent. New connects are refused by the kernel from then on (`ECONNREFUSED`;
    /// a Unix socket's file is removed), and ``close()`` still closes the connections.
    func stopListening() {
        guard !isClosing, !listeningStopped else { return }
        listeningStopped = true
        uv.close()
    }

    /// Stops listening when `signal` sends a value or completes (a graceful shutdown:
    /// accepted connections finish their work); disposed with `lifetime`.
    func stopListening(on signal: Signal<Void>?) {
        guard let signal else { return }
        let loop = self.loop
        let stop = { [weak self] in
            loop.perform { self?.stopListening() }
        }
        lifetime.add(signal.take(1).subscribe(next: { _ in stop() }, completed: stop))
    }

    /// Stops listening and closes every connection still open (loop thread); idempotent.
    ///
    /// The connections are closed silently, as at loop shutdown: closing them is our own
    /// doing (the subscription was disposed, or listening failed), so their readers end
    /// without an event — no unfinished last line delivered as if complete, no completion
    /// — and their writers' `send`s without `ENOTCONN … (already closed)`.
    func close() {
        guard !isClosing else { return }
        isClosing = true
        let open = Array(connections.values)
        connections = [:]
        for connection in open {
            connection.stream.silent = true
            connection.stream.close()
        }
        uv.close()
    }
}

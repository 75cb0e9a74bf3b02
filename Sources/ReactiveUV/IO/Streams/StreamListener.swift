import CLibUV
import Glibc

/// A listening socket (TCP or Unix domain) and the connections it accepted: the state of
/// one `listen` subscription.
///
/// It owns the listening handle (heap memory, freed in its close callback; `data` holds a
/// +1 reference to this object until then) and every accepted connection still open.
/// ``close()`` closes the handle **and** those connections: they belong to the
/// subscription. Accepted connections that close on their own are forgotten at once, so a
/// long-running server holds only live connections.
final class StreamListener: LoopResource, @unchecked Sendable {
    // Thread-safety: loop thread only.

    let loop: EventLoop
    let handle: UnsafeMutableRawPointer
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

    init(
        loop: EventLoop, type: uv_handle_type, target: String,
        observer: @escaping Sink<StreamConnection>, lifetime: CompoundDisposable,
        makeClient: @escaping () throws -> UVStream, wrap: @escaping (UVStream) -> StreamConnection,
        initialize: (UnsafeMutableRawPointer) -> Int32
    ) throws {
        let memory = allocateHandle(type)
        let rc = initialize(memory)
        if rc < 0 {
            memory.deallocate()
            throw UVError(code: rc, operation: "listen", target: target)
        }
        self.loop = loop
        self.handle = memory
        self.type = type
        self.target = target
        self.observer = observer
        self.lifetime = lifetime
        self.makeClient = makeClient
        self.wrap = wrap
        uvHandle.pointee.data = Unmanaged.passRetained(self).toOpaque()
        loop.register(self)
    }

    var uvHandle: UnsafeMutablePointer<uv_handle_t> { uvCast(handle) }

    /// Starts listening (`uv_listen`).
    ///
    /// - Throws: ``UVError`` (`EADDRINUSE` surfaces here for TCP: libuv reports bind
    ///   errors when listening).
    func listen(backlog: Int) throws {
        let rc = uv_listen(uvCast(handle), Int32(clamping: backlog)) { server, status in
            guard let server else { return }
            Unmanaged<StreamListener>.fromOpaque(server.pointee.data).takeUnretainedValue().accept(status)
        }
        try uvCheck(rc, "listen", target)
    }

    private func accept(_ status: Int32) {
        if isClosing { return }
        if status < 0 {
            // Running out of descriptors or memory, or a client that gave up before we
            // accepted it, is the moment's trouble, not the server's end: keep listening.
            if StreamListener.transientAcceptErrors.contains(status) { return }
            fail(UVError(code: status, operation: "accept", target: target))
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
        let rc = uv_accept(uvCast(handle), client.uvStream)
        if rc < 0 {
            client.close()
            if StreamListener.transientAcceptErrors.contains(rc) { return }
            fail(UVError(code: rc, operation: "accept", target: target))
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

    /// Stops listening and closes every connection still open (loop thread); idempotent.
    func close() {
        guard !isClosing else { return }
        isClosing = true
        let open = Array(connections.values)
        connections = [:]
        for connection in open { connection.stream.close() }
        uv_close(uvHandle) { handle in
            guard let handle else { return }
            let listener = Unmanaged<StreamListener>.fromOpaque(handle.pointee.data).takeRetainedValue()
            listener.handle.deallocate()
            listener.loop.unregister(listener)
        }
    }

    /// ``LoopResource``: the loop is closing (the connections are resources of their own).
    func closeForLoopShutdown() {
        for connection in connections.values { connection.stream.silent = true }
        close()
    }
}

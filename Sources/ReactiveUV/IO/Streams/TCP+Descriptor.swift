import CLibUV
import Glibc

// A listening TCP socket made by someone else: systemd's socket activation (`LISTEN_FDS`),
// inetd-style supervisors, a parent that binds a privileged port and drops privileges.
// Everything after the socket exists — accepting, the connections, closing — is
// `TCP.listen(host:port:)`'s, through the same `StreamListener`; only how the handle gets
// its socket differs (`uv_tcp_open` on a duplicate instead of `uv_tcp_bind`).

extension TCP {
    /// Accepts connections on a TCP socket made elsewhere while subscribed, for example
    /// one systemd passed by socket activation.
    ///
    /// `fd` is an open `SOCK_STREAM` socket of family `AF_INET` or `AF_INET6` that is bound
    /// to an address (listening already or not): libuv gets a duplicate of it
    /// (`uv_tcp_open`) and listens there with `backlog` (`uv_listen`; for a socket that
    /// listens already, that only sets the backlog again). An unbound socket is refused
    /// rather than listened on: `listen(2)` would bind it to an ephemeral port on every
    /// interface. Apart from how the socket is made it is
    /// ``listen(host:port:backlog:options:stopAccepting:on:onListening:)``: each accepted
    /// connection is sent as a value on the loop's thread, disposing closes the listening
    /// handle and every accepted connection, and `stopAccepting` stops accepting only.
    ///
    /// **Ownership.** Once listening has started, the descriptor is the subscription's:
    /// `fd` has been closed and the listener closes its own duplicate when it closes (so a
    /// socket systemd passed stays open in systemd, which keeps its own copy). If anything
    /// fails first, `fd` is left open and unchanged, still the caller's.
    ///
    /// It never completes; it fails with a ``UVError`` naming `fd N`: `EBADF` for a closed
    /// descriptor, `ENOTSOCK` for one that is not a socket, `EINVAL` for a datagram socket
    /// or an unbound one, `EAFNOSUPPORT` for another family (a Unix socket: see
    /// ``UnixSocket``), or the error of `uv_listen`.
    ///
    /// ```swift
    /// // Under systemd with a .socket unit: the first passed descriptor is 3.
    /// TCP.listen(descriptor: 3, onListening: { print("serving", $0) })
    ///     .flattenMap { c in c.send(c.reads).then { c.shutdown() }.catchTo(.empty()) }
    ///     .subscribe()
    /// ```
    ///
    /// - Parameters:
    ///   - fd: the descriptor of the bound (or listening) socket.
    ///   - backlog: the kernel's queue of connections not yet accepted.
    ///   - options: applied to every accepted connection.
    ///   - stopAccepting: stops listening (not the connections) on its first value or its
    ///     completion; `nil` for never.
    ///   - requestedLoop: the loop to listen on; `nil` for the default (see ``TCP``).
    ///   - onListening: called once on the loop's thread when listening has started, with
    ///     the socket's address.
    /// - Returns: a cold signal of accepted connections. Subscribe it once: after listening
    ///   has started `fd` is closed and its number may already name another descriptor.
    public static func listen(
        descriptor fd: Int32, backlog: Int = 511, options: TCPOptions = TCPOptions(), stopAccepting: Signal<Void>? = nil,
        on requestedLoop: EventLoop? = nil, onListening: ((SocketAddress) -> Void)? = nil
    ) -> Signal<TCPConnection> {
        AnonymousSignal { observer, lifetime in
            let loop = EventLoop.sourceLoop(requestedLoop)
            loop.start(observer, lifetime, operation: "listen", target: "fd \(fd)") {
                listenOnDescriptor(
                    fd, backlog: backlog, options: options, stopAccepting: stopAccepting, loop: loop,
                    observer: observer, lifetime: lifetime, onListening: onListening)
            }
        }
    }

    /// Checks `fd`, opens a duplicate in a listener, listens, and reports (loop thread).
    private static func listenOnDescriptor(
        _ fd: Int32, backlog: Int, options: TCPOptions, stopAccepting: Signal<Void>?, loop: EventLoop,
        observer: @escaping Sink<TCPConnection>, lifetime: CompoundDisposable, onListening: ((SocketAddress) -> Void)?
    ) {
        let target = "fd \(fd)"
        let own: Int32
        do {
            try checkListenable(fd, target: target)
            // libuv gets a duplicate so that `fd` stays the caller's until everything worked.
            own = fcntl(fd, F_DUPFD_CLOEXEC, 0)
            if own < 0 { throw UVError(code: -errno, operation: "listen (dup)", target: target) }
        } catch {
            observer(.error(error))
            lifetime.dispose()
            return
        }
        let listener: StreamListener
        do {
            listener = try TCP.listener(loop: loop, target: target, options: options, observer: observer, lifetime: lifetime)
        } catch {
            Glibc.close(own)
            observer(.error(error))
            lifetime.dispose()
            return
        }
        lifetime.add(Disposable { loop.perform { listener.close() } })
        let rc = uv_tcp_open(uvCast(listener.handle), uv_os_sock_t(own))
        if rc < 0 {
            Glibc.close(own)  // libuv did not take it: ours to close
            if !lifetime.isDisposed { observer(.error(uvError(rc, "listen (uv_tcp_open)", target))) }
            lifetime.dispose()
            return
        }
        do {
            try listener.listen(backlog: backlog)
        } catch {
            // The handle owns `own` now and closes it with itself; `fd` is untouched.
            if !lifetime.isDisposed { observer(.error(error)) }
            lifetime.dispose()
            return
        }
        Glibc.close(fd)  // the listener owns the socket now (through its duplicate)
        let bound = SocketAddress.local(of: uvCast(listener.handle))
        listener.stopListening(on: stopAccepting)
        if let bound { onListening?(bound) }
    }

    /// Throws unless `fd` is a bound IPv4 or IPv6 stream socket.
    private static func checkListenable(_ fd: Int32, target: String) throws {
        func socketOption(_ name: Int32) throws -> Int32 {
            var value: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            if getsockopt(fd, SOL_SOCKET, name, &value, &length) != 0 {
                throw UVError(code: -errno, operation: "listen", target: target)
            }
            return value
        }
        guard try socketOption(SO_TYPE) == Int32(SOCK_STREAM.rawValue) else {
            throw UVError(code: UV_EINVAL.rawValue, operation: "listen (not a stream socket)", target: target)
        }
        guard [AF_INET, AF_INET6].contains(try socketOption(SO_DOMAIN)) else {
            throw UVError(code: UV_EAFNOSUPPORT.rawValue, operation: "listen (not an IPv4 or IPv6 socket)", target: target)
        }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) == 0 }
        }
        if !named { throw UVError(code: -errno, operation: "listen (getsockname)", target: target) }
        // sin_port and sin6_port sit at the same offset: port 0 means never bound.
        let port = withUnsafeBytes(of: &storage) { $0.load(fromByteOffset: 2, as: UInt16.self) }
        guard port != 0 else {
            throw UVError(code: UV_EINVAL.rawValue, operation: "listen (the socket is not bound to an address)", target: target)
        }
    }
}

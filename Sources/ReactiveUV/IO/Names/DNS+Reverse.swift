import CLibUV
import Glibc

// Reverse resolution: an address to its host name with `uv_getnameinfo`, a one-shot request
// run on libuv's thread pool like `uv_getaddrinfo` (DNS.swift), and owned the same way: the
// heap request holds the Swift object (+1) until its callback frees both.

extension DNS {
    /// The host name of `address` (reverse resolution, `uv_getnameinfo`): sent once, then
    /// completes.
    ///
    /// Asks the system's resolver (`/etc/hosts`, then DNS `PTR` records, as configured in
    /// `nsswitch.conf`). When no name is known the resolver answers with the numeric
    /// address itself (`"192.0.2.1"`), as `getnameinfo` does, unless `requireName` is set:
    /// then the signal fails with `EAI_NONAME`.
    ///
    /// ```swift
    /// DNS.name(for: SocketAddress(numericHost: "127.0.0.1", port: 0)!)
    ///     .subscribeNext { print($0) }   // localhost
    /// ```
    ///
    /// - Parameters:
    ///   - address: the IPv4 or IPv6 address to name (its port takes no part).
    ///   - requireName: fail with `EAI_NONAME` instead of answering with the numeric address
    ///     (`NI_NAMEREQD`).
    ///   - loop: the loop to run on: by default the subscribing thread's loop, else
    ///     ``EventLoop/main``.
    /// - Returns: a cold signal of one name. Events arrive on the loop's thread. It fails
    ///   with a ``UVError`` carrying libuv's mapping of the resolver's code (`EAI_NONAME`,
    ///   `EAI_AGAIN`) during getnameinfo on the address. Disposal before the answer cancels
    ///   the request with `uv_cancel` (silently; a lookup already running on a pool thread
    ///   finishes there and its answer is dropped).
    public static func name(for address: SocketAddress, requireName: Bool = false, on loop: EventLoop? = nil) -> Signal<String> {
        AnonymousSignal { observer, lifetime in
            let loop = EventLoop.sourceLoop(loop)
            if loop.isClosed {
                observer(.error(closedLoopError("DNS.name", address.host)))
                return
            }
            let request = ReverseResolver(loop: loop, address: address, requireName: requireName) { result in
                if lifetime.isDisposed { return }
                switch result {
                case .success(let name):
                    observer(.next(name))
                    if lifetime.isDisposed { return }
                    observer(.completed)
                case .failure(let error):
                    observer(.error(error))
                }
                lifetime.dispose()
            }
            lifetime.add(Disposable { loop.perform { request.stop() } })
            loop.perform { request.start() }
        }
    }

    /// The host name of a numeric address given as text (see ``name(for:requireName:on:)-(SocketAddress,_,_)``).
    ///
    /// - Parameters:
    ///   - host: `127.0.0.1`, `::1` or `[::1]`; a name is refused with `EINVAL` (resolve it
    ///     with ``resolve(_:port:on:)`` first).
    ///   - requireName: fail with `EAI_NONAME` when no name is known.
    ///   - loop: the loop to run on (as above).
    /// - Returns: a cold signal of one name.
    public static func name(forHost host: String, requireName: Bool = false, on loop: EventLoop? = nil) -> Signal<String> {
        guard !containsNUL(host), let address = SocketAddress(numericHost: host, port: 0) else {
            return .error(UVError(code: UV_EINVAL.rawValue, operation: "DNS.name: not a numeric IPv4 or IPv6 address", target: host))
        }
        return name(for: address, requireName: requireName, on: loop)
    }
}

/// One `uv_getnameinfo` request (loop-thread confined), through the Loop's one request
/// owner (`UVRequest`): it holds this object while in flight; the callback takes it back.
final class ReverseResolver: LoopResource, @unchecked Sendable {
    // Thread-safety: loop thread only (started and stopped through `EventLoop.perform`).
    let loop: EventLoop
    let address: SocketAddress
    let requireName: Bool
    let finish: (Result<String, UVError>) -> Void
    private var request: UVRequest<uv_getnameinfo_t>?
    private var stopped = false

    init(loop: EventLoop, address: SocketAddress, requireName: Bool, finish: @escaping (Result<String, UVError>) -> Void) {
        self.loop = loop
        self.address = address
        self.requireName = requireName
        self.finish = finish
    }

    func start() {
        if stopped { return }
        let request = UVRequest<uv_getnameinfo_t>(UV_GETNAMEINFO, owner: self)
        let flags = requireName ? NI_NAMEREQD : 0
        do {
            try address.withSockaddr { sockaddr in
                try request.submit("getnameinfo", address.host) { req in
                    uv_getnameinfo(loop.uvLoop, req, { req, status, hostname, _ in
                        guard let req else { return }
                        // libuv copies the answer into the request; read it before the
                        // request (freed with its last reference) can go.
                        let name = status == 0 ? hostname.map { String(cString: $0) } : nil
                        UVRequest<uv_getnameinfo_t>.finish(req).owner(as: ReverseResolver.self)
                            .answered(status: status, name: name)
                    }, sockaddr, flags)
                }
            }
        } catch {
            // libuv refused the request: no callback will come.
            stopped = true
            return finish(.failure(error as? UVError ?? UVError(code: UV_EINVAL.rawValue, operation: "getnameinfo", target: address.host)))
        }
        self.request = request
        loop.register(self)
    }

    private func answered(status: Int32, name: String?) {
        request = nil
        loop.unregister(self)
        if stopped { return }  // cancelled by our own disposal: silent
        stopped = true
        if status < 0 {
            return finish(.failure(UVError(code: status, operation: "getnameinfo", target: address.host)))
        }
        guard let name, !name.isEmpty else {
            return finish(.failure(UVError(code: UV_EAI_NONAME.rawValue, operation: "getnameinfo", target: address.host)))
        }
        finish(.success(name))
    }

    /// Cancels the request if it still waits for a pool thread (loop thread); an answer
    /// that still comes is dropped.
    func stop() {
        if stopped { return }
        stopped = true
        // EBUSY (the lookup is running or done) is expected: its answer is dropped.
        request?.cancel()
    }

    func closeForLoopShutdown() { stop() }
}

import CLibUV
import Glibc

/// Name resolution through libuv's `uv_getaddrinfo` (the system resolver, run on libuv's
/// thread pool): `/etc/hosts`, DNS, and whatever else `nsswitch.conf` names.
public enum DNS {
    /// One resolved address: a numeric IPv4 or IPv6 host and a port.
    ///
    /// A small value of its own (rather than a `sockaddr`) so it can be printed, compared
    /// and sent between threads; ``description`` is the usual `host:port` form.
    public struct Address: Sendable, Equatable, Hashable, CustomStringConvertible {
        /// The address family.
        public enum Family: Sendable, Equatable, Hashable {
            /// IPv4 (`AF_INET`).
            case ipv4
            /// IPv6 (`AF_INET6`).
            case ipv6
        }

        /// The family of ``host``.
        public let family: Family
        /// The numeric address: `127.0.0.1`, `::1`.
        public let host: String
        /// The port (0 when none was asked for).
        public let port: UInt16

        /// Creates an address.
        ///
        /// - Parameters:
        ///   - family: the family of `host`.
        ///   - host: a numeric address.
        ///   - port: the port.
        public init(family: Family, host: String, port: UInt16) {
            self.family = family
            self.host = host
            self.port = port
        }

        /// `127.0.0.1:80` or `[::1]:80`.
        public var description: String {
            family == .ipv6 ? "[\(host)]:\(port)" : "\(host):\(port)"
        }

        /// The same address as TCP's ``SocketAddress``.
        init(_ address: SocketAddress) {
            self.init(family: address.family == .ipv6 ? .ipv6 : .ipv4, host: address.host, port: UInt16(address.port))
        }
    }

    /// Resolves `host` to its addresses, each sent as one value, then completes.
    ///
    /// Asks for stream (TCP) addresses of any family, so each address appears once (not
    /// once per socket type); duplicates are dropped and the resolver's order is kept
    /// (the order `connect` should try). A numeric host (`"127.0.0.1"`, `"::1"`) resolves
    /// to itself without a lookup.
    ///
    /// - Parameters:
    ///   - host: a host name or numeric address.
    ///   - port: the port to put in each address (0 by default).
    ///   - loop: the loop to run on (see ``File``'s rule: by default the subscribing
    ///     thread's loop, else ``EventLoop/main``).
    /// - Returns: a cold signal of addresses. Events arrive on the loop's thread. It
    ///   completes after the last address; it fails with a ``UVError`` carrying libuv's
    ///   mapping of the resolver's code, such as `EAI_NONAME` (unknown name) or
    ///   `EAI_AGAIN` (temporary failure), during getaddrinfo on the host. Disposal before
    ///   the answer cancels the request with `uv_cancel` (silently; a lookup already running
    ///   on a pool thread finishes there and its answer is dropped).
    public static func resolve(_ host: String, port: UInt16 = 0, on loop: EventLoop? = nil) -> Signal<Address> {
        if containsNUL(host) {
            return .error(UVError(code: UV_EINVAL.rawValue, operation: "DNS.resolve: a host with a NUL byte", target: host))
        }
        return AnonymousSignal { observer, lifetime in
            let loop = EventLoop.sourceLoop(loop)
            if loop.isClosed {
                observer(.error(closedLoopError("DNS.resolve", host)))
                return
            }
            let resolver = DNSResolver(
                loop: loop, host: host, port: Int(port),
                finish: { result in
                    if lifetime.isDisposed { return }
                    switch result {
                    case .success(let addresses):
                        for address in addresses {
                            if lifetime.isDisposed { return }
                            observer(.next(DNS.Address(address)))
                        }
                        if lifetime.isDisposed { return }
                        observer(.completed)
                    case .failure(let error):
                        observer(.error(error))
                    }
                    lifetime.dispose()
                })
            lifetime.add(Disposable { loop.perform { resolver.stop() } })
            loop.perform { resolver.start() }
        }
    }
}

/// One `uv_getaddrinfo` request, for ``DNS/resolve(_:port:on:)`` and for TCP's name
/// resolution (`AddressResolution`): a ``UVRequest`` that holds this object while it is in
/// flight; the callback frees the answer, and the request's memory goes with the request.
///
/// Thread-safety: loop-thread confined.
final class DNSResolver: LoopResource, @unchecked Sendable {
    let loop: EventLoop
    let host: String
    let port: Int
    /// How errors name what was being done (`getaddrinfo`, or TCP's `resolve`) and to what.
    let operation: String
    let target: String
    let finish: (Result<[SocketAddress], UVError>) -> Void
    private var request: UVRequest<uv_getaddrinfo_t>?
    private var stopped = false

    /// - Parameters:
    ///   - host: a name or numeric address (without brackets).
    ///   - port: 0–65535, put into every address.
    ///   - operation: the error's operation; `target` its target (default: `host`).
    ///   - finish: called once on the loop thread with the answer, unless ``stop()`` ran first.
    init(
        loop: EventLoop, host: String, port: Int, operation: String = "getaddrinfo", target: String? = nil,
        finish: @escaping (Result<[SocketAddress], UVError>) -> Void
    ) {
        self.loop = loop
        self.host = host
        self.port = port
        self.operation = operation
        self.target = target ?? host
        self.finish = finish
    }

    func start() {
        if stopped { return }
        let request = UVRequest<uv_getaddrinfo_t>(UV_GETADDRINFO, owner: self)
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV
        do {
            try host.withCString { node in
                try String(port).withCString { service in
                    try request.submit(operation, target) { req in
                        uv_getaddrinfo(loop.uvLoop, req, { req, status, result in
                            guard let req else { return }
                            UVRequest<uv_getaddrinfo_t>.finish(req).owner(as: DNSResolver.self)
                                .answered(status: status, result: result)
                        }, node, service, &hints)
                    }
                }
            }
        } catch {
            // libuv refused the request: no callback will come.
            stopped = true
            return finish(.failure(error as? UVError ?? UVError(code: UV_EINVAL.rawValue, operation: operation, target: target)))
        }
        self.request = request
        loop.register(self)
    }

    private func answered(status: Int32, result: UnsafeMutablePointer<addrinfo>?) {
        request = nil
        loop.unregister(self)
        defer { uv_freeaddrinfo(result) }
        if stopped { return }  // cancelled by our own disposal: silent
        stopped = true
        if status < 0 {
            return finish(.failure(uvError(status, operation, target)))
        }
        var addresses: [SocketAddress] = []
        var node = result
        while let info = node {
            if let sa = info.pointee.ai_addr, let address = SocketAddress(UnsafePointer(sa)), !addresses.contains(address) {
                addresses.append(address)
            }
            node = info.pointee.ai_next
        }
        if addresses.isEmpty {
            return finish(.failure(UVError(code: UV_EAI_NONAME.rawValue, operation: operation, target: target)))
        }
        finish(.success(addresses))
    }

    /// Cancels the request if it is still waiting for a pool thread (loop thread); the
    /// answer, if one still comes, is dropped.
    func stop() {
        if stopped { return }
        stopped = true
        // EBUSY (the lookup is running or done) is expected: its answer is dropped.
        request?.cancel()
    }

    func closeForLoopShutdown() { stop() }
}

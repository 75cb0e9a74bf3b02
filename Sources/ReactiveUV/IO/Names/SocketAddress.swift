import CLibUV
import Glibc

/// An IPv4 or IPv6 address and port, as TCP uses them, or the address of a Unix datagram
/// socket.
///
/// Printed the way people type them: `127.0.0.1:7070`, `[::1]:7070`. That text is also the
/// ``UVError/target`` of errors about the address. Unix addresses (``Family/unix``) appear
/// only where a Unix datagram socket was handed to ``UDP/open(descriptor:options:on:)``:
/// `unix:/run/app.sock`, `unix:@abstract`, or `unix:(unnamed)` for a socket without a name
/// (each end of a `socketpair`).
public struct SocketAddress: Sendable, Hashable, CustomStringConvertible {
    /// The address family.
    public enum Family: Sendable, Hashable {
        /// IPv4 (`AF_INET`).
        case ipv4
        /// IPv6 (`AF_INET6`).
        case ipv6
        /// A Unix domain socket (`AF_UNIX`): ``host`` holds its path (`@name` for an
        /// abstract name, empty for an unnamed socket) and ``port`` is 0.
        case unix
    }

    /// The numeric host, without brackets: `127.0.0.1`, `::1`; for ``Family/unix`` the
    /// socket's path.
    public let host: String
    /// The port, 0–65535 (0 for ``Family/unix``).
    public let port: Int
    /// IPv4, IPv6 or Unix.
    public let family: Family

    /// `127.0.0.1:7070`, `[::1]:7070`, `unix:/run/app.sock`, `unix:(unnamed)`.
    public var description: String {
        switch family {
        case .ipv4: return "\(host):\(port)"
        case .ipv6: return "[\(host)]:\(port)"
        case .unix: return host.isEmpty ? "unix:(unnamed)" : "unix:\(host)"
        }
    }

    /// Parses a numeric IPv4 or IPv6 host (brackets around IPv6 are accepted).
    ///
    /// - Parameters:
    ///   - host: `127.0.0.1`, `::1` or `[::1]`.
    ///   - port: the port, 0–65535.
    /// - Returns: `nil` when `host` is not a numeric address (a name needs resolving) or the
    ///   port is out of range.
    public init?(numericHost host: String, port: Int) {
        guard (0...65535).contains(port) else { return nil }
        let bare = SocketAddress.stripBrackets(host)
        var v4 = sockaddr_in()
        if !bare.contains(":"), uv_ip4_addr(bare, Int32(port), &v4) == 0 {
            self.init(storage: SocketAddress.storage(v4))
            return
        }
        var v6 = sockaddr_in6()
        if uv_ip6_addr(bare, Int32(port), &v6) == 0 {
            self.init(storage: SocketAddress.storage(v6))
            return
        }
        return nil
    }

    /// The raw address, kept so scope ids of link-local IPv6 addresses survive.
    let storage: sockaddr_storage

    /// Reads an address the kernel filled in; `nil` for families other than IPv4, IPv6 and
    /// Unix.
    ///
    /// - Parameters:
    ///   - address: the address.
    ///   - length: the length the kernel reported, when known; it tells a Unix socket's
    ///     unnamed (2) and abstract (leading NUL) addresses apart from paths.
    init?(_ address: UnsafePointer<sockaddr>, length: Int? = nil) {
        switch Int32(address.pointee.sa_family) {
        case AF_INET:
            self.init(storage: address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { SocketAddress.storage($0.pointee) })
        case AF_INET6:
            self.init(storage: address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { SocketAddress.storage($0.pointee) })
        case AF_UNIX:
            let unix = address.withMemoryRebound(to: sockaddr_un.self, capacity: 1) { $0.pointee }
            self.init(unix: unix, length: length)
        default:
            return nil
        }
    }

    /// A Unix socket's address: the path (up to `length` or the first NUL), `@name` for an
    /// abstract name, empty for an unnamed socket. Without the length (a sender libuv
    /// reports, which comes without one) an abstract name reads as unnamed.
    private init(unix: sockaddr_un, length: Int?) {
        var copy = unix
        let pathCapacity = MemoryLayout.size(ofValue: copy.sun_path)
        let pathLength = min(max((length ?? MemoryLayout<sockaddr_un>.size) - MemoryLayout<sa_family_t>.size, 0), pathCapacity)
        let bytes = withUnsafeBytes(of: &copy.sun_path) { Array($0.prefix(pathLength)) }
        if let first = bytes.first, first == 0, length != nil, bytes.count > 1 {
            // Abstract: the name is every byte after the leading NUL, as `ss -x` shows it.
            host = "@" + String(decoding: bytes.dropFirst(), as: UTF8.self)
        } else {
            host = String(decoding: bytes.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
        port = 0
        family = .unix
        storage = SocketAddress.storage(copy)
    }

    /// A Unix socket without a name: each end of a `socketpair`, a sender that never bound.
    static let unnamedUnix: SocketAddress = {
        var unix = sockaddr_un()
        unix.sun_family = sa_family_t(AF_UNIX)
        return SocketAddress(unix: unix, length: MemoryLayout<sa_family_t>.size)
    }()

    private init(storage: sockaddr_storage) {
        self.storage = storage
        var copy = storage
        var name = [CChar](repeating: 0, count: 64)
        let (family, port): (Family, Int) = withUnsafePointer(to: &copy) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                // Cannot fail: the family is AF_INET or AF_INET6 (the callers checked) and 64
                // bytes hold any IPv6 text (INET6_ADDRSTRLEN is 46); an empty host if it did.
                _ = try? uvCheck(uv_ip_name(sa, &name, name.count), "uv_ip_name")
                if Int32(sa.pointee.sa_family) == AF_INET6 {
                    let port = sa.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_port }
                    return (.ipv6, Int(UInt16(bigEndian: port)))
                }
                let port = sa.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_port }
                return (.ipv4, Int(UInt16(bigEndian: port)))
            }
        }
        self.family = family
        self.port = port
        self.host = name.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    /// Calls `body` with the address as a `sockaddr` pointer (for bind and connect).
    func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>) throws -> R) rethrows -> R {
        var copy = storage
        return try withUnsafePointer(to: &copy) { pointer in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1, body)
        }
    }

    /// Equal when host, port and family are equal (an IPv6 scope id takes no part).
    public static func == (lhs: SocketAddress, rhs: SocketAddress) -> Bool {
        lhs.host == rhs.host && lhs.port == rhs.port && lhs.family == rhs.family
    }

    /// Hashes host and port, consistent with `==`.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(host)
        hasher.combine(port)
    }

    static func stripBrackets(_ host: String) -> String {
        if host.hasPrefix("[") && host.hasSuffix("]") { return String(host.dropFirst().dropLast()) }
        return host
    }

    private static func storage<T>(_ address: T) -> sockaddr_storage {
        var storage = sockaddr_storage()
        withUnsafeMutableBytes(of: &storage) { raw in
            withUnsafeBytes(of: address) { raw.copyMemory(from: $0) }
        }
        return storage
    }

    /// The local address of a TCP handle, or `nil` before it is bound.
    static func local(of tcp: UnsafeMutablePointer<uv_tcp_t>) -> SocketAddress? {
        var storage = sockaddr_storage()
        var length = Int32(MemoryLayout<sockaddr_storage>.size)
        return withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                uv_tcp_getsockname(tcp, sa, &length) == 0 ? SocketAddress(UnsafePointer(sa)) : nil
            }
        }
    }

    /// The peer address of a connected TCP handle, or `nil`.
    static func peer(of tcp: UnsafeMutablePointer<uv_tcp_t>) -> SocketAddress? {
        var storage = sockaddr_storage()
        var length = Int32(MemoryLayout<sockaddr_storage>.size)
        return withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                uv_tcp_getpeername(tcp, sa, &length) == 0 ? SocketAddress(UnsafePointer(sa)) : nil
            }
        }
    }
}

/// Turns a host (numeric, or a name) and a port into addresses, on a loop: TCP's name
/// resolution. Numeric hosts resolve at once; names go through ``DNSResolver`` (the same
/// `uv_getaddrinfo` request as ``DNS/resolve(_:port:on:)``).
enum AddressResolution {
    typealias Completion = (Result<[SocketAddress], UVError>) -> Void

    /// Resolves `host:port` on `loop` (loop thread), calling `completion` once on the loop
    /// thread, unless `stop()` of the returned resolver runs first.
    ///
    /// - Returns: the resolution in progress (`nil` when it finished synchronously); call
    ///   `stop()` on it to drop the answer.
    @discardableResult
    static func resolve(
        host: String, port: Int, on loop: EventLoop, _ completion: @escaping Completion
    ) -> DNSResolver? {
        let target = "\(host):\(port)"
        guard (0...65535).contains(port) else {
            completion(.failure(UVError(code: UV_EINVAL.rawValue, operation: "resolve (port out of range)", target: target)))
            return nil
        }
        if let numeric = SocketAddress(numericHost: host, port: port) {
            completion(.success([numeric]))
            return nil
        }
        let resolver = DNSResolver(
            loop: loop, host: SocketAddress.stripBrackets(host), port: port, operation: "resolve", target: target,
            finish: completion)
        resolver.start()
        return resolver
    }
}

import CLibUV
import Glibc

/// An IPv4 or IPv6 address and port, as TCP uses them.
///
/// Printed the way people type them: `127.0.0.1:7070`, `[::1]:7070`. That text is also the
/// ``UVError/target`` of errors about the address.
public struct SocketAddress: Sendable, Hashable, CustomStringConvertible {
    /// The address family.
    public enum Family: Sendable, Hashable {
        /// IPv4 (`AF_INET`).
        case ipv4
        /// IPv6 (`AF_INET6`).
        case ipv6
    }

    /// The numeric host, without brackets: `127.0.0.1`, `::1`.
    public let host: String
    /// The port, 0–65535.
    public let port: Int
    /// IPv4 or IPv6.
    public let family: Family

    /// `127.0.0.1:7070` or `[::1]:7070`.
    public var description: String {
        family == .ipv6 ? "[\(host)]:\(port)" : "\(host):\(port)"
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

    /// Reads an address the kernel filled in; `nil` for families other than IPv4/IPv6.
    init?(_ address: UnsafePointer<sockaddr>) {
        switch Int32(address.pointee.sa_family) {
        case AF_INET:
            self.init(storage: address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { SocketAddress.storage($0.pointee) })
        case AF_INET6:
            self.init(storage: address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { SocketAddress.storage($0.pointee) })
        default:
            return nil
        }
    }

    private init(storage: sockaddr_storage) {
        self.storage = storage
        var copy = storage
        var name = [CChar](repeating: 0, count: 64)
        let (family, port): (Family, Int) = withUnsafePointer(to: &copy) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                _ = uv_ip_name(sa, &name, name.count)
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

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
    ///
    /// An IP address's text is made when it is asked for, not when the address is made:
    /// every accepted connection reads its two addresses from the kernel, and most servers
    /// never print them (formatting both cost ~6,000 instructions a connection, an eighth
    /// of what `ruv-echo` spent on one).
    public var host: String {
        if let unixPath { return unixPath }
        return family == .ipv4 ? SocketAddress.ipv4Text(storage) : SocketAddress.ipv6Text(storage)
    }
    /// A Unix socket's path (``host``); `nil` for IP addresses.
    private let unixPath: String?
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
        let host: String
        if let first = bytes.first, first == 0, length != nil, bytes.count > 1 {
            // Abstract: the name is every byte after the leading NUL, as `ss -x` shows it.
            host = "@" + String(decoding: bytes.dropFirst(), as: UTF8.self)
        } else {
            host = String(decoding: bytes.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
        unixPath = host
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

    /// An IPv4 or IPv6 address (the callers checked the family).
    private init(storage: sockaddr_storage) {
        self.storage = storage
        unixPath = nil
        if Int32(storage.ss_family) == AF_INET6 {
            family = .ipv6
            port = Int(UInt16(bigEndian: SocketAddress.ipv6(storage).sin6_port))
        } else {
            family = .ipv4
            port = Int(UInt16(bigEndian: SocketAddress.ipv4(storage).sin_port))
        }
    }

    private static func ipv4(_ storage: sockaddr_storage) -> sockaddr_in {
        withUnsafeBytes(of: storage) { $0.loadUnaligned(as: sockaddr_in.self) }
    }

    private static func ipv6(_ storage: sockaddr_storage) -> sockaddr_in6 {
        withUnsafeBytes(of: storage) { $0.loadUnaligned(as: sockaddr_in6.self) }
    }

    /// `a.b.c.d`, written here: libuv's `uv_ip4_name` goes through `snprintf`, several
    /// times the cost, and servers print their peers' addresses (logs, errors) often.
    private static func ipv4Text(_ storage: sockaddr_storage) -> String {
        let address = UInt32(bigEndian: ipv4(storage).sin_addr.s_addr)
        return String(unsafeUninitializedCapacity: 15) { out in
            var n = 0
            for index in 0..<4 {
                let octet = Int((address >> UInt32(24 - 8 * index)) & 0xFF)
                if octet >= 100 { out[n] = UInt8(48 + octet / 100); n += 1 }
                if octet >= 10 { out[n] = UInt8(48 + octet / 10 % 10); n += 1 }
                out[n] = UInt8(48 + octet % 10)
                n += 1
                if index < 3 { out[n] = UInt8(ascii: "."); n += 1 }
            }
            return n
        }
    }

    /// The RFC 5952 text of an IPv6 address (`uv_ip6_name`, without the scope id).
    private static func ipv6Text(_ storage: sockaddr_storage) -> String {
        var address = ipv6(storage)
        // 64 bytes hold any IPv6 text (INET6_ADDRSTRLEN is 46), so this cannot fail for an
        // AF_INET6 address; the text is then empty.
        return withUnsafeTemporaryAllocation(of: CChar.self, capacity: 64) { name in
            name[0] = 0
            _ = uv_ip6_name(&address, name.baseAddress!, name.count)
            return String(cString: name.baseAddress!)
        }
    }

    /// Calls `body` with the address as a `sockaddr` pointer (for bind and connect).
    func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>) throws -> R) rethrows -> R {
        var copy = storage
        return try withUnsafePointer(to: &copy) { pointer in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1, body)
        }
    }

    /// Equal when host, port and family are equal (an IPv6 scope id takes no part).
    ///
    /// IP addresses compare their bytes, which is the same as comparing their text: the
    /// text is the address's one canonical form.
    public static func == (lhs: SocketAddress, rhs: SocketAddress) -> Bool {
        guard lhs.family == rhs.family, lhs.port == rhs.port else { return false }
        switch lhs.family {
        case .unix: return lhs.unixPath == rhs.unixPath
        case .ipv4: return ipv4(lhs.storage).sin_addr.s_addr == ipv4(rhs.storage).sin_addr.s_addr
        case .ipv6: return withUnsafeBytes(of: ipv6(lhs.storage).sin6_addr) { l in withUnsafeBytes(of: ipv6(rhs.storage).sin6_addr) { r in l.elementsEqual(r) } }
        }
    }

    /// Hashes what `==` compares.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(port)
        switch family {
        case .unix: hasher.combine(unixPath)
        case .ipv4: hasher.combine(SocketAddress.ipv4(storage).sin_addr.s_addr)
        case .ipv6: withUnsafeBytes(of: SocketAddress.ipv6(storage).sin6_addr) { hasher.combine(bytes: $0) }
        }
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

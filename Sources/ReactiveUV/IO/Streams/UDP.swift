import CLibUV
import Glibc

/// UDP as signals: a bound socket is a signal of the datagrams it receives.
///
/// Hosts are numeric IPv4 or IPv6 addresses (`127.0.0.1`, `::1`, `[::1]`, `0.0.0.0`, `::`)
/// or names (resolved with `uv_getaddrinfo`, first address). The loop (`on:`) defaults to
/// the subscribing thread's loop when it is a loop thread, else ``EventLoop/main``; every
/// event arrives on that loop's thread. Failures are ``UVError``s naming the code, the
/// operation and the address: `EADDRINUSE (address already in use) during bind on 127.0.0.1:514`.
///
/// ```swift
/// // An echo server: every datagram goes back to its sender.
/// UDP.bind(host: "127.0.0.1", port: 7070)
///     .flattenMap { d in d.reply(d.payload) }
///     .subscribe()
/// ```
public enum UDP {
    /// Opens a UDP socket bound to `host:port` and sends it once bound; it stays open while
    /// subscribed.
    ///
    /// The socket receives nothing until its ``UDPSocket/datagrams`` are subscribed, and
    /// sends with ``UDPSocket/send(_:to:)-([UInt8],_)``. Disposing closes it (`uv_close`, from any
    /// thread). The signal completes when the socket closes by itself (its send queue
    /// overflowed under ``BackpressurePolicy/disconnect``), and fails with a ``UVError``
    /// when the socket cannot be made or bound (`EADDRINUSE`, `EACCES`, `EADDRNOTAVAIL`, a
    /// name that does not resolve) or an option cannot be applied (joining a multicast group
    /// on a host without a multicast route: `ENODEV`).
    ///
    /// - Parameters:
    ///   - host: the local address; `0.0.0.0` or `::` for every interface.
    ///   - port: the local port; 0 lets the kernel choose (see ``UDPSocket/localAddress``).
    ///   - options: socket options, multicast groups, the send queue's limit and policy.
    ///   - requestedLoop: the loop the socket lives on; `nil` for the default (see ``UDP``).
    /// - Returns: a cold signal of one socket.
    public static func open(
        host: String = "127.0.0.1", port: Int = 0, options: UDPOptions = UDPOptions(), on requestedLoop: EventLoop? = nil
    ) -> Signal<UDPSocket> {
        AnonymousSignal { observer, lifetime in
            let loop = EventLoop.sourceLoop(requestedLoop)
            loop.start(observer, lifetime, operation: "bind", target: "\(host):\(port)") {
                let resolution = AddressResolution.resolve(host: host, port: port, on: loop) { result in
                    guard !lifetime.isDisposed else { return }
                    switch result {
                    case .failure(let error):
                        observer(.error(error))
                        lifetime.dispose()
                    case .success(let addresses):
                        deliver(observer, lifetime, on: loop) { try UDPSocket(loop: loop, address: addresses[0], options: options) }
                    }
                }
                if let resolution { lifetime.add(Disposable { loop.perform { resolution.stop() } }) }
            }
        }
    }

    /// Takes over a datagram socket made elsewhere and sends it once open; it stays open
    /// while subscribed.
    ///
    /// `fd` is an open `SOCK_DGRAM` socket of family `AF_INET`, `AF_INET6` or `AF_UNIX`,
    /// bound or not, connected or not (`uv_udp_open`): a socket a parent process passed
    /// down, one from a C library, or an end of `socketpair(AF_UNIX, SOCK_DGRAM)`. A
    /// connected one has a ``UDPSocket/peerAddress`` and sends to it with
    /// ``UDPSocket/send(_:)-([UInt8])``; its ``UDPSocket/datagrams`` all come from that
    /// peer. Unix addresses appear as ``SocketAddress/Family/unix``. Receiving, sending and
    /// the send queue's ``BackpressurePolicy`` work as for a socket from
    /// ``open(host:port:options:on:)``. (A Unix datagram socket pushes back for real: while
    /// its peer does not read, sends beyond the peer's queue get `EAGAIN` and wait in the
    /// send queue, which is how the tests drive every policy end to end.)
    ///
    /// **Ownership.** Once the signal sends the socket, the descriptor is the socket's:
    /// `fd` has been closed and the socket closes its own duplicate when it closes. If the
    /// open fails, `fd` is left open and unchanged, still the caller's.
    ///
    /// It completes when the socket closes by itself (see ``open(host:port:options:on:)``)
    /// and fails with a ``UVError`` naming `fd N`: `EBADF` for a closed descriptor,
    /// `ENOTSOCK` for one that is not a socket, `EINVAL` for a stream socket or when
    /// ``UDPOptions/reuseAddress`` or ``UDPOptions/ipv6Only`` is set (they apply when
    /// binding), `EAFNOSUPPORT` for another family, or the error of an option the socket
    /// cannot take (multicast on a Unix socket).
    ///
    /// - Parameters:
    ///   - fd: the descriptor to take over.
    ///   - options: socket options, multicast groups, the send queue's limit and policy
    ///     (``UDPOptions/receiveBatch`` is 1 for a Unix socket that is not connected).
    ///   - requestedLoop: the loop the socket lives on; `nil` for the default (see ``UDP``).
    /// - Returns: a cold signal of one socket. Subscribe it once: after a successful open
    ///   `fd` is closed and its number may already name another descriptor.
    public static func open(descriptor fd: Int32, options: UDPOptions = UDPOptions(), on requestedLoop: EventLoop? = nil) -> Signal<UDPSocket> {
        AnonymousSignal { observer, lifetime in
            let loop = EventLoop.sourceLoop(requestedLoop)
            loop.start(observer, lifetime, operation: "open descriptor", target: "fd \(fd)") {
                deliver(observer, lifetime, on: loop) { try UDPSocket(loop: loop, descriptor: fd, options: options) }
            }
        }
    }

    /// Makes the socket and sends it, closing it on disposal and completing when it closes
    /// by itself (loop thread).
    private static func deliver(
        _ observer: @escaping Sink<UDPSocket>, _ lifetime: CompoundDisposable, on loop: EventLoop, _ make: () throws -> UDPSocket
    ) {
        do {
            let socket = try make()
            lifetime.add(Disposable { loop.perform { socket.close() } })
            socket.whenClosed {
                guard !lifetime.isDisposed else { return }
                observer(.completed)
                lifetime.dispose()
            }
            if !lifetime.isDisposed { observer(.next(socket)) }
        } catch {
            observer(.error(error))
            lifetime.dispose()
        }
    }

    /// Binds `host:port` while subscribed and sends every datagram the socket receives.
    ///
    /// ``open(host:port:options:on:)`` followed by the socket's
    /// ``UDPSocket/datagrams``: each ``Datagram`` carries its payload, its sender and the
    /// socket, so replies go out from the bound port (``Datagram/reply(_:)``). Disposing
    /// stops receiving and closes the socket. It never completes on its own; it fails when
    /// binding fails, or when receiving fails for good.
    ///
    /// - Parameters:
    ///   - host: the local address.
    ///   - port: the local port; 0 lets the kernel choose (see `onBound`).
    ///   - options: socket options (see ``UDPOptions``).
    ///   - loop: the loop the socket lives on; `nil` for the default.
    ///   - onBound: called once on the loop's thread with the socket once bound (its
    ///     ``UDPSocket/localAddress`` holds the real port).
    /// - Returns: a cold signal of datagrams.
    public static func bind(
        host: String = "127.0.0.1", port: Int, options: UDPOptions = UDPOptions(), on loop: EventLoop? = nil,
        onBound: ((UDPSocket) -> Void)? = nil
    ) -> Signal<Datagram> {
        open(host: host, port: port, options: options, on: loop).flattenMap { socket -> Signal<Datagram> in
            onBound?(socket)
            return socket.datagrams
        }
    }
}

/// One datagram received by a ``UDPSocket``.
public struct Datagram: Sendable {
    /// The bytes, exactly as sent (UDP keeps message boundaries).
    public let payload: [UInt8]
    /// Who sent it.
    public let sender: SocketAddress
    /// The socket that received it (replies go out from its port).
    public let socket: UDPSocket

    /// Sends `bytes` back to ``sender`` from ``socket`` (see ``UDPSocket/send(_:to:)-([UInt8],_)``).
    ///
    /// - Parameter bytes: the reply.
    /// - Returns: a cold signal that completes once the datagram is handed to the kernel.
    public func reply(_ bytes: [UInt8]) -> Signal<Void> { socket.send(bytes, to: sender) }
}

/// How a UDP socket is set up (``UDP/open(host:port:options:on:)``).
public struct UDPOptions: Sendable {
    /// `SO_REUSEADDR`: several sockets may bind the same address and port (multicast
    /// receivers on one host).
    public var reuseAddress: Bool
    /// For `::`: receive IPv6 only (no IPv4-mapped addresses).
    public var ipv6Only: Bool
    /// `SO_BROADCAST`: allow sending to broadcast addresses.
    public var broadcast: Bool
    /// Multicast groups to join once bound (on the default interface).
    public var multicastGroups: [String]
    /// Whether our own multicast datagrams loop back to us (the kernel's default: yes).
    public var multicastLoopback: Bool?
    /// The multicast TTL (hops), 1–255; `nil` for the kernel's default (1).
    public var multicastTTL: Int?
    /// Receive up to this many datagrams per system call (`recvmmsg`, 1–20); each batch
    /// slot is a 64 KiB region of the socket's one receive buffer.
    public var receiveBatch: Int
    /// Bytes that may wait in the send queue before ``backpressure`` acts.
    public var highWaterMark: Int
    /// What happens to sends while the queue is at or above the mark (see
    /// ``UDPSocket/send(_:to:)-([UInt8],_)``).
    public var backpressure: BackpressurePolicy

    /// Creates options.
    ///
    /// - Parameters:
    ///   - reuseAddress: set `SO_REUSEADDR`.
    ///   - ipv6Only: IPv6 only on `::`.
    ///   - broadcast: set `SO_BROADCAST`.
    ///   - multicastGroups: groups to join once bound.
    ///   - multicastLoopback: loop our multicast back to us, or `nil` for the default.
    ///   - multicastTTL: multicast hops, or `nil` for the default.
    ///   - receiveBatch: datagrams per receive call (1–20; default 8).
    ///   - highWaterMark: the send queue's mark, in bytes (at least 1; default 1 MiB).
    ///   - backpressure: the policy past the mark.
    public init(
        reuseAddress: Bool = false, ipv6Only: Bool = false, broadcast: Bool = false,
        multicastGroups: [String] = [], multicastLoopback: Bool? = nil, multicastTTL: Int? = nil,
        receiveBatch: Int = 8, highWaterMark: Int = 1 << 20, backpressure: BackpressurePolicy = .pauseSource
    ) {
        self.reuseAddress = reuseAddress
        self.ipv6Only = ipv6Only
        self.broadcast = broadcast
        self.multicastGroups = multicastGroups
        self.multicastLoopback = multicastLoopback
        self.multicastTTL = multicastTTL
        self.receiveBatch = receiveBatch
        self.highWaterMark = highWaterMark
        self.backpressure = backpressure
    }
}

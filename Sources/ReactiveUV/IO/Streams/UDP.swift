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
                        do {
                            let socket = try UDPSocket(loop: loop, address: addresses[0], options: options)
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
                }
                if let resolution { lifetime.add(Disposable { loop.perform { resolution.stop() } }) }
            }
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

import CLibUV
import Glibc

/// A bound UDP socket on an event loop (from ``UDP/open(host:port:options:on:)`` or the
/// ``Datagram/socket`` of ``UDP/bind(host:port:options:on:onBound:)``), or a datagram
/// socket made elsewhere and handed over with ``UDP/open(descriptor:options:on:)``.
///
/// **Connected sockets.** A descriptor handed over already connected (`connect(2)`, or
/// an end of a `socketpair(AF_UNIX, SOCK_DGRAM)`) has a ``peerAddress``: it sends to its
/// peer with ``send(_:)-([UInt8])`` (no destination, as `send(2)`), and every datagram it
/// receives comes from that peer.
///
/// **Ownership.** The socket belongs to the subscription that opened it: disposing that
/// subscription closes it. It also closes when its send queue overflows under
/// ``BackpressurePolicy/disconnect`` (or past four times the mark under
/// ``BackpressurePolicy/pauseSource``), and on ``close()``.
///
/// **Threads.** Every member may be used from any thread; libuv calls hop to ``loop``'s
/// thread, where every event arrives.
///
/// **Receiving without allocating.** The socket has one receive buffer, allocated on the
/// first receive and handed to libuv again on every read (with ``UDPOptions/receiveBatch``
/// slots, so one `recvmmsg` call can fill several). The only allocation per datagram is the
/// payload array that is delivered; the sender's ``SocketAddress`` is reused while the same
/// peer keeps sending.
public final class UDPSocket: @unchecked Sendable, CustomStringConvertible {
    // Thread-safety: every stored `var` belongs to `loop`'s thread; the counters and limits
    // are atomics, readable and settable from any thread.

    /// The loop the socket lives on; its events arrive on this loop's thread.
    public let loop: EventLoop
    /// The address the socket is bound to (the real port when 0 was asked for).
    public let localAddress: SocketAddress
    /// The peer of a connected socket (see ``UDP/open(descriptor:options:on:)``); `nil`
    /// for a socket that sends to any address.
    public let peerAddress: SocketAddress?
    /// Whether the socket is a Unix datagram socket, whose unnamed senders arrive without
    /// an address (`AF_UNSPEC`).
    private let isUnix: Bool
    let handle: UVHandle<uv_udp_t>

    /// The one `datagrams` subscription, if any.
    private var receiver: (sink: Sink<Datagram>, lifetime: CompoundDisposable)?
    /// Whether `uv_udp_recv_start` is in effect.
    private var receiving = false
    /// Inside a `recvmmsg` batch: between its first chunk and its `UV_UDP_MMSG_FREE` call.
    /// `uv_udp_recv_stop` there would lose the rest of the batch (libuv stops calling back
    /// for datagrams the kernel has already handed over), so a pause waits for its end.
    private var insideBatch = false
    /// Receiving is paused until the send queue drains (``BackpressurePolicy/pauseSource``).
    private var pausedBySends = false
    /// The reusable receive buffer and its size.
    private var buffer: UnsafeMutableRawPointer?
    private let bufferSize: Int
    /// The last sender seen, as raw bytes and as the value delivered (reused while equal).
    private var lastSenderBytes = sockaddr_storage()
    private var lastSender: SocketAddress?
    /// Sends queued in libuv whose callback has not run.
    private var sendsInFlight = 0
    /// Called once the socket has closed.
    private var closeHandlers: [() -> Void] = []

    /// Bytes queued for sending above which ``backpressure`` acts (at least 1).
    public var highWaterMark: Int {
        get { mark.load() }
        set { mark.store(max(1, newValue)) }
    }
    /// What happens to sends while the queue is at or above ``highWaterMark``.
    public var backpressure: BackpressurePolicy {
        get { BackpressurePolicy(rawValue: policyRaw.load()) ?? .pauseSource }
        set { policyRaw.store(newValue.rawValue) }
    }
    /// Sends refused by ``BackpressurePolicy/dropAndCount``.
    public var droppedSends: Int { dropped.load() }
    /// Bytes of those sends.
    public var droppedBytes: Int { droppedByteCount.load() }
    /// Datagrams received and delivered.
    public var receivedDatagrams: Int { received.load() }
    /// Datagrams the kernel truncated because they were larger than a receive slot (64 KiB):
    /// counted and not delivered.
    public var truncatedDatagrams: Int { truncated.load() }
    /// Datagrams of ``send(_:)-(Signal<([UInt8],SocketAddress)>)`` that the kernel
    /// refused (`ECONNREFUSED` from an earlier ICMP, `EMSGSIZE`, `ENETUNREACH`): counted,
    /// and the send goes on.
    public var failedSends: Int { failed.load() }

    // Allocated by `init` only after everything that can throw: a failed init runs no
    // `deinit`, so cells allocated before the throw (as property initializers would be)
    // were never freed.
    private let mark: UnsafeAtomicInt
    private let policyRaw: UnsafeAtomicInt
    private let dropped: UnsafeAtomicInt
    private let droppedByteCount: UnsafeAtomicInt
    private let received: UnsafeAtomicInt
    private let truncated: UnsafeAtomicInt
    private let failed: UnsafeAtomicInt

    /// The size of one receive slot: the largest UDP payload.
    static let slotSize = 64 * 1024

    /// Creates, binds and configures the socket (loop thread).
    ///
    /// Everything that can fail happens before the object is made: a failure runs no
    /// `deinit`, so the handle is closed here (and freed by its close callback) and the
    /// atomic counters are allocated by the designated init, once nothing can throw.
    convenience init(loop: EventLoop, address: SocketAddress, options: UDPOptions) throws {
        let target = address.description
        let batch = min(max(options.receiveBatch, 1), 20)
        let family = address.family == .ipv6 ? AF_INET6 : AF_INET
        // recvmmsg is used by libuv when asked for at init and the buffer holds >1 slot.
        let flags = UInt32(family) | (batch > 1 ? UInt32(UV_UDP_RECVMMSG.rawValue) : 0)
        let handle = try UVHandle<uv_udp_t>(loop: loop, type: UV_UDP, operation: "uv_udp_init", target: target) {
            uv_udp_init_ex(loop.uvLoop, $0, flags)
        }
        let local: SocketAddress
        do {
            try handle.check(address.withSockaddr { uv_udp_bind(handle.pointer, $0, UDPSocket.bindFlags(options)) }, "bind")
            local = try UDPSocket.configure(handle, fallback: address, options: options)
        } catch {
            handle.close()
            throw error
        }
        self.init(loop: loop, handle: handle, local: local, peer: nil, isUnix: false, batch: batch, options: options)
    }

    /// Takes over `fd`, a datagram socket made elsewhere (loop thread); see
    /// ``UDP/open(descriptor:options:on:)`` for the rules.
    ///
    /// libuv gets a duplicate of `fd`, and `fd` itself is closed only once everything has
    /// succeeded: a failure leaves the caller's descriptor exactly as it was.
    convenience init(loop: EventLoop, descriptor fd: Int32, options: UDPOptions) throws {
        let target = "fd \(fd)"
        let operation = "open descriptor"
        func socketOption(_ name: Int32) throws -> Int32 {
            var value: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            if getsockopt(fd, SOL_SOCKET, name, &value, &length) != 0 {
                throw UVError(code: -errno, operation: operation, target: target)
            }
            return value
        }
        // libuv would take any descriptor; a stream socket or a file would fail later and
        // obscurely, so the kind is checked first (EBADF, ENOTSOCK from the kernel).
        guard try socketOption(SO_TYPE) == Int32(SOCK_DGRAM.rawValue) else {
            throw UVError(code: UV_EINVAL.rawValue, operation: "\(operation) (not a datagram socket)", target: target)
        }
        let domain = try socketOption(SO_DOMAIN)
        guard [AF_INET, AF_INET6, AF_UNIX].contains(domain) else {
            throw UVError(code: UV_EAFNOSUPPORT.rawValue, operation: operation, target: target)
        }
        if options.reuseAddress || options.ipv6Only {
            throw UVError(code: UV_EINVAL.rawValue, operation: "\(operation) (reuseAddress and ipv6Only apply when binding)", target: target)
        }
        let isUnix = domain == AF_UNIX
        var peerStorage = sockaddr_storage()
        var peerLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let connected = withUnsafeMutablePointer(to: &peerStorage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &peerLength) == 0 }
        }
        // An unconnected Unix socket receives with plain recvmsg: libuv's recvmmsg keeps a
        // sender's address in a sockaddr_in6-sized slot, too small for a socket path. A
        // connected one never reads the address (its sender is its peer).
        let batch = isUnix && !connected ? 1 : min(max(options.receiveBatch, 1), 20)
        let flags = UInt32(AF_UNSPEC) | (batch > 1 ? UInt32(UV_UDP_RECVMMSG.rawValue) : 0)
        let own = fcntl(fd, F_DUPFD_CLOEXEC, 0)
        if own < 0 { throw UVError(code: -errno, operation: "\(operation) (dup)", target: target) }
        let handle: UVHandle<uv_udp_t>
        do {
            handle = try UVHandle<uv_udp_t>(loop: loop, type: UV_UDP, operation: "uv_udp_init", target: target) {
                uv_udp_init_ex(loop.uvLoop, $0, flags)
            }
        } catch {
            Glibc.close(own)
            throw error
        }
        do {
            try handle.check(uv_udp_open(handle.pointer, own), operation)
        } catch {
            // libuv did not take it: ours to close.
            Glibc.close(own)
            handle.close()
            throw error
        }
        let local: SocketAddress
        do {
            local = try UDPSocket.configure(handle, fallback: isUnix ? .unnamedUnix : nil, options: options)
        } catch {
            handle.close()  // closes `own` too; `fd` is untouched
            throw error
        }
        let peer = SocketAddress.peer(ofUDP: handle.pointer, isUnix: isUnix)
        Glibc.close(fd)  // the socket owns the descriptor now (through its duplicate)
        self.init(loop: loop, handle: handle, local: local, peer: peer, isUnix: isUnix, batch: batch, options: options)
    }

    private init(
        loop: EventLoop, handle: UVHandle<uv_udp_t>, local: SocketAddress, peer: SocketAddress?, isUnix: Bool, batch: Int,
        options: UDPOptions
    ) {
        self.handle = handle
        self.loop = loop
        localAddress = local
        peerAddress = peer
        self.isUnix = isUnix
        bufferSize = batch * UDPSocket.slotSize
        mark = UnsafeAtomicInt(max(1, options.highWaterMark))
        policyRaw = UnsafeAtomicInt(options.backpressure.rawValue)
        dropped = UnsafeAtomicInt(0)
        droppedByteCount = UnsafeAtomicInt(0)
        received = UnsafeAtomicInt(0)
        truncated = UnsafeAtomicInt(0)
        failed = UnsafeAtomicInt(0)
        closedFlag = UnsafeAtomicInt(0)
        handle.owner = self
        handle.onLoopShutdown = { [unowned self] in receiver = nil }
    }

    /// `uv_udp_bind`'s flags for `options`.
    private static func bindFlags(_ options: UDPOptions) -> UInt32 {
        var flags: UInt32 = 0
        if options.reuseAddress { flags |= UInt32(UV_UDP_REUSEADDR.rawValue) }
        if options.ipv6Only { flags |= UInt32(UV_UDP_IPV6ONLY.rawValue) }
        return flags
    }

    /// Applies the options to a bound or opened socket; its local address (`fallback` when
    /// the kernel names none).
    private static func configure(_ handle: UVHandle<uv_udp_t>, fallback: SocketAddress?, options: UDPOptions) throws -> SocketAddress {
        let udp = handle.pointer
        if options.broadcast { try handle.check(uv_udp_set_broadcast(udp, 1), "set broadcast") }
        if let loopback = options.multicastLoopback {
            try handle.check(uv_udp_set_multicast_loop(udp, loopback ? 1 : 0), "set multicast loop")
        }
        if let ttl = options.multicastTTL { try handle.check(uv_udp_set_multicast_ttl(udp, Int32(ttl)), "set multicast ttl") }
        guard let local = SocketAddress.local(ofUDP: udp) ?? fallback else {
            throw UVError(code: UV_EINVAL.rawValue, operation: "getsockname", target: handle.target ?? "udp")
        }
        handle.target = local.description
        for group in options.multicastGroups {
            try UDPSocket.setMembership(udp, group: group, interface: nil, UV_JOIN_GROUP, target: local.description)
        }
        return local
    }

    deinit {
        buffer?.deallocate()
        mark.destroy()
        policyRaw.destroy()
        dropped.destroy()
        droppedByteCount.destroy()
        received.destroy()
        truncated.destroy()
        failed.destroy()
        closedFlag.destroy()
    }

    /// The bound address: `127.0.0.1:7070`.
    public var description: String { "udp \(localAddress)" }

    /// Whether the socket has started closing. Safe from any thread (a snapshot).
    public var isClosed: Bool { closedFlag.load() != 0 }
    private let closedFlag: UnsafeAtomicInt

    // MARK: - Receiving

    /// The datagrams the socket receives, while subscribed.
    ///
    /// Subscribing starts receiving (`uv_udp_recv_start`); disposing stops it
    /// (`uv_udp_recv_stop`) and leaves the socket open. One subscription at a time: another
    /// one fails with `EBUSY`. A receive error (`ECONNREFUSED` after an ICMP port
    /// unreachable, `ENOMEM`) fails the subscription with a ``UVError``; the socket stays
    /// open. When the socket closes the subscription completes. Truncated datagrams are
    /// counted in ``truncatedDatagrams`` and not delivered. Events arrive on ``loop``'s thread.
    public var datagrams: Signal<Datagram> {
        AnonymousSignal { [self] observer, lifetime in
            loop.start(observer, lifetime, operation: "receive", target: localAddress.description) { [self] in
                if handle.isClosing {
                    observer(.completed)
                    lifetime.dispose()
                    return
                }
                if receiver != nil {
                    observer(.error(UVError(code: UV_EBUSY.rawValue, operation: "receive (another subscription is receiving)", target: localAddress.description)))
                    lifetime.dispose()
                    return
                }
                receiver = (observer, lifetime)
                lifetime.add(Disposable { [self] in
                    loop.perform { [self] in
                        if let current = receiver, current.lifetime === lifetime { receiver = nil }
                        updateReceiving()
                    }
                })
                updateReceiving()
            }
        }
    }

    /// Starts or stops libuv's receiving to match: receive while open, subscribed and not
    /// paused by the send queue.
    private func updateReceiving() {
        guard !handle.isClosing else { return }
        let wanted = receiver != nil && !pausedBySends
        if wanted && !receiving {
            do {
                try handle.started(uv_udp_recv_start(handle.pointer, UDPSocket.allocCallback, UDPSocket.receiveCallback), "receive")
                receiving = true
            } catch {
                failReceiver(error)
            }
        } else if !wanted && receiving && !insideBatch {
            uv_udp_recv_stop(handle.pointer)
            receiving = false
        }
    }

    private func failReceiver(_ error: any Error) {
        guard let receiver else { return }
        self.receiver = nil
        if !receiver.lifetime.isDisposed { receiver.sink(.error(error)) }
        receiver.lifetime.dispose()
        updateReceiving()
    }

    private static let allocCallback: uv_alloc_cb = { handle, _, buf in
        guard let handle, let buf else { return }
        let socket = UVHandle<uv_udp_t>.owner(of: handle, as: UDPSocket.self)
        let memory: UnsafeMutableRawPointer
        if let existing = socket.buffer {
            memory = existing
        } else {
            memory = .allocate(byteCount: socket.bufferSize, alignment: 16)
            socket.buffer = memory
        }
        buf.pointee = uv_buf_init(memory.assumingMemoryBound(to: CChar.self), UInt32(socket.bufferSize))
    }

    private static let receiveCallback: uv_udp_recv_cb = { handle, count, buf, addr, flags in
        guard let handle else { return }
        UVHandle<uv_udp_t>.owner(of: handle, as: UDPSocket.self).didReceive(count, buf?.pointee.base, addr, flags)
    }

    private func didReceive(_ count: Int, _ base: UnsafeMutablePointer<CChar>?, _ addr: UnsafePointer<sockaddr>?, _ flags: UInt32) {
        // The buffer is ours to reuse: the UV_UDP_MMSG_FREE call (nothing to free) and the
        // "nothing more to read" call (no address) carry no datagram. The former ends a
        // batch: a pause asked for during it takes effect now.
        if flags & UInt32(UV_UDP_MMSG_FREE.rawValue) != 0 {
            insideBatch = false
            updateReceiving()
            return
        }
        if flags & UInt32(UV_UDP_MMSG_CHUNK.rawValue) != 0 { insideBatch = true }
        if count < 0 {
            failReceiver(UVError(code: Int32(count), operation: "receive", target: localAddress.description))
            return
        }
        guard let addr else { return }
        if flags & UInt32(UV_UDP_PARTIAL.rawValue) != 0 {
            truncated.fetchAdd(1)
            return
        }
        guard let receiver, !receiver.lifetime.isDisposed else { return }
        let payload = count > 0 && base != nil
            ? [UInt8](UnsafeRawBufferPointer(start: UnsafeRawPointer(base!), count: count)) : []
        guard let sender = sender(addr) else { return }
        received.fetchAdd(1)
        receiver.sink(.next(Datagram(payload: payload, sender: sender, socket: self)))
    }

    /// The sender as a value, reused while the same peer keeps sending (no allocation).
    ///
    /// A connected socket hears only its peer (the kernel filters the rest), so the peer
    /// is the sender; libuv's address is not read then (for an unnamed Unix peer it holds
    /// nothing). An unconnected Unix socket gets no address from a sender that never bound.
    private func sender(_ addr: UnsafePointer<sockaddr>) -> SocketAddress? {
        if let peerAddress { return peerAddress }
        let length: Int
        switch Int32(addr.pointee.sa_family) {
        case AF_INET6: length = MemoryLayout<sockaddr_in6>.size
        case AF_INET: length = MemoryLayout<sockaddr_in>.size
        case AF_UNIX: length = MemoryLayout<sockaddr_un>.size
        case AF_UNSPEC where isUnix: return .unnamedUnix
        default: return nil
        }
        let same = withUnsafeBytes(of: &lastSenderBytes) { memcmp($0.baseAddress!, addr, length) == 0 }
        if same, let lastSender { return lastSender }
        guard let address = SocketAddress(addr) else { return nil }
        withUnsafeMutableBytes(of: &lastSenderBytes) { raw in
            raw.copyMemory(from: UnsafeRawBufferPointer(start: UnsafeRawPointer(addr), count: length))
        }
        lastSender = address
        return address
    }

    // MARK: - Sending

    /// Sends one datagram of `bytes` to `address` when subscribed; completes once it is
    /// handed to the kernel.
    ///
    /// With nothing queued it goes out at once (`uv_udp_try_send`, no copy) and the signal
    /// completes during `subscribe`; otherwise it is copied into one `uv_udp_send` request
    /// and the signal completes in its callback. Sends from one thread go out in the order
    /// they are subscribed.
    ///
    /// Backpressure, against the bytes queued before the send: with
    /// ``BackpressurePolicy/dropAndCount`` a send refused because the queue is at the mark
    /// completes without sending and is counted (``droppedSends``); with
    /// ``BackpressurePolicy/disconnect`` it fails with ``WriteQueueFullError`` and the socket
    /// closes; with ``BackpressurePolicy/pauseSource`` the socket's own receiving pauses
    /// while the queue is above the mark (over IP the kernel then drops what peers send,
    /// which is UDP's flow control; over a Unix socket the peer's own sends meet `EAGAIN`),
    /// and past four times the mark the socket closes as with `disconnect`. The queue
    /// grows only when the kernel says `EAGAIN`: never on loopback UDP, for real on a Unix
    /// datagram socket whose peer does not read (see ``UDP/open(descriptor:options:on:)``).
    ///
    /// On a connected socket, `address` must be its ``peerAddress`` (the datagram goes out
    /// as with ``send(_:)-([UInt8])``, so ``Datagram/reply(_:)`` works there too); another
    /// address fails with `EISCONN`.
    ///
    /// Errors: a ``UVError`` (`EMSGSIZE` for more than 65,507 bytes over IPv4, `EACCES`
    /// for a broadcast address without ``UDPOptions/broadcast``, `ENETUNREACH`); these fail
    /// the send only. `EBADF` once the socket is closed.
    ///
    /// - Parameters:
    ///   - bytes: the payload (one datagram).
    ///   - address: the destination.
    /// - Returns: a cold signal that sends no value and completes on ``loop``'s thread.
    public func send(_ bytes: [UInt8], to address: SocketAddress) -> Signal<Void> {
        AnonymousSignal { [self] observer, lifetime in
            loop.start(observer, lifetime, operation: "send", target: address.description) { [self] in
                let waiter = UDPSendWaiter(observer, lifetime)
                if let error = enqueue(bytes, to: address, waiter) { waiter.finish(error) }
            }
        }
    }

    /// Sends one datagram of `bytes` to the peer of a connected socket (``peerAddress``)
    /// when subscribed; completes once it is handed to the kernel.
    ///
    /// `send(2)` without a destination (`uv_udp_send` with a `NULL` address), with
    /// everything else as in ``send(_:to:)-([UInt8],_)``: ordering, the send queue and its
    /// ``backpressure``. A socket that is not connected fails it with `EDESTADDRREQ`.
    ///
    /// - Parameter bytes: the payload (one datagram).
    /// - Returns: a cold signal that sends no value and completes on ``loop``'s thread.
    public func send(_ bytes: [UInt8]) -> Signal<Void> {
        AnonymousSignal { [self] observer, lifetime in
            loop.start(observer, lifetime, operation: "send", target: peerAddress?.description ?? localAddress.description) { [self] in
                let waiter = UDPSendWaiter(observer, lifetime)
                if let error = enqueue(bytes, to: nil, waiter) { waiter.finish(error) }
            }
        }
    }

    /// Sends the UTF-8 bytes of `text` to `address` (see ``send(_:to:)-([UInt8],_)``).
    ///
    /// - Parameters:
    ///   - text: the payload.
    ///   - address: the destination.
    /// - Returns: a cold signal that completes once the datagram is handed to the kernel.
    public func send(_ text: String, to address: SocketAddress) -> Signal<Void> { send(Array(text.utf8), to: address) }

    /// Sends every datagram `source` sends, in order; completes when `source` has
    /// completed and every datagram is handed to the kernel.
    ///
    /// The streaming form of ``send(_:to:)-([UInt8],_)``, without a subscription per
    /// datagram: an echo server is `socket.send(socket.datagrams.map { ($0.payload, $0.sender) })`.
    /// The source is subscribed on ``loop``'s thread; values it sends from another thread
    /// hop there in order. Backpressure as for single sends (``backpressure``; with
    /// ``BackpressurePolicy/pauseSource`` this socket's receiving pauses while the queue is
    /// above the mark). A datagram the kernel refuses (`ECONNREFUSED` left by an earlier
    /// ICMP, `EMSGSIZE`) is counted in ``failedSends`` and the send goes on: one peer's
    /// failure is not the stream's. It fails when the source fails, or when the socket
    /// closes (`EBADF`, ``WriteQueueFullError``). Disposing unsubscribes from the source.
    ///
    /// - Parameter source: the datagrams: payload and destination.
    /// - Returns: a cold signal that sends no value and terminates on ``loop``'s thread.
    public func send(_ source: Signal<(bytes: [UInt8], to: SocketAddress)>) -> Signal<Void> {
        AnonymousSignal { [self] observer, lifetime in
            loop.start(observer, lifetime, operation: "send", target: localAddress.description) { [self] in
                let sender = UDPStreamSender(socket: self, observer, lifetime)
                let loop = self.loop
                let part = lifetime.child()
                source.attach({ event in
                    let deliver = {
                        switch event {
                        case .next(let datagram): sender.offer(datagram.bytes, to: datagram.to)
                        case .error(let error): sender.sourceEnded(error)
                        case .completed: sender.sourceEnded(nil)
                        }
                    }
                    if loop.isCurrentThread {
                        deliver()
                    } else {
                        let hop = UncheckedSendable(deliver)
                        loop.execute { hop.value() }
                    }
                }, part)
            }
        }
    }

    /// A datagram of a streaming send failed: fatal only when the socket is gone.
    func sendFailed(_ error: any Error, closing: Bool, fatal: () -> Void) {
        if closing || error is WriteQueueFullError || (error as? UVError)?.code == UV_EBADF.rawValue {
            fatal()
        } else {
            failed.fetchAdd(1)
        }
    }

    /// Offers one datagram (loop thread); `nil` when sent or queued (the waiter hears of a
    /// queued one later), else why not (the waiter is not told). A `nil` address, or the
    /// peer's, sends to the connected peer.
    func enqueue(_ bytes: [UInt8], to requested: SocketAddress?, _ waiter: UDPSendWaiter) -> (any Error)?? {
        let address = requested == peerAddress ? nil : requested
        let target = (requested ?? peerAddress ?? localAddress).description
        if handle.isClosing {
            return .some(UVError(code: UV_EBADF.rawValue, operation: "send (socket closed)", target: target))
        }
        let udp = handle.pointer
        let queued = uv_udp_get_send_queue_size(udp)
        switch UDPSocket.decide(queued: queued, mark: mark.load(), policy: backpressure) {
        case .drop:
            dropped.fetchAdd(1)
            droppedByteCount.fetchAdd(bytes.count)
            return .some(nil)
        case .overflow(let limit):
            let error = WriteQueueFullError(queuedBytes: queued, limit: limit, policy: backpressure, target: localAddress.description)
            close()
            return .some(error)
        case .send:
            break
        }
        if queued == 0 && uv_udp_get_send_queue_count(udp) == 0 {
            let rc = bytes.withUnsafeBytes { raw -> Int32 in
                var buf = uv_buf_t(base: UnsafeMutablePointer(mutating: raw.baseAddress?.assumingMemoryBound(to: CChar.self)), len: raw.count)
                return UDPSocket.withDestination(address) { uv_udp_try_send(udp, &buf, 1, $0) }
            }
            if rc >= 0 { return .some(nil) }
            if rc != UV_EAGAIN.rawValue { return .some(UVError(code: rc, operation: "send", target: target)) }
        }
        let request = UVRequest<uv_udp_send_t>(UV_UDP_SEND, owner: waiter, extraBytes: bytes.count)
        bytes.withUnsafeBytes { raw in
            if let base = raw.baseAddress { request.extra.copyMemory(from: base, byteCount: raw.count) }
        }
        var buf = uv_buf_t(base: request.extra.assumingMemoryBound(to: CChar.self), len: bytes.count)
        do {
            try request.submit("send", target, on: loop) { req in
                UDPSocket.withDestination(address) { uv_udp_send(req, udp, &buf, 1, $0, UDPSocket.sendCallback) }
            }
        } catch {
            return .some(error)
        }
        sendsInFlight += 1
        if backpressure == .pauseSource && !pausedBySends && uv_udp_get_send_queue_size(udp) >= mark.load() {
            pausedBySends = true
            updateReceiving()
        }
        return nil
    }

    /// Calls `body` with the destination, or `NULL` for the connected peer.
    private static func withDestination<R>(_ address: SocketAddress?, _ body: (UnsafePointer<sockaddr>?) -> R) -> R {
        guard let address else { return body(nil) }
        return address.withSockaddr { body($0) }
    }

    private static let sendCallback: uv_udp_send_cb = { req, status in
        guard let req else { return }
        let request = UVRequest<uv_udp_send_t>.finish(req)
        let waiter = request.owner(as: UDPSendWaiter.self)
        let socket = UVHandle<uv_udp_t>.owner(of: req.pointee.handle!, as: UDPSocket.self)
        socket.sent(status, waiter)
    }

    private func sent(_ status: Int32, _ waiter: UDPSendWaiter) {
        sendsInFlight -= 1
        if status == UV_ECANCELED.rawValue {
            waiter.finish(UVError(code: status, operation: "send (socket closed)", target: localAddress.description))
        } else if status < 0 {
            waiter.finish(UVError(code: status, operation: "send", target: localAddress.description))
        } else {
            waiter.finish(nil)
        }
        if pausedBySends && !handle.isClosing && uv_udp_get_send_queue_size(handle.pointer) <= mark.load() / 2 {
            pausedBySends = false
            updateReceiving()
        }
    }

    /// What a send does with `queued` bytes waiting (see ``send(_:to:)``).
    enum SendDecision: Equatable {
        case send
        case drop
        case overflow(limit: Int)
    }

    /// The backpressure rule, shared with streams: checked against the bytes queued before
    /// the send, so a datagram is never split or partly dropped.
    static func decide(queued: Int, mark: Int, policy: BackpressurePolicy) -> SendDecision {
        switch policy {
        case .dropAndCount where queued >= mark: return .drop
        case .disconnect where queued >= mark: return .overflow(limit: mark)
        case .pauseSource where queued >= mark * 4: return .overflow(limit: mark * 4)
        default: return .send
        }
    }

    /// Whether receiving is paused by the send queue (tests).
    var isReceivingPausedBySends: Bool { pausedBySends }

    // MARK: - Multicast and broadcast

    /// Joins the multicast group `group` (`IP_ADD_MEMBERSHIP`), on `interface` (a local
    /// address) or the default one.
    ///
    /// - Parameters:
    ///   - group: a multicast address: `239.1.2.3`, `ff02::1:3`.
    ///   - interface: the local interface's address, or `nil`.
    /// - Returns: a cold signal that completes once joined, or fails with a ``UVError``
    ///   (`EINVAL` for an address that is not multicast, `ENODEV` without a multicast route).
    public func joinMulticastGroup(_ group: String, interface: String? = nil) -> Signal<Void> {
        membership(group, interface, UV_JOIN_GROUP, "join multicast group")
    }

    /// Leaves a multicast group joined with ``joinMulticastGroup(_:interface:)``.
    ///
    /// - Parameters:
    ///   - group: the group.
    ///   - interface: the interface it was joined on, or `nil`.
    /// - Returns: a cold signal that completes once left (`EADDRNOTAVAIL` if not joined).
    public func leaveMulticastGroup(_ group: String, interface: String? = nil) -> Signal<Void> {
        membership(group, interface, UV_LEAVE_GROUP, "leave multicast group")
    }

    /// Allows or forbids sending to broadcast addresses (`SO_BROADCAST`).
    ///
    /// - Parameter enabled: whether broadcast is allowed.
    /// - Returns: a cold signal that completes once set.
    public func setBroadcast(_ enabled: Bool) -> Signal<Void> {
        onLoop(operation: "set broadcast") { [self] in try handle.check(uv_udp_set_broadcast(handle.pointer, enabled ? 1 : 0), "set broadcast") }
    }

    private func membership(_ group: String, _ interface: String?, _ change: uv_membership, _ operation: String) -> Signal<Void> {
        onLoop(operation: operation) { [self] in
            try UDPSocket.setMembership(handle.pointer, group: group, interface: interface, change, target: localAddress.description)
        }
    }

    static func setMembership(
        _ udp: UnsafeMutablePointer<uv_udp_t>, group: String, interface: String?, _ change: uv_membership, target: String
    ) throws {
        let operation = change == UV_JOIN_GROUP ? "join multicast group \(group)" : "leave multicast group \(group)"
        if containsNUL(group) || (interface.map(containsNUL) ?? false) {
            throw UVError(code: UV_EINVAL.rawValue, operation: operation, target: target)
        }
        let rc = group.withCString { g in
            if let interface { return interface.withCString { uv_udp_set_membership(udp, g, $0, change) } }
            return uv_udp_set_membership(udp, g, nil, change)
        }
        try uvCheck(rc, operation, target)
    }

    /// A signal that runs `body` on the loop (completing) or fails with what it throws.
    private func onLoop(operation: String, _ body: @escaping () throws -> Void) -> Signal<Void> {
        AnonymousSignal { [self] observer, lifetime in
            loop.start(observer, lifetime, operation: operation, target: localAddress.description) { [self] in
                do {
                    if handle.isClosing { throw UVError(code: UV_EBADF.rawValue, operation: "\(operation) (socket closed)", target: localAddress.description) }
                    try body()
                    observer(.completed)
                } catch {
                    observer(.error(error))
                }
                lifetime.dispose()
            }
        }
    }

    // MARK: - Closing

    /// Closes the socket (`uv_close`), from any thread. Queued sends fail with `ECANCELED`;
    /// the ``datagrams`` subscription completes. Calling it again does nothing.
    public func close() {
        loop.perform { [self] in
            guard !handle.isClosing else { return }
            closedFlag.store(1)
            receiving = false
            if let receiver {
                self.receiver = nil
                if !receiver.lifetime.isDisposed { receiver.sink(.completed) }
                receiver.lifetime.dispose()
            }
            handle.close { [self] in
                let handlers = closeHandlers
                closeHandlers = []
                for handler in handlers { handler() }
            }
        }
    }

    /// Calls `handler` on the loop thread once the socket is closed (loop thread).
    func whenClosed(_ handler: @escaping () -> Void) {
        if handle.isClosed { handler() } else { closeHandlers.append(handler) }
    }
}

/// One `send` subscription waiting for its datagram (loop thread).
class UDPSendWaiter {
    let observer: Sink<Void>
    let lifetime: CompoundDisposable

    init(_ observer: @escaping Sink<Void>, _ lifetime: CompoundDisposable) {
        self.observer = observer
        self.lifetime = lifetime
    }

    func finish(_ error: (any Error)?) {
        guard !lifetime.isDisposed else { return }
        if let error { observer(.error(error)) } else { observer(.completed) }
        lifetime.dispose()
    }
}

/// One `send(_ source:)` subscription: sends each datagram its source sends and completes
/// when the source has completed and every queued datagram went out (loop thread).
final class UDPStreamSender: UDPSendWaiter {
    let socket: UDPSocket
    /// Queued datagrams whose callback has not run.
    var outstanding = 0
    var sourceCompleted = false
    var finished = false

    init(socket: UDPSocket, _ observer: @escaping Sink<Void>, _ lifetime: CompoundDisposable) {
        self.socket = socket
        super.init(observer, lifetime)
    }

    /// One datagram from the source (loop thread).
    func offer(_ bytes: [UInt8], to address: SocketAddress) {
        if finished { return }
        switch socket.enqueue(bytes, to: address, self) {
        case nil: outstanding += 1
        case .some(nil): break
        case .some(let error?): socket.sendFailed(error, closing: socket.isClosed) { end(.error(error)) }
        }
    }

    func sourceEnded(_ error: (any Error)?) {
        if let error { return end(.error(error)) }
        sourceCompleted = true
        if outstanding == 0 { end(.completed) }
    }

    /// A queued datagram went out, or failed.
    override func finish(_ error: (any Error)?) {
        outstanding -= 1
        if let error { socket.sendFailed(error, closing: socket.isClosed) { end(.error(error)) } }
        if sourceCompleted && outstanding == 0 { end(.completed) }
    }

    private func end(_ event: Event<Void>) {
        guard !finished else { return }
        finished = true
        if !lifetime.isDisposed { observer(event) }
        lifetime.dispose()
    }
}

extension SocketAddress {
    /// The local address of a bound UDP handle.
    static func local(ofUDP udp: UnsafeMutablePointer<uv_udp_t>) -> SocketAddress? {
        var storage = sockaddr_storage()
        var length = Int32(MemoryLayout<sockaddr_storage>.size)
        return withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                uv_udp_getsockname(udp, sa, &length) == 0 ? SocketAddress(UnsafePointer(sa), length: Int(length)) : nil
            }
        }
    }

    /// The peer of a connected UDP handle, or `nil` when it is not connected. An unnamed
    /// Unix peer may be reported with no address at all: it is still a peer.
    static func peer(ofUDP udp: UnsafeMutablePointer<uv_udp_t>, isUnix: Bool) -> SocketAddress? {
        var storage = sockaddr_storage()
        var length = Int32(MemoryLayout<sockaddr_storage>.size)
        return withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                guard uv_udp_getpeername(udp, sa, &length) == 0 else { return nil }
                if isUnix && (length <= MemoryLayout<sa_family_t>.size || Int32(sa.pointee.sa_family) == AF_UNSPEC) {
                    return .unnamedUnix
                }
                return SocketAddress(UnsafePointer(sa), length: Int(length))
            }
        }
    }
}

import CLibUV

/// A TCP connection on an event loop, from ``TCP/connect(host:port:options:on:)`` or
/// ``TCP/listen(host:port:backlog:options:on:onListening:)``.
///
/// Reading, writing, half-closing and backpressure are ``StreamConnection``'s (see there
/// for ownership and threads); this adds the addresses and TCP's socket options.
///
/// ```swift
/// TCP.connect(host: "127.0.0.1", port: 7070)
///     .flattenMap { c in c.write("hello\n").then { c.lines.take(1) } }
///     .subscribeNext { print("reply:", $0) }
/// ```
public final class TCPConnection: StreamConnection, @unchecked Sendable {
    // Thread-safety: the addresses are immutable; options are applied on the loop.

    /// Our end of the connection (`uv_tcp_getsockname`), read when it was established.
    public let localAddress: SocketAddress?
    /// The peer's end (`uv_tcp_getpeername`), read when it was established.
    public let remoteAddress: SocketAddress?

    /// Wraps an established connection and applies `options` (loop thread).
    init(stream: UVStream, options: TCPOptions) {
        let tcp: UnsafeMutablePointer<uv_tcp_t> = uvCast(stream.handle)
        localAddress = SocketAddress.local(of: tcp)
        remoteAddress = SocketAddress.peer(of: tcp)
        if let remoteAddress { stream.target = remoteAddress.description }
        super.init(stream: stream)
        // Both only fail on a socket that is already gone: the connection then closes with
        // that error, which its reads and writes report.
        if options.noDelay { TCPConnection.apply(stream, "uv_tcp_nodelay") { uv_tcp_nodelay(tcp, 1) } }
        if let delay = options.keepAlive {
            TCPConnection.apply(stream, "uv_tcp_keepalive") { uv_tcp_keepalive(tcp, 1, UInt32(clamping: max(1, delay))) }
        }
    }

    /// Runs a socket option call on an open stream; a failure closes the stream with it.
    static func apply(_ stream: UVStream, _ operation: String, _ call: () -> Int32) {
        guard stream.state == .open else { return }
        do { try stream.uv.check(call(), operation) } catch { stream.close(error) }
    }

    /// Turns Nagle's algorithm off (`TCP_NODELAY`, `enabled` true) or on again.
    ///
    /// Small writes then leave at once instead of waiting to be coalesced: lower latency
    /// for request/response traffic, more packets for bulk transfer. Runs on ``loop``'s
    /// thread (from another thread it is queued there). It can only fail once the
    /// connection is closed, and then does nothing.
    ///
    /// - Parameter enabled: whether `TCP_NODELAY` is set.
    public func setNoDelay(_ enabled: Bool) {
        let stream = self.stream
        stream.loop.perform {
            TCPConnection.apply(stream, "uv_tcp_nodelay") { uv_tcp_nodelay(uvCast(stream.handle), enabled ? 1 : 0) }
        }
    }

    /// Turns TCP keep-alive probes on (`SO_KEEPALIVE`) after `delay` idle seconds, or off.
    ///
    /// Keep-alive finds peers that vanished without closing (a cable pulled): the
    /// connection's reads then fail with `ETIMEDOUT`. Runs on ``loop``'s thread; does
    /// nothing once the connection is closed.
    ///
    /// - Parameters:
    ///   - enabled: whether probes are sent.
    ///   - delay: idle seconds before the first probe (at least 1).
    public func setKeepAlive(_ enabled: Bool, delay: Int = 60) {
        let stream = self.stream
        stream.loop.perform {
            TCPConnection.apply(stream, "uv_tcp_keepalive") {
                uv_tcp_keepalive(uvCast(stream.handle), enabled ? 1 : 0, UInt32(clamping: max(1, delay)))
            }
        }
    }

    /// Closes the connection abortively: the peer gets a reset (`RST`, `SO_LINGER` 0,
    /// `uv_tcp_close_reset`) instead of an orderly end, and its reads and writes fail with
    /// `ECONNRESET` (or `EPIPE`). Queued bytes are discarded. From any thread.
    ///
    /// After ``shutdown()`` has started libuv cannot reset, so this is a plain ``close()``.
    public func reset() {
        let stream = self.stream
        stream.loop.perform { stream.close(nil, reset: true) }
    }
}

/// Options for TCP connections made by ``TCP/connect(host:port:options:on:)`` or accepted
/// by ``TCP/listen(host:port:backlog:options:on:onListening:)``.
public struct TCPOptions: Sendable {
    /// Set `TCP_NODELAY` (see ``TCPConnection/setNoDelay(_:)``). Default `false`, the
    /// kernel's default.
    public var noDelay: Bool
    /// Seconds of idleness before keep-alive probes, or `nil` for none (the default; see
    /// ``TCPConnection/setKeepAlive(_:delay:)``).
    public var keepAlive: Int?
    /// Bytes the write queue may hold before ``backpressure`` acts; default 1 MiB.
    public var highWaterMark: Int
    /// What a full write queue does; default ``BackpressurePolicy/pauseSource``.
    public var backpressure: BackpressurePolicy

    /// Creates options.
    ///
    /// - Parameters:
    ///   - noDelay: set `TCP_NODELAY`.
    ///   - keepAlive: idle seconds before keep-alive probes, or `nil`.
    ///   - highWaterMark: the write queue's high-water mark, in bytes (at least 1).
    ///   - backpressure: the policy past the mark.
    public init(
        noDelay: Bool = false, keepAlive: Int? = nil,
        highWaterMark: Int = 1 << 20, backpressure: BackpressurePolicy = .pauseSource
    ) {
        self.noDelay = noDelay
        self.keepAlive = keepAlive
        self.highWaterMark = highWaterMark
        self.backpressure = backpressure
    }

    var limits: WriteLimits { WriteLimits(highWaterMark: highWaterMark, policy: backpressure) }
}

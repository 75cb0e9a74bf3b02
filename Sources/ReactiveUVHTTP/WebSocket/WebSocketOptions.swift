/// How a WebSocket connection behaves: limits, fragmentation, keep-alive pings, timeouts,
/// subprotocols and compression. The same options serve servers and clients.
public struct WebSocketOptions: Sendable {
    /// The largest message accepted, in bytes after decompression (default 1 MiB, as
    /// Python's `websockets`: raise it for applications that send more).
    ///
    /// A frame header announcing more than is left is refused with 1009 before its payload
    /// is read, so at most this much (plus one frame's header) is ever buffered per message.
    public var maxMessageSize: Int
    /// Sent messages are split into frames of at most this many payload bytes; `nil` sends
    /// each message as one frame (default).
    public var fragmentSize: Int?
    /// Seconds between the pings we send; `nil` sends none (default).
    public var pingInterval: Double?
    /// Seconds a ping may wait for its pong before the peer is declared dead, the
    /// connection closed (1006) and ``WebSocketError/peerTimedOut`` reported (default 20).
    public var pingTimeout: Double
    /// Seconds to wait for the peer's close frame after sending ours, before closing the
    /// transport anyway (default 5).
    public var closeTimeout: Double
    /// Seconds a client waits for the server's `101` (default 10).
    public var handshakeTimeout: Double
    /// Subprotocols: a server picks the first the client offers that is in this list; a
    /// client offers them in this order (`Sec-WebSocket-Protocol`).
    public var subprotocols: [String]
    /// permessage-deflate (RFC 7692): `nil` turns compression off.
    public var compression: WebSocketCompression?

    /// Options with the defaults above; compression on with its defaults.
    ///
    /// - Parameters:
    ///   - maxMessageSize: the largest message accepted, inflated.
    ///   - fragmentSize: the largest frame payload sent, or `nil` for one frame a message.
    ///   - pingInterval: seconds between pings, or `nil` for none.
    ///   - pingTimeout: seconds a ping may wait for its pong.
    ///   - closeTimeout: seconds to wait for the peer's close frame.
    ///   - handshakeTimeout: seconds a client waits for the `101`.
    ///   - subprotocols: the subprotocols spoken, in preference order.
    ///   - compression: permessage-deflate settings, or `nil` to neither offer nor accept it.
    public init(
        maxMessageSize: Int = 1 << 20, fragmentSize: Int? = nil, pingInterval: Double? = nil,
        pingTimeout: Double = 20, closeTimeout: Double = 5, handshakeTimeout: Double = 10,
        subprotocols: [String] = [], compression: WebSocketCompression? = WebSocketCompression()
    ) {
        self.maxMessageSize = max(0, maxMessageSize)
        self.fragmentSize = fragmentSize.map { max(1, $0) }
        self.pingInterval = pingInterval
        self.pingTimeout = pingTimeout
        self.closeTimeout = closeTimeout
        self.handshakeTimeout = handshakeTimeout
        self.subprotocols = subprotocols
        self.compression = compression
    }
}

/// permessage-deflate settings (RFC 7692): what we offer as a client and accept as a server.
///
/// Memory per connection, from zlib's own formulas: our compressor takes
/// `2^(windowBits+2) + 2^(memoryLevel+9)` bytes (256 KiB at the defaults 15 and 8; 16 KiB
/// at 11 and 4), the decompressor `2^windowBits` plus about 7 KiB (39 KiB at 15). Both are
/// made once per connection, on first use, and kept while context takeover is on.
public struct WebSocketCompression: Sendable, Equatable {
    /// Our compressor's window, 9–15 bits (zlib cannot make raw streams with 8): a server
    /// offering a smaller `server_max_window_bits` than 9 is declined.
    public var windowBits: Int
    /// zlib's `memLevel`, 1–9: memory for the compressor's hash table.
    public var memoryLevel: Int
    /// zlib's compression level, 0–9 (default 1: speed first, as most servers choose).
    public var level: Int
    /// Ask the peer to reset its compressor after each message (`*_no_context_takeover` for
    /// the peer's direction): less memory for them, worse compression.
    public var peerNoContextTakeover: Bool
    /// Reset our own compressor after each message, and say so.
    public var noContextTakeover: Bool
    /// Messages shorter than this are sent uncompressed (deflate does not pay for them).
    public var minimumSize: Int

    /// Compression with the given settings.
    ///
    /// - Parameters:
    ///   - windowBits: our compressor's window, 9–15.
    ///   - memoryLevel: zlib's memLevel, 1–9.
    ///   - level: zlib's level, 0–9.
    ///   - peerNoContextTakeover: ask the peer not to keep context between messages.
    ///   - noContextTakeover: keep no context ourselves.
    ///   - minimumSize: the smallest message worth compressing, in bytes.
    public init(
        windowBits: Int = 15, memoryLevel: Int = 8, level: Int = 1, peerNoContextTakeover: Bool = false,
        noContextTakeover: Bool = false, minimumSize: Int = 32
    ) {
        self.windowBits = min(15, max(9, windowBits))
        self.memoryLevel = min(9, max(1, memoryLevel))
        self.level = min(9, max(0, level))
        self.peerNoContextTakeover = peerNoContextTakeover
        self.noContextTakeover = noContextTakeover
        self.minimumSize = max(0, minimumSize)
    }
}

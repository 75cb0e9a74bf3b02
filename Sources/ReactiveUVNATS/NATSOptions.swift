/// How a NATS connection connects, reconnects and secures itself.
///
/// The defaults suit a daemon: reconnect forever with a short wait once connected. The
/// first connect fails at once when no server is reachable; a program that starts before
/// its servers retries the connect signal itself (cnats's own "retry on failed connect"
/// is not offered: with the libuv adapter its background connect blocks on the loop and
/// deadlocks a close, as measured here).
public struct NATSOptions: Sendable {
    /// The client name the servers show (`connz`).
    public var name: String?
    /// How long one connect attempt (TCP, TLS and the INFO/CONNECT handshake) may take, in
    /// seconds; cnats (3.4) uses it for reconnect attempts too.
    ///
    /// Why not shorter, although a reconnect after a partition waits on it: an attempt whose
    /// first SYN was dropped sends its next one after the kernel's 1 s initial
    /// retransmission timeout, so only a timeout under 1 s would try more often, and that
    /// is too short for TLS over a slow link (TCP, INFO, the TLS handshake and
    /// CONNECT/PING/PONG take 4–5 round trips: 0.8–1 s at 200 ms).
    public var connectTimeout: Double = 2
    /// Wait between reconnect attempts to the same server, in seconds: cnats tries the
    /// servers in turn, and after each round pauses for what is left of this wait since the
    /// round began, plus a random jitter of up to 0.1 s (1 s with TLS) — no pause at all when
    /// the round itself took longer (attempts that ran into ``connectTimeout``, as against a
    /// partition that drops packets), so a healed partition is found by the next attempt.
    public var reconnectWait: Double = 0.25
    /// Reconnect attempts per server before the connection closes for good; -1 for no limit.
    public var maxReconnects: Int = -1
    /// Bytes cnats buffers while reconnecting (publishes beyond it fail at once).
    public var reconnectBufferBytes: Int = 8 * 1024 * 1024
    /// How often the client pings the server, in seconds (dead peers are found this way).
    public var pingInterval: Double = 2
    /// TLS settings; a `tls://` URL turns TLS on even without them (then the system's
    /// trust store verifies the server).
    public var tls: NATSTLSOptions?
    /// How the client authenticates to servers that ask (nats-server `authorization`,
    /// decentralized JWT auth); `nil`: it does not.
    public var credentials: NATSCredentials?

    /// The defaults.
    public init() {}
}

/// TLS for a NATS connection (cnats with OpenSSL).
public struct NATSTLSOptions: Sendable {
    /// A PEM file of certificate authorities to trust (instead of the system's).
    public var caFile: String?
    /// The client's certificate chain and key (PEM files), for servers that verify clients.
    public var certificateFile: String?
    /// The client's private key (PEM file).
    public var keyFile: String?
    /// The host name the server's certificate must carry, when it differs from the URL's.
    public var expectedHostname: String?

    /// TLS with the given files (all optional).
    public init(caFile: String? = nil, certificateFile: String? = nil, keyFile: String? = nil, expectedHostname: String? = nil) {
        self.caFile = caFile
        self.certificateFile = certificateFile
        self.keyFile = keyFile
        self.expectedHostname = expectedHostname
    }
}

/// What happens to a NATS connection after it was established, on its loop's thread.
public enum NATSConnectionEvent: Sendable, Equatable {
    /// The connection to the server was lost; cnats is reconnecting.
    case disconnected
    /// Reconnected, to the server at this URL.
    case reconnected(String)
    /// The connection is closed for good (disposed, or out of reconnect attempts).
    case closed
    /// An asynchronous error cnats reported (a slow consumer, a permissions violation).
    case error(NATSError)
}

/// How a NATS client proves who it is to the servers.
public enum NATSCredentials: Sendable, Equatable {
    /// A credentials file holding the user's JWT and NKey seed (`nsc` makes them); cnats's
    /// `natsOptions_SetUserCredentialsFromFiles`. The file is read at every (re)connect.
    case credentialsFile(String)
    /// A user name and password.
    case userPassword(user: String, password: String)
    /// An authentication token.
    case token(String)
}

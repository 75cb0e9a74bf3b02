/// Which server certificates a TLS client accepts (``TLS/connect(host:port:serverName:trust:options:handshakeTimeout:on:)``).
///
/// Whatever the trust, the certificate must also be valid now and issued for the server
/// name asked for (unless ``insecureAcceptAnything``).
public enum TLSTrust: Sendable, Equatable {
    /// The system's authorities (Debian: `/etc/ssl/certs`, package `ca-certificates`).
    case system
    /// The authorities in one PEM file (a private CA; may hold several certificates).
    case certificateAuthorities(path: String)
    /// No verification at all: any certificate, any name. For tests against throwaway
    /// servers only; the connection is encrypted but not authenticated.
    case insecureAcceptAnything
}

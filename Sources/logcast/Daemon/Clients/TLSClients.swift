import Logging
import ReactiveUV
import ReactiveUVTLS

// `--tls-cert` / `--tls-key`: clients are served over TLS (OpenSSL through ReactiveUVTLS)
// instead of plain TCP, on the same --listen address and with the same line protocol.

/// A TLS connection is a client transport as it is: plaintext reads, writes, shutdown
/// (close_notify, then FIN) and close.
extension TLSConnection: ClientTransport {}

/// TLS counters shown by `STATS` (main loop only).
final class TLSStats: @unchecked Sendable {
    // Thread-safety: main loop only.
    /// Clients whose handshake failed (plain text, a rejected certificate, silence).
    var handshakeFailures = 0

    /// ` tls_handshake_failures=…`.
    var fields: String { " tls_handshake_failures=\(handshakeFailures)" }
}

extension LogcastServer {
    /// Listens for TLS clients on the configured address and serves each one once its
    /// handshake finished; failed handshakes are counted, logged and closed.
    ///
    /// - Parameters:
    ///   - certificate: the PEM certificate chain.
    ///   - key: the PEM private key.
    ///   - clientCA: when given, clients must present a certificate this CA file's CAs
    ///     issued (refused in the handshake otherwise); its subject is their identity.
    ///   - tlsStats: where failed handshakes are counted.
    ///   - onListening: the bound address.
    /// - Returns: the listening subscription.
    func listenTLS(
        certificate: String, key: String, clientCA: String?, tlsStats: TLSStats, onListening: @escaping (SocketAddress) -> Void
    ) -> Disposable {
        TLS.listen(
            host: config.host, port: config.port, certificate: certificate, key: key,
            clientCertificateAuthorities: clientCA, onListening: onListening,
            onHandshakeError: { [logger] error in
                tlsStats.handshakeFailures += 1
                logger.info("TLS client refused: \(error)")
            }
        )
        .subscribe(
            next: { [weak self] connection in
                // Verified in the handshake: its subject is who the client is.
                let identity = clientCA == nil ? nil : connection.peerSubject.map { (name: "cert:" + $0, how: "TLS client certificate") }
                self?.accept(connection, identity: identity)
            },
            error: { [weak self] error in
                guard let self else { return }
                self.fail("cannot serve TLS on \(self.config.host):\(self.config.port): \(error)")
            })
    }
}

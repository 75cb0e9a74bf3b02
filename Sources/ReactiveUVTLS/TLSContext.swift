import COpenSSL
import ReactiveUV

/// An OpenSSL `SSL_CTX`: the configuration shared by the connections of one `TLS.listen`
/// or `TLS.connect` subscription (certificate and key, or the trusted authorities).
///
/// Built once per subscription, so a bad certificate, key or CA file fails the
/// subscription at once with a ``TLSError/Kind/configuration`` error naming the file.
final class TLSContext: @unchecked Sendable {
    // Thread-safety: configured in `init` and read-only afterwards; OpenSSL allows an
    // `SSL_CTX` to be shared by connections on any thread once configured.
    let pointer: OpaquePointer
    let isServer: Bool
    let verifies: Bool

    private init(server: Bool) throws {
        guard let ctx = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method()) else {
            throw TLSError.fromQueue(.configuration, fallback: "SSL_CTX_new failed", operation: "TLS setup", target: nil)
        }
        pointer = ctx
        isServer = server
        verifies = false
        _ = ruvtls_ctx_require_tls12(ctx)
        _ = ruvtls_ctx_set_modes(ctx)
    }

    private init(client: TLSTrust) throws {
        guard let ctx = SSL_CTX_new(TLS_client_method()) else {
            throw TLSError.fromQueue(.configuration, fallback: "SSL_CTX_new failed", operation: "TLS setup", target: nil)
        }
        pointer = ctx
        isServer = false
        _ = ruvtls_ctx_require_tls12(ctx)
        _ = ruvtls_ctx_set_modes(ctx)
        switch client {
        case .system:
            verifies = true
            if SSL_CTX_set_default_verify_paths(ctx) != 1 {
                throw TLSError.fromQueue(.configuration, fallback: "cannot load the system's certificate authorities",
                                         operation: "load trust store", target: nil)
            }
        case .certificateAuthorities(let path):
            verifies = true
            if SSL_CTX_load_verify_locations(ctx, path, nil) != 1 {
                throw TLSError.fromQueue(.configuration, fallback: "cannot load certificate authorities",
                                         operation: "load certificate authorities", target: path)
            }
        case .insecureAcceptAnything:
            verifies = false
        }
        SSL_CTX_set_verify(ctx, verifies ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, nil)
    }

    deinit { SSL_CTX_free(pointer) }

    /// A server context presenting the certificate chain in `certificate` (PEM, leaf first)
    /// with the private key in `key` (PEM).
    ///
    /// With `clientCertificateAuthorities` (a PEM file of CAs), every client must present
    /// a certificate issued by one of them (`SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT`):
    /// a client without one, or with one the CAs did not issue, fails its handshake.
    ///
    /// - Throws: ``TLSError`` (`.configuration`) naming the file that failed, or saying
    ///   that the key does not match the certificate.
    static func server(certificate: String, key: String, clientCertificateAuthorities: String? = nil) throws -> TLSContext {
        ERR_clear_error()
        let context = try TLSContext(server: true)
        let ctx = context.pointer
        if SSL_CTX_use_certificate_chain_file(ctx, certificate) != 1 {
            throw TLSError.fromQueue(.configuration, fallback: "cannot load the certificate",
                                     operation: "load certificate", target: certificate)
        }
        if SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1 {
            throw TLSError.fromQueue(.configuration, fallback: "cannot load the private key",
                                     operation: "load private key", target: key)
        }
        if SSL_CTX_check_private_key(ctx) != 1 {
            throw TLSError.fromQueue(.configuration, fallback: "the private key does not match the certificate",
                                     operation: "check private key", target: key)
        }
        if let authorities = clientCertificateAuthorities {
            if SSL_CTX_load_verify_locations(ctx, authorities, nil) != 1 {
                throw TLSError.fromQueue(.configuration, fallback: "cannot load client certificate authorities",
                                         operation: "load client certificate authorities", target: authorities)
            }
            // The names clients are told to pick a certificate by (CertificateRequest).
            if let names = SSL_load_client_CA_file(authorities) { SSL_CTX_set_client_CA_list(ctx, names) }
            SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nil)
        }
        return context
    }

    /// A client context trusting `trust`.
    static func client(trust: TLSTrust) throws -> TLSContext {
        ERR_clear_error()
        return try TLSContext(client: trust)
    }
}

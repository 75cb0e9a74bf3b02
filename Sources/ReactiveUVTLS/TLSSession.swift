import COpenSSL
import Glibc
import ReactiveUV

/// One TLS connection's OpenSSL state: an `SSL` between two memory BIOs.
///
/// Why memory BIOs: libuv owns the socket and does the IO. The peer's ciphertext, as the
/// TCP connection reads it, is written into `incoming`; OpenSSL reads it from there, and
/// what OpenSSL writes (handshake messages, records, alerts) collects in `outgoing`, which
/// ``takeOutput()`` hands to the TCP connection's writes. OpenSSL never touches a
/// descriptor, so it never blocks and never competes with the loop.
///
/// Loop-thread confined: every call happens on the connection's loop thread (OpenSSL's
/// error queue is per thread, which also keeps the errors read after a call its own).
final class TLSSession: @unchecked Sendable {
    // Thread-safety: loop thread only (see above).
    let ssl: OpaquePointer
    /// The peer's ciphertext, waiting for OpenSSL (owned by `ssl`).
    let incoming: OpaquePointer
    /// OpenSSL's output, waiting for the socket (owned by `ssl`).
    let outgoing: OpaquePointer
    let context: TLSContext
    /// What errors name: `TLS connect` or `TLS accept`.
    let operation: String
    var target: String
    /// Whether any ciphertext arrived yet (the first byte tells a TLS peer from a plain one).
    var sawPeerBytes = false
    /// Set after a fatal error: nothing more may be done with `ssl`.
    var failed = false
    /// The peer sent close_notify.
    var peerClosed = false
    /// We sent close_notify.
    var sentClose = false
    /// Reused by every decryption (a TLS record holds at most 16 KiB of plaintext).
    private let readBuffer = UnsafeMutableRawPointer.allocate(byteCount: TLSSession.readBufferSize, alignment: 16)

    static let readBufferSize = 16 * 1024

    /// - Parameters:
    ///   - serverName: for a client, the name sent as SNI and required in the server's
    ///     certificate (an IP address is matched against the certificate's IP entries).
    init(context: TLSContext, serverName: String?, target: String) throws {
        self.context = context
        self.target = target
        operation = context.isServer ? "TLS accept" : "TLS connect"
        ERR_clear_error()
        guard let ssl = SSL_new(context.pointer) else {
            readBuffer.deallocate()
            throw TLSError.fromQueue(.configuration, fallback: "SSL_new failed", operation: "TLS setup", target: target)
        }
        guard let incoming = BIO_new(BIO_s_mem()), let outgoing = BIO_new(BIO_s_mem()) else {
            SSL_free(ssl)
            readBuffer.deallocate()
            throw TLSError.fromQueue(.configuration, fallback: "BIO_new failed", operation: "TLS setup", target: target)
        }
        _ = ruvtls_bio_retry_when_empty(incoming)
        _ = ruvtls_bio_retry_when_empty(outgoing)
        SSL_set_bio(ssl, incoming, outgoing)  // ssl owns both from here
        self.ssl = ssl
        self.incoming = incoming
        self.outgoing = outgoing
        if context.isServer {
            SSL_set_accept_state(ssl)
        } else {
            SSL_set_connect_state(ssl)
            if let serverName, !serverName.isEmpty {
                let bare = serverName.hasPrefix("[") && serverName.hasSuffix("]")
                    ? String(serverName.dropFirst().dropLast()) : serverName
                let isIP = bare.contains(":") || bare.allSatisfy { $0.isNumber || $0 == "." }
                if !isIP {
                    _ = ruvtls_set_server_name(ssl, bare)  // SNI carries names only
                }
                if context.verifies {
                    let param = SSL_get0_param(ssl)
                    let ok = isIP ? X509_VERIFY_PARAM_set1_ip_asc(param, bare) : X509_VERIFY_PARAM_set1_host(param, bare, 0)
                    if ok != 1 {
                        SSL_free(ssl)
                        readBuffer.deallocate()
                        throw TLSError.fromQueue(.configuration, fallback: "not a usable server name",
                                                 operation: "TLS setup", target: serverName)
                    }
                }
            }
        }
    }

    deinit {
        SSL_free(ssl)
        readBuffer.deallocate()
    }

    // MARK: - Bytes in and out

    /// Hands the peer's ciphertext to OpenSSL.
    func feed(_ bytes: [UInt8]) {
        if !sawPeerBytes, !bytes.isEmpty { sawPeerBytes = true }
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                // A memory BIO takes everything (it grows); the loop only guards Int32.
                let chunk = Int32(clamping: raw.count - offset)
                let n = BIO_write(incoming, raw.baseAddress! + offset, chunk)
                if n <= 0 { break }
                offset += Int(n)
            }
        }
    }

    /// What OpenSSL wrote for the peer since the last call, or `nil`.
    func takeOutput() -> [UInt8]? {
        let pending = Int(BIO_ctrl_pending(outgoing))
        if pending == 0 { return nil }
        var bytes = [UInt8](repeating: 0, count: pending)
        let n = bytes.withUnsafeMutableBytes { BIO_read(outgoing, $0.baseAddress, Int32(clamping: pending)) }
        if n <= 0 { return nil }
        if Int(n) < pending { bytes.removeLast(pending - Int(n)) }
        return bytes
    }

    // MARK: - Handshake

    /// Where the handshake is after a step.
    enum HandshakeStep {
        case done
        case needMoreBytes
        case failed(TLSError)
    }

    /// Advances the handshake with the bytes fed so far.
    func handshake() -> HandshakeStep {
        if failed { return .failed(TLSError(.handshakeFailed, "the connection already failed", operation: operation, target: target)) }
        ERR_clear_error()
        let rc = SSL_do_handshake(ssl)
        if rc == 1 { return .done }
        let code = SSL_get_error(ssl, rc)
        if code == SSL_ERROR_WANT_READ || code == SSL_ERROR_WANT_WRITE { return .needMoreBytes }
        failed = true
        return .failed(handshakeError(code))
    }

    /// The clearest account of a failed handshake.
    private func handshakeError(_ code: Int32) -> TLSError {
        let reasons = TLSError.drainQueue()
        let verify = SSL_get_verify_result(ssl)
        if verify != Int(X509_V_OK) {
            let text = X509_verify_cert_error_string(verify).map { String(cString: $0) } ?? "certificate verify failed"
            return TLSError(.certificateRejected, text, verifyCode: verify, operation: operation, target: target)
        }
        let reason = reasons.isEmpty ? (code == SSL_ERROR_SYSCALL ? "unexpected end of data" : "SSL error \(code)") : reasons.joined(separator: "; ")
        return TLSError(.handshakeFailed, reason, operation: operation, target: target)
    }

    /// A TLS record starts with its content type: change_cipher_spec (20), alert (21),
    /// handshake (22), application_data (23) or heartbeat (24). A peer whose first byte is
    /// none of these is not speaking TLS (`GET /`, `SSH-2.0`, `+OK`, `{"…`).
    static func looksLikeTLS(firstByte: UInt8) -> Bool { (20...24).contains(firstByte) }

    // MARK: - Application data

    /// What decrypting the bytes fed so far gave.
    enum ReadStep {
        /// Plaintext (possibly empty when a record held none) and whether more may follow.
        case data([UInt8], peerClosed: Bool)
        case failed(TLSError)
    }

    /// Decrypts everything decryptable now into one chunk.
    func decryptAvailable() -> ReadStep {
        if failed { return .failed(TLSError(.protocolError, "the connection already failed", operation: "TLS read", target: target)) }
        if peerClosed { return .data([], peerClosed: true) }
        var plaintext: [UInt8] = []
        ERR_clear_error()
        while true {
            let n = SSL_read(ssl, readBuffer, Int32(TLSSession.readBufferSize))
            if n > 0 {
                plaintext.append(contentsOf: UnsafeRawBufferPointer(start: readBuffer, count: Int(n)))
                continue
            }
            let code = SSL_get_error(ssl, n)
            switch code {
            case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
                return .data(plaintext, peerClosed: false)
            case SSL_ERROR_ZERO_RETURN:
                peerClosed = true
                return .data(plaintext, peerClosed: true)
            default:
                failed = true
                return .failed(TLSError.fromQueue(.protocolError, fallback: "SSL error \(code)", operation: "TLS read", target: target))
            }
        }
    }

    /// Encrypts `plaintext` into records; the ciphertext is returned (never partial: the
    /// outgoing memory BIO grows as needed).
    func encrypt(_ plaintext: [UInt8]) throws -> [UInt8] {
        if failed { throw TLSError(.protocolError, "the connection already failed", operation: "TLS write", target: target) }
        if sentClose { throw UVError(code: EPIPE, operation: "TLS write after shutdown", target: target) }
        if plaintext.isEmpty { return [] }
        ERR_clear_error()
        let n = plaintext.withUnsafeBytes { SSL_write(ssl, $0.baseAddress, Int32(clamping: $0.count)) }
        if n <= 0 {
            failed = true
            let code = SSL_get_error(ssl, n)
            throw TLSError.fromQueue(.protocolError, fallback: "SSL error \(code)", operation: "TLS write", target: target)
        }
        var output = takeOutput() ?? []
        // Int32 bound: a larger write goes in several calls.
        if Int(n) < plaintext.count {
            output += try encrypt(Array(plaintext[Int(n)...]))
        }
        return output
    }

    /// Sends close_notify (our side is done); returns the alert's bytes.
    func closeNotify() -> [UInt8]? {
        if failed || sentClose { return nil }
        sentClose = true
        ERR_clear_error()
        _ = SSL_shutdown(ssl)
        _ = TLSError.drainQueue()
        return takeOutput()
    }

    /// The negotiated protocol: `TLSv1.3`.
    var protocolVersion: String { SSL_get_version(ssl).map { String(cString: $0) } ?? "" }

    /// The negotiated cipher suite: `TLS_AES_256_GCM_SHA384`.
    var cipherName: String { SSL_CIPHER_get_name(SSL_get_current_cipher(ssl)).map { String(cString: $0) } ?? "" }

    /// The peer certificate's subject, one line (`CN = localhost`), if it sent one.
    var peerSubject: String? {
        guard let certificate = SSL_get1_peer_certificate(ssl) else { return nil }
        defer { X509_free(certificate) }
        guard let name = X509_get_subject_name(certificate), let bio = BIO_new(BIO_s_mem()) else { return nil }
        defer { BIO_free(bio) }
        _ = X509_NAME_print_ex(bio, name, 0, ruvtls_name_flags_oneline())
        let pending = Int(BIO_ctrl_pending(bio))
        var bytes = [UInt8](repeating: 0, count: pending)
        let n = bytes.withUnsafeMutableBytes { BIO_read(bio, $0.baseAddress, Int32(pending)) }
        return String(decoding: bytes.prefix(max(0, Int(n))), as: UTF8.self)
    }
}

import COpenSSL

/// Why a TLS connection could not be made or went on no longer.
///
/// Each error says what kind of failure it was (``Kind``), OpenSSL's or X.509's reason in
/// words, what was being done, and to whom:
/// `TLS certificate rejected: certificate has expired (X.509 error 10) during TLS connect on 127.0.0.1:4433`.
/// Failures of the TCP connection underneath stay ``/ReactiveUV/UVError``s.
public struct TLSError: Error, Sendable, CustomStringConvertible {
    /// The kinds of TLS failure.
    public enum Kind: Sendable, Equatable, CustomStringConvertible {
        /// The certificate, key or trust store could not be loaded, or do not belong
        /// together (a key that is not the certificate's).
        case configuration
        /// The peer's certificate failed verification: expired, not yet valid, signed by
        /// an authority we do not trust, or issued for another name.
        case certificateRejected
        /// The handshake failed for another reason (no common protocol or cipher, an alert
        /// from the peer, such as its rejection of *our* certificate).
        case handshakeFailed
        /// The peer does not speak TLS: its first bytes are not a TLS record (a plain-text
        /// client or server on the port).
        case peerNotTLS
        /// The peer closed the connection before the handshake finished.
        case closedDuringHandshake
        /// The handshake did not finish within the time allowed.
        case handshakeTimedOut
        /// A record was malformed or failed its integrity check after the handshake.
        case protocolError

        /// The kind in words: `certificate rejected`.
        public var description: String {
            switch self {
            case .configuration: return "configuration"
            case .certificateRejected: return "certificate rejected"
            case .handshakeFailed: return "handshake failed"
            case .peerNotTLS: return "peer does not speak TLS"
            case .closedDuringHandshake: return "closed during handshake"
            case .handshakeTimedOut: return "handshake timed out"
            case .protocolError: return "protocol error"
            }
        }
    }

    /// What went wrong, in kind.
    public let kind: Kind
    /// OpenSSL's or X.509's reason: `certificate has expired`, `wrong version number`.
    public let reason: String
    /// The X.509 verification result (`X509_V_ERR_*`) when a certificate was rejected.
    public let verifyCode: Int?
    /// What was being done: `TLS connect`, `TLS accept`, `load certificate`.
    public let operation: String
    /// The peer's address or the file concerned.
    public let target: String?

    /// Creates an error.
    ///
    /// - Parameters:
    ///   - kind: the kind of failure.
    ///   - reason: the reason in words.
    ///   - verifyCode: the X.509 verification result, if any.
    ///   - operation: what was being done.
    ///   - target: the peer or file concerned.
    public init(_ kind: Kind, _ reason: String, verifyCode: Int? = nil, operation: String, target: String?) {
        self.kind = kind
        self.reason = reason
        self.verifyCode = verifyCode
        self.operation = operation
        self.target = target
    }

    /// `TLS handshake failed: wrong version number during TLS accept on 127.0.0.1:51234`.
    public var description: String {
        var text = "TLS \(kind): \(reason)"
        if let verifyCode { text += " (X.509 error \(verifyCode))" }
        text += " during \(operation)"
        if let target { text += " on \(target)" }
        return text
    }

    /// The reasons on OpenSSL's error queue of this thread (oldest first), emptying it.
    static func drainQueue() -> [String] {
        var reasons: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            if let text = ERR_reason_error_string(code) {
                reasons.append(String(cString: text))
            } else {
                var buffer = [CChar](repeating: 0, count: 256)
                ERR_error_string_n(code, &buffer, buffer.count)
                reasons.append(buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) })
            }
        }
        return reasons
    }

    /// An error from what OpenSSL's queue says (or `fallback` when it says nothing).
    static func fromQueue(_ kind: Kind, fallback: String, operation: String, target: String?) -> TLSError {
        let reasons = drainQueue()
        return TLSError(kind, reasons.isEmpty ? fallback : reasons.joined(separator: "; "), operation: operation, target: target)
    }
}

import Logging
import ReactiveUV

/// Who a client is and what it may read: admitted with the identity its connection gave
/// (a verified TLS client certificate, a Unix socket peer's uid), or after `AUTH <token>`,
/// or as `anonymous` when nothing is asked for; refused when `--access-file` does not name
/// it. Fail closed: before `AUTH` a client is sent no line, and anything but a right token
/// ends the connection.
extension ClientSession {
    /// Seconds a client may take to send `AUTH` (the tick checks).
    static let authTimeout: Double = 10

    /// Makes the client wait for `AUTH <token>`: it stays `authenticating` (sent replies,
    /// no line; where every client starts), and has ``authTimeout`` from now to send it.
    func awaitToken() {
        lastInput = Scheduler.main.now
    }

    /// Admits the client as `identity` if the access file lets it read anything; refuses
    /// it otherwise. Returns whether it was admitted.
    @discardableResult
    func admit(_ identity: String, how: String) -> Bool {
        var access: SourceAccess?
        if let policy = server.security.policy {
            access = policy.access(for: identity)
            guard access != nil else {
                refuse("\(identity) (\(how)) is not in the access file", reply: "ERR not authorized")
                return false
            }
        }
        feed.admit(access: access)
        self.identity = identity
        logger.info("client \(transport) connected as \(identity) (\(how))")
        server.clientAdmitted()
        return true
    }

    /// The one command a client waiting for `AUTH` may send.
    func authenticate(_ input: ClientLine) {
        guard case .line(let text) = input else {
            refuse("a command before AUTH", reply: "ERR authentication required: send AUTH <token> first")
            return
        }
        switch ClientCommand.parse(text) {
        case .failure(.empty): return
        case .success(.auth(let token)):
            guard let expected = server.security.token, ClientAuth.constantTimeEquals(Array(token.utf8), expected) else {
                refuse("wrong token", reply: "ERR authentication failed")
                return
            }
            guard admit("token", how: "AUTH") else { return }
            reply("OK AUTH token")
        default:
            refuse("a command before AUTH", reply: "ERR authentication required: send AUTH <token> first")
        }
    }

    /// Says `reply` and closes; logs who was refused and why (never the token).
    func refuse(_ reason: String, reply line: String) {
        logger.warning("client \(transport) refused: \(reason)")
        server.stats.refused += 1
        reply(line)
        // (The reason is logged once, above.)
        end(reason: "refused", graceful: true)
    }
}

/// Token comparison without an early exit: the time taken does not say how many leading
/// bytes of a guess were right.
enum ClientAuth {
    /// Whether `given` equals `expected`, in time that depends only on their lengths.
    ///
    /// - Parameters:
    ///   - given: what the client sent.
    ///   - expected: the token from `--auth-token-file`.
    /// - Returns: `true` when every byte and the length match.
    static func constantTimeEquals(_ given: [UInt8], _ expected: [UInt8]) -> Bool {
        var difference = UInt8(given.count == expected.count ? 0 : 1)
        let count = max(given.count, expected.count)
        for i in 0..<count {
            let a = i < given.count ? given[i] : 0
            let b = i < expected.count ? expected[i] : 0
            difference |= a ^ b
        }
        return difference == 0
    }
}

/// The server's authentication and authorization settings (from SecurityOptions).
struct SecurityPolicy {
    /// The shared token clients must send with `AUTH`; `nil`: none asked for.
    var token: [UInt8]?
    /// Who may read what; `nil`: every admitted client reads everything.
    var policy: AccessPolicy?
    /// TLS clients are verified against `--tls-client-ca`: their subject is their identity.
    var verifiesClientCertificates = false
}

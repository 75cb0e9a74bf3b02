import ArgumentParser
import Glibc
import ReactiveUVNATS

/// logcast's security options (an option group, so LogcastCommand only names it): who may
/// connect (a token, TLS client certificates, a Unix socket's owner and mode), what each
/// identity may read (`--access-file`), the refusal to serve a non-loopback address to
/// anyone, and the credentials the NATS edge and hub present. SECURITY.md tells the story.
struct SecurityOptions: ParsableArguments {
    @Option(name: .customLong("auth-token-file"), help: "Clients must send AUTH <token> first; the token is this file's first line (never on the command line). Their identity is 'token'.")
    var authTokenFile: String?

    @Option(name: .customLong("tls-client-ca"), help: "With --tls-cert: clients must present a certificate issued by a CA in this PEM file; its subject is their identity ('cert:CN = alice').")
    var tlsClientCA: String?

    @Option(name: .customLong("listen-unix"), help: "Also serve clients on this Unix socket; a peer's identity is its uid ('uid:1000') as the kernel gives it (SO_PEERCRED).")
    var listenUnix: String?

    @Option(name: .customLong("unix-mode"), help: "The --listen-unix socket's file mode, octal (who may connect at all).")
    var unixMode: String = "0600"

    @Option(name: .customLong("unix-owner"), help: "The --listen-unix socket's owner, USER or USER:GROUP (names or numbers).")
    var unixOwner: String?

    @Option(name: .customLong("access-file"), help: "Which files each identity may read: lines 'IDENTITY: GLOB, GLOB…' (see SECURITY.md). Identities not listed are refused; STATS and GREP see only what a client may read.")
    var accessFile: String?

    @Flag(name: .customLong("allow-unauthenticated"), help: "Serve a non-loopback --listen address without --auth-token-file or --tls-client-ca (refused otherwise, like Redis's protected mode).")
    var allowUnauthenticated = false

    @Option(name: .customLong("nats-creds"), help: "NATS (edge and hub): a credentials file (user JWT and NKey seed).")
    var natsCreds: String?

    @Option(name: .customLong("nats-user"), help: "NATS (edge and hub): a user name; its password is the first line of --nats-password-file.")
    var natsUser: String?

    @Option(name: .customLong("nats-password-file"), help: "NATS: the file holding --nats-user's password.")
    var natsPasswordFile: String?

    @Option(name: .customLong("nats-token-file"), help: "NATS (edge and hub): the file holding an authentication token.")
    var natsTokenFile: String?

    func validate() throws {
        if (natsUser == nil) != (natsPasswordFile == nil) {
            throw ValidationError("--nats-user and --nats-password-file go together")
        }
        if [natsCreds != nil, natsUser != nil, natsTokenFile != nil].filter({ $0 }).count > 1 {
            throw ValidationError("--nats-creds, --nats-user and --nats-token-file are alternatives: give one")
        }
        guard let mode = UInt32(unixMode, radix: 8), mode <= 0o777 else {
            throw ValidationError("--unix-mode must be an octal file mode such as 0660, got '\(unixMode)'")
        }
        _ = mode
        if let unixOwner { _ = try Self.parseOwner(unixOwner) }
        if listenUnix == nil && unixOwner != nil { throw ValidationError("--unix-owner needs --listen-unix") }
    }

    /// The socket's mode as a number (validated).
    var unixModeValue: mode_t { mode_t(UInt32(unixMode, radix: 8) ?? 0o600) }

    /// `USER[:GROUP]` as ids (names looked up, numbers taken as they are); a missing group
    /// is `nil` (left as it is).
    static func parseOwner(_ text: String) throws -> (uid: uid_t, gid: gid_t?) {
        let parts = text.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        let user = parts[0]
        let uid: uid_t
        if let number = UInt32(user) { uid = number } else if let entry = getpwnam(user) { uid = entry.pointee.pw_uid } else {
            throw ValidationError("--unix-owner: no user '\(user)'")
        }
        guard parts.count == 2 else { return (uid, nil) }
        let group = parts[1]
        if let number = UInt32(group) { return (uid, number) }
        guard let entry = getgrnam(group) else { throw ValidationError("--unix-owner: no group '\(group)'") }
        return (uid, entry.pointee.gr_gid)
    }

    /// Whether `host` is a loopback address (what may be served without authentication).
    static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }

    /// Whether any client authentication is configured for the TCP listener.
    var authenticatesTCP: Bool { authTokenFile != nil || tlsClientCA != nil }

    /// The first line of a secret file (a token, a password), or a start-up error naming
    /// the option. Never printed.
    ///
    /// - Parameters:
    ///   - path: the file.
    ///   - option: the option that named it, for the error.
    /// - Returns: the secret's bytes, without the line break.
    /// - Throws: `ExitCode.failure` once the error is on standard error.
    static func readSecret(_ path: String, option: String) throws -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            Output.err("logcast: error: \(option) \(StateDirectory.printable(path)): \(String(cString: strerror(errno)))\n")
            throw ExitCode.failure
        }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: 4097)
        let n = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard n >= 0 else {
            Output.err("logcast: error: \(option) \(StateDirectory.printable(path)): \(String(cString: strerror(errno)))\n")
            throw ExitCode.failure
        }
        var secret = Array(bytes[0..<n])
        if let nl = secret.firstIndex(of: 10) { secret = Array(secret[..<nl]) }
        while secret.last == 13 || secret.last == 32 || secret.last == 9 { secret.removeLast() }
        guard !secret.isEmpty, n < 4097 else {
            Output.err("logcast: error: \(option) \(StateDirectory.printable(path)): the first line must hold the secret (1...4096 bytes)\n")
            throw ExitCode.failure
        }
        return secret
    }

    /// Checks what needs the other options, reads the secrets and the access file, and
    /// sets the server's policy and listeners up. Errors are logcast's own start-up
    /// errors (`logcast: error: …`, exit 1).
    ///
    /// - Parameters:
    ///   - server: the server to configure (before it starts).
    ///   - listenHost: the --listen host (protected mode: a non-loopback one needs
    ///     authentication or --allow-unauthenticated).
    ///   - tls: whether clients are served over TLS (--tls-cert).
    /// - Throws: `ExitCode.failure` or a `ValidationError`.
    func configure(_ server: LogcastServer, listenHost: String, tls: Bool) throws {
        if tlsClientCA != nil && !tls { throw ValidationError("--tls-client-ca needs --tls-cert and --tls-key") }
        if !Self.isLoopback(listenHost) && !authenticatesTCP && !allowUnauthenticated {
            Output.err("""
                logcast: error: --listen \(listenHost) is not a loopback address and no client authentication is \
                configured: anyone who reaches the port would read every log. Use --auth-token-file or --tls-client-ca \
                (and --access-file), listen on 127.0.0.1 or --listen-unix, or pass --allow-unauthenticated.

                """)
            throw ExitCode.failure
        }
        var policy = SecurityPolicy()
        if let authTokenFile { policy.token = try Self.readSecret(authTokenFile, option: "--auth-token-file") }
        if let accessFile {
            do { policy.policy = try AccessPolicy.load(accessFile) } catch {
                Output.err("logcast: error: --access-file \(StateDirectory.printable(String(describing: error)))\n")
                throw ExitCode.failure
            }
        }
        policy.verifiesClientCertificates = tlsClientCA != nil
        server.security = policy
        server.config.tlsClientCA = tlsClientCA
    }

    /// The credentials the NATS edge and hub present (secrets read from their files now,
    /// so a missing file is a start-up error, not a reconnect loop).
    ///
    /// - Returns: the credentials, or `nil` when none are configured.
    /// - Throws: `ExitCode.failure` once the error is on standard error.
    func natsCredentials() throws -> NATSCredentials? {
        if let natsCreds {
            guard access(natsCreds, R_OK) == 0 else {
                Output.err("logcast: error: --nats-creds \(StateDirectory.printable(natsCreds)): \(String(cString: strerror(errno)))\n")
                throw ExitCode.failure
            }
            return .credentialsFile(natsCreds)
        }
        if let natsUser, let natsPasswordFile {
            let password = try Self.readSecret(natsPasswordFile, option: "--nats-password-file")
            return .userPassword(user: natsUser, password: String(decoding: password, as: UTF8.self))
        }
        if let natsTokenFile {
            return .token(String(decoding: try Self.readSecret(natsTokenFile, option: "--nats-token-file"), as: UTF8.self))
        }
        return nil
    }

    /// Starts the --listen-unix listener, if any (after the server started).
    func startUnix(_ server: LogcastServer) throws {
        guard let listenUnix else { return }
        let owner = try unixOwner.map { try Self.parseOwner($0) }
        server.listenUnix(path: listenUnix, mode: unixModeValue, owner: owner) { path in
            Output.out("logcast: listening on unix socket \(path) (mode \(unixMode))\n")
        }
    }
}

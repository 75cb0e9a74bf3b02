/// What the command line decided, shared by the pieces of the daemon.
struct LogcastConfig {
    enum SlowClientPolicy: String {
        case drop
        case disconnect
    }

    var files: [String]
    var host: String
    var port: Int
    var heartbeat: Double
    var idleTimeout: Double
    var queueLimit: Int
    var slowClient: SlowClientPolicy
    var maxCommandLength: Int = 64 * 1024
    var tickInterval: Double
    /// How long compiling one batch of GREP patterns may take before they are refused.
    var compileTimeLimit: Double = 10
    /// The longest GREP pattern, in bytes.
    var maxPatternLength: Int = 60 * 1024
    /// Serve clients over TLS with this PEM certificate chain and key (--tls-cert/--tls-key).
    var tlsCertificate: String?
    var tlsKey: String?
    /// Clients' certificates are verified against this CA file (--tls-client-ca).
    var tlsClientCA: String?
    /// Plain mode's kept positions (`--state-dir` without `--publish`): PlainPositions.
    var stateDirectory: String?
    /// Puts a line forwarded by another logcast into this one's stream.
    var inject: (TaggedLine) -> Void = { _ in }
}

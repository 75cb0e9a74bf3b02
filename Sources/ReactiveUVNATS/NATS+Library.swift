import CNATS

// cnats's library lifetime: opened implicitly by the first connect (`nats_Open`), and, unless
// closed, kept with its threads (timers, garbage collection, asynchronous callbacks, message
// delivery) to the end of the process. A process that exits with those threads neither
// stopped nor joined is what ThreadSanitizer reports as a leaked thread
// (scripts/sanitize/tsan.supp). `closeLibrary(timeout:)` is the one place that ends it.
//
// Why it refuses after a TLS connection: cnats 3.4's final clean-up (run at exit once the
// library was closed) frees OpenSSL's list of compression methods without clearing
// OpenSSL's pointer to it, and OpenSSL's own exit handler frees it again: a crash at exit
// (nats-io/nats.c#904, open for 3.4.1, Debian 12's libnats). That clean-up frees OpenSSL's
// state only when cnats set TLS up, which only a TLS option does (`natsOptions_SetSecure`
// and the certificate loaders call `nats_sslInit`); without one, closing is safe.

/// How ``NATS/closeLibrary(timeout:)`` ended.
public enum NATSLibraryClosing: Sendable, Equatable, CustomStringConvertible {
    /// Every cnats thread was stopped and joined, and the library's memory released.
    case closed
    /// cnats was told to close, but its threads had not all ended within the timeout; it
    /// goes on tearing down in the background.
    case timedOut
    /// Nothing to close: no connection was ever attempted in this process.
    case notOpened
    /// Not closed: this many connections are not destroyed yet (``NATS/liveConnections``).
    case connectionsLeft(Int)
    /// Not closed: a TLS connection was made in this process (nats-io/nats.c#904: closing
    /// the library then crashes the process at exit).
    case keptForTLS
    /// Not closed: cnats refused (already closed, or called from one of cnats's threads).
    case refused(String)

    /// A short text for logs.
    public var description: String {
        switch self {
        case .closed: "closed"
        case .timedOut: "timed out waiting for cnats's threads (they go on ending)"
        case .notOpened: "never opened"
        case .connectionsLeft(let n): "not closed: \(n) connection(s) not destroyed yet"
        case .keptForTLS: "not closed: a TLS connection was made (nats-io/nats.c#904)"
        case .refused(let why): "not closed: \(why)"
        }
    }
}

extension NATS {
    /// Closes cnats's library and waits, up to `timeout` seconds, until every thread of
    /// its own has ended and been joined (cnats's `nats_CloseAndWait`).
    ///
    /// For a program's way out: after every connection was closed and the loop ran until
    /// ``liveConnections`` is 0 (see ``NATSConnection/close()``). Without it cnats's threads
    /// live to the process's exit, unjoined (harmless, but ThreadSanitizer reports them as
    /// leaked threads). A connect after a `.closed` opens the library again.
    ///
    /// Refused, and cnats left as it is, while a connection is not destroyed (cnats would
    /// wait for it until the timeout) and after any TLS connection in this process: cnats
    /// 3.4's clean-up at exit then frees OpenSSL state a second time (nats-io/nats.c#904), a
    /// crash at exit, so the library stays open to the end as before. Call it on a thread
    /// that is not cnats's (the loop's thread is fine once the connections are destroyed);
    /// it blocks for up to `timeout`.
    ///
    /// - Parameter timeout: the longest wait for cnats's threads, in seconds (at least a
    ///   millisecond is waited; cnats takes 0 for "forever", which is never asked for).
    /// - Returns: how it ended.
    @discardableResult
    public static func closeLibrary(timeout: Double) -> NATSLibraryClosing {
        guard libraryOpened.value > 0 else { return .notOpened }
        let live = liveConnections
        if live > 0 { return .connectionsLeft(live) }
        if tlsUsed.value > 0 { return .keptForTLS }
        let status = nats_CloseAndWait(max(1, milliseconds(timeout)))
        switch status {
        case NATS_OK:
            libraryOpened.store(0)
            return .closed
        case NATS_TIMEOUT:
            libraryOpened.store(0)
            return .timedOut
        case NATS_NOT_INITIALIZED:
            libraryOpened.store(0)
            return .notOpened
        default:
            return .refused(String(cString: natsStatus_GetText(status)))
        }
    }

    /// Set once a connect reached cnats (which then opened its library).
    static let libraryOpened = NATSCounter()
    /// Set once a connection with TLS options was made (see ``closeLibrary(timeout:)``).
    static let tlsUsed = NATSCounter()
}

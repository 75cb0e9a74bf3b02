import CNATS
import COpenSSL

extension NATS {
    /// cnats connections made by ``connect(_:options:on:)`` and not destroyed yet (any thread).
    ///
    /// A connection is destroyed on its loop's thread a little after it closed: once cnats's
    /// libuv handles for it have left the loop (see ``NATSConnection/close()``). A program
    /// shutting down runs its loop until this is 0 — a loop stopped or closed earlier never
    /// destroys the connection, and cnats keeps it (and its threads) alive — then calls
    /// ``shutdown(timeout:)``.
    public static var liveConnections: Int { Int(liveConnectionCounter.value) }

    /// Counts connections from a successful connect to `natsConnection_Destroy`.
    static let liveConnectionCounter = NATSCounter()

    /// Tears cnats down and waits until it has let go of everything: its global threads
    /// (timers, asynchronous callbacks, garbage collector) joined and every connection,
    /// subscription and JetStream context it still held freed.
    ///
    /// cnats frees a closed connection's objects on threads of its own, some time after
    /// the connection's subscription was disposed, and joins its threads only in this
    /// call. A process that exits without it leaves finished threads nobody joined (which
    /// ThreadSanitizer reports as a thread leak) and memory cnats still owned. Call it once
    /// every ``NATSConnection`` is closed and destroyed (its ``connect(_:options:on:)``
    /// subscription disposed and the loop run until ``liveConnections`` is 0), e.g. before
    /// a daemon exits. A later ``connect(_:options:on:)`` opens the library again.
    ///
    /// Blocking: it waits on cnats's threads, so call it off any loop that a connection
    /// still runs on (there should be none by then).
    ///
    /// - Parameter timeout: how long to wait for cnats's objects to be freed, in seconds.
    /// - Throws: ``NATSError`` with status `timeout` when something cnats made is still
    ///   alive after `timeout` (a connection not closed: a leak the caller must fix).
    public static func shutdown(timeout: Double = 10) throws {
        let milliseconds = Int64((max(0, timeout) * 1000).rounded(.up))
        // nats_CloseAndWait(0) would wait forever; a positive timeout bounds it.
        let status = nats_CloseAndWait(max(1, milliseconds))
        // Never opened (no connection was ever made), or already torn down: nothing to wait for.
        guard status == NATS_OK || status == NATS_NOT_INITIALIZED else {
            throw NATSError(status, "shut down the NATS library (some connection was not closed)")
        }
        _ = compressionMethodsGuard
    }

    /// Installed by the first ``shutdown(timeout:)``: an exit handler that keeps cnats's exit
    /// cleanup from freeing what OpenSSL's frees again.
    ///
    /// Why: cnats registers an exit handler when it first opens; once the library is
    /// closed (as ``shutdown(timeout:)`` leaves it) and it had set up TLS, that handler frees
    /// libssl's list of compression methods, `sk_SSL_COMP_free(SSL_COMP_get_compression_methods())`,
    /// and leaves libssl pointing at it; OpenSSL's own exit handler (`OPENSSL_cleanup`) then
    /// frees it again and the process crashes on its way out (nats-io/nats.c#904; a SEGV in
    /// `OPENSSL_sk_pop_free` at the exit of the test process). Exit handlers run in reverse
    /// order of registration, so this one, registered after cnats's, runs first: it takes
    /// the list out of libssl (both cleanups then free nothing) and keeps it in
    /// `detachedCompressionMethods`, a global, so it is not a leak to LeakSanitizer either.
    private static let compressionMethodsGuard: Void = {
        atexit {
            detachedCompressionMethods = SSL_COMP_set0_compression_methods(nil)
        }
    }()
}

/// libssl's compression-method list, taken out at exit (see `NATS.compressionMethodsGuard`).
nonisolated(unsafe) private var detachedCompressionMethods: OpaquePointer?

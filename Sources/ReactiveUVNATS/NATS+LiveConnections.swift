extension NATS {
    /// cnats connections made by ``connect(_:options:on:)`` and not destroyed yet (any thread).
    ///
    /// A connection is destroyed on its loop's thread a little after it closed: once cnats's
    /// libuv handles for it have left the loop (see ``NATSConnection/close()``). A program
    /// shutting down runs its loop until this is 0: a loop stopped or closed earlier never
    /// destroys the connection, and cnats keeps it, its subscriptions and their threads
    /// alive until the process exits.
    public static var liveConnections: Int { Int(liveConnectionCounter.value) }

    /// Counts connections from a successful connect to `natsConnection_Destroy`.
    static let liveConnectionCounter = NATSCounter()
}

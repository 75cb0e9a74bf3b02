/// Holds a JetStream consumer's deliveries back while closed: back-pressure from a reader
/// slower than the stream.
///
/// Pass one to ``JetStream/consume(stream:subject:from:bufferLimit:gate:stallTimeout:)``. While the gate
/// is closed, no message is handed to the loop; cnats's delivery thread for that consumer
/// waits, so cnats sends no flow-control reply and the server stops sending once its
/// flow-control window (up to 32 MB on nats-server 2.9) is in cnats's hands. Opening the
/// gate delivers what waited, in order, and lets the server go on.
///
/// Keep a gate closed only briefly: less than the consumer's idle heartbeat (5 s for the
/// ordered consumers `consume` makes). A server whose consumer has stalled on flow
/// control says so in its next heartbeat, cnats answers at once, and the server sends
/// another window into cnats's memory; past cnats's pending limits it drops messages,
/// which cnats 3.4's ordered consumer does not notice. To hold a consumer back for longer,
/// dispose it and consume again from the sequence after the last message taken (logcast's
/// hub does both: the gate for short waits, a fresh consumer after a long one). A closed
/// gate is not taken for a stalled consumer: `consume`'s stall watch leaves a consumer
/// alone while its reader holds it back.
///
/// Thread-safety: `close`, `open` and `isClosed` may be called from any thread.
public final class ConsumerGate: @unchecked Sendable {
    // Thread-safety: an atomic cell; cnats's delivery thread reads it while it waits.
    let closedCell = NATSCounter()

    /// An open gate.
    public init() {}

    /// Holds deliveries back (a message being handed over when it closes still is).
    public func close() { closedCell.store(1) }

    /// Lets deliveries go on.
    public func open() { closedCell.store(0) }

    /// Whether deliveries are held back.
    public var isClosed: Bool { closedCell.value != 0 }
}

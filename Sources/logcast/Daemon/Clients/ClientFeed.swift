import ReactiveUV

/// One client's place in the ``LineFanOut``: which block it has been written up to, its
/// filter, what waits to be written, and whether a write is in flight.
///
/// A feed holds no log lines of its own while it keeps up: the lines it has not been
/// written yet are the fan-out's shared blocks from `nextSequence` on. Only replies (and
/// the lines before a reply, so the reply keeps its place among them) are copied into
/// `outbox`.
final class ClientFeed {
    // Main loop only.
    let transport: ClientTransport
    /// The filter: `nil` takes every line.
    var pattern: PatternID?
    /// The sources this client may read (`--access-file`); `nil`: every source.
    var access: SourceAccess?
    /// The first block not yet written to (or skipped for) this client.
    var nextSequence: Int
    var paused = false
    /// Bytes to write before the next blocks' lines: lines already taken from blocks, then
    /// replies.
    var outbox: [UInt8] = []
    /// How many log lines `outbox` holds.
    var outboxLines = 0
    /// Bytes of the lines it takes from blocks `pendingFrom ..< pendingThrough`: what waits
    /// for it in the shared blocks, counted once per block (the fan-out's batching rule).
    var pendingFrom = 0
    var pendingThrough = 0
    var pendingBytes = 0
    /// A write is in flight; nothing more is written until it completes.
    var writing = false
    /// In the fan-out's list of feeds to visit soon.
    var queued = false
    /// Lines written (handed to the transport) and lines dropped because the client fell
    /// behind by more than the queue limit.
    var linesSent = 0
    var linesDropped = 0
    /// When something was last written.
    var lastOutput: SchedulerTime
    /// Ending: once everything is written, `onDrained` runs (once).
    var closing = false
    var onDrained: (() -> Void)?
    /// The transport failed, or (with `--slow-client disconnect`) the client fell too far
    /// behind; the session ends.
    var onFailure: (String) -> Void = { _ in }
    /// Runs once a write completes with little waiting (``LineFanOut/whenRoom(_:_:)``).
    var onRoom: (() -> Void)?
    var ended = false
    /// Over the queue limit with replies: the session is ending and nothing more is queued.
    var failed = false

    init(transport: ClientTransport, nextSequence: Int) {
        self.transport = transport
        self.nextSequence = nextSequence
        lastOutput = Scheduler.main.now
    }
}

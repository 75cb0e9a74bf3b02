/// What a connection does when its peer reads more slowly than we write.
///
/// Every connection has a *high-water mark*: a number of bytes queued for writing and not
/// yet taken by the kernel (`uv_stream_get_write_queue_size`). The policy decides what
/// happens to a write offered while the queue is at or above it. The check is made against
/// the bytes queued *before* a write, so a write is never split or partly dropped; the
/// queue holds at most the limit plus the last write accepted. Nothing else buffers
/// outgoing bytes, so that is the whole memory a slow peer can cost.
public enum BackpressurePolicy: Int, Sendable, Equatable, CustomStringConvertible {
    /// Pause what feeds the connection (the default).
    ///
    /// A signal in general cannot be paused, so this pauses what can be: the `reads` of
    /// connections, standard input, subprocess pipes and files (``File/read(_:chunkSize:on:)``)
    /// that a
    /// ``StreamConnection/send(_:)`` subscribes to while it subscribes to its source
    /// (directly or through synchronous operators such as `map`, `filter`). Once the queue
    /// reaches the high-water mark those reads stop (`uv_read_stop`, so the kernel's
    /// receive window pushes back on *their* peers); they resume when the queue has fallen
    /// to half the mark.
    ///
    /// Writes that still arrive while the queue is above the mark (from a source that
    /// cannot pause, such as a subject or a timer, bytes already in flight from another
    /// loop, or plain ``StreamConnection/write(_:)-([UInt8])`` calls) are accepted up to four times
    /// the mark; past that the connection is closed with ``WriteQueueFullError``, as with
    /// ``disconnect``.
    case pauseSource

    /// Refuse writes while the queue is at or above the mark, and count them.
    ///
    /// The write signal of a refused write completes without writing (the count is the
    /// report): ``StreamConnection/droppedWrites`` and ``StreamConnection/droppedBytes``
    /// grow. A ``StreamConnection/send(_:)`` keeps going with the next value. For feeds
    /// where the newest data matters more than every byte (logs to a slow watcher).
    case dropAndCount

    /// Close the connection once a write arrives while the queue is at or above the mark.
    ///
    /// The write, the connection's active `reads` and every other pending write fail with
    /// ``WriteQueueFullError``.
    case disconnect

    /// The case's name: `pauseSource`, `dropAndCount`, `disconnect`.
    public var description: String {
        switch self {
        case .pauseSource: return "pauseSource"
        case .dropAndCount: return "dropAndCount"
        case .disconnect: return "disconnect"
        }
    }
}

/// A connection's write queue passed its limit (see ``BackpressurePolicy``): the peer read
/// too slowly and the connection was closed.
public struct WriteQueueFullError: Error, Sendable, CustomStringConvertible {
    /// Bytes queued and not flushed when the write arrived.
    public let queuedBytes: Int
    /// The limit that was reached: the high-water mark for `.disconnect`, four times it
    /// for `.pauseSource`.
    public let limit: Int
    /// The connection's policy.
    public let policy: BackpressurePolicy
    /// The connection: `127.0.0.1:7070`, a socket path.
    public let target: String

    /// `write queue full: 4194304 bytes queued, limit 4194304 (policy pauseSource) on
    /// 127.0.0.1:7070; connection closed`.
    public var description: String {
        "write queue full: \(queuedBytes) bytes queued, limit \(limit) (policy \(policy)) on \(target); connection closed"
    }
}

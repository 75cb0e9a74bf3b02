import Logging
import ReactiveUV

/// One FILE as a source of lines: its chunks of whole lines go into the fan-out as they were
/// read (bytes, never decoded), and to the forwarder when there is one.
///
/// A source calls `deliver(chunk)` with chunks of whole lines; the server wires that to
/// ``LineFanOut/ingest(prefix:chunk:)``. Other sources (syslog, NATS) follow the same shape:
/// they need no more than the fan-out's two `ingest` calls on the main loop.
struct FileSource {
    let path: String
    /// Told when the file is missing, appears, is replaced (rotated), truncated, or loses
    /// bytes it could not read: the follower's notices (`TailNotice`), in order with the
    /// chunks. The server logs them.
    let notice: (TailNotice) -> Void

    /// Follows the file from `start` (its end for a FILE; a missing file is waited for and
    /// read from its start). `deliver` gets each chunk; `failed` the error that ends the file.
    ///
    /// With `checkpoints` (plain mode's `--state-dir`) the files the store remembers are
    /// resumed from their positions instead (rotated-away ones first), and each chunk's
    /// position is acknowledged once `deliver` has it.
    func start(from start: TailStart = .end, checkpoints: TailCheckpointStore? = nil, deliver: @escaping ([UInt8]) -> Void,
               failed: @escaping (any Error) -> Void) -> Disposable {
        guard let checkpoints else {
            return File.tailChunks(path, from: start, options: FileSource.options, notices: notice)
                .subscribe(next: deliver, error: failed)
        }
        return File.follow(path, from: start, checkpoints: checkpoints, options: FileSource.options, notices: notice)
            .subscribe(
                next: { chunk in
                    deliver(chunk.bytes)
                    checkpoints.acknowledge(chunk.identity, through: chunk.endOffset)
                },
                error: failed)
    }

    /// How logcast follows a file: a line over the limit (1 MiB) is left out and logged as
    /// lost, and the file goes on being read. (Failing there stopped the file for good: one
    /// binary blob in a log and nothing after it was served or shipped again.)
    static var options: TailOptions {
        var options = TailOptions()
        options.longLines = .skip
        return options
    }
}

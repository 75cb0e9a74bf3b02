import CLibUV

/// Where ``File/tail(_:from:pollInterval:rotationQuietPeriod:maxLineLength:on:)`` starts
/// in the file that exists when it is subscribed (GNU `tail`'s `-n`). A file that appears
/// later (after a rotation, or one that did not exist yet) is always read from its start.
public enum TailStart: Sendable, Equatable, Hashable {
    /// At the end: only lines written from now on. A line still being written (no line
    /// break yet) is sent whole once its break arrives, so the start is just after the
    /// file's last line break (`tail -n 0` starts at the last byte instead and would send
    /// the rest of such a line as if it were a line).
    case end
    /// The last `n` complete lines first (`tail -n N`), then what is appended. An
    /// unfinished last line is not one of the `n`; it is sent once its break arrives.
    /// `n <= 0` is ``end``.
    case lastLines(Int)
    /// From line `k`, counting from 1 (`tail -n +K`). `k <= 1` is ``beginning``; a `k`
    /// beyond the file's end skips the lines still missing as they are appended.
    case line(Int)
    /// The whole file first (`tail -n +1`).
    case beginning
}

extension File {
    /// Follows a file like GNU `tail -F`: its lines, then every line appended, through
    /// truncation and rotation, until disposed.
    ///
    /// **Following.** Appends are noticed through inotify (`uv_fs_event` on the file's
    /// directory) and, because inotify misses events (network and some FUSE file
    /// systems, a directory that does not exist yet), also by polling every
    /// `pollInterval` seconds. What is already in the page cache is read on the loop's
    /// thread without ever waiting for storage (`preadv2` with `RWF_NOWAIT`), 32 KiB per
    /// loop turn; the rest on libuv's thread pool in 256 KiB reads, where a catch-up has
    /// the next read running while the loop delivers the last one's lines.
    ///
    /// **Lines.** Split by ``LineBuffer``. A last line without its line break is held
    /// until the break arrives, not sent early; when a rotation finishes the old file, its
    /// unfinished last line is sent then (its writer has moved on, so it is complete as it
    /// will ever be).
    ///
    /// **Truncation** (the file at the path got smaller than our position): reading starts
    /// again at offset 0, and an unfinished line from before the cut is dropped. This is
    /// what `copytruncate` rotation (logrotate's) looks like: the tool copies the file and
    /// truncates it in place. Lines written between the copy and the truncation are lost
    /// for every reader of the file (they are in neither the copy nor the new contents);
    /// lines delivered before the truncation stay delivered; after the truncation the file
    /// is read from offset 0. A truncation that is followed by enough new writes to pass our
    /// old position before we look (within one poll interval, or one inotify event) cannot
    /// be told from growth, by us or by `tail -F`.
    ///
    /// **Rotation by rename** (the path now names another file, or nothing): the old file
    /// stays open and is read to its end, *including lines its writer appends after the
    /// rename and before it reopens the path* (`tail -F` loses those). The old file is
    /// finished once it has had no new data for `rotationQuietPeriod` seconds and a new
    /// file exists at the path; then the new file is followed from its start. If the path
    /// stays empty, the old file keeps being followed. Files are read strictly in the
    /// order they were at the path, so a single writer's lines arrive exactly once and in
    /// order. A file that is created and renamed away again between two of our looks (an
    /// inotify event or a poll) is never seen, as with `tail -F`.
    ///
    /// **Missing files.** A missing file, or a missing directory on its path, is waited for
    /// (as `tail -F` retries): when it appears it is read from its start. Other failures end
    /// the signal with a ``UVError`` naming the code, operation and path: a file we may not
    /// read (`EACCES` during open; waiting would hide a permission mistake forever, while
    /// a missing file is a normal moment of a rotation), a path through something that is not
    /// a directory (`ENOTDIR` during stat), a directory (`EISDIR`), or a read error.
    ///
    /// - Parameters:
    ///   - path: the file to follow.
    ///   - start: where to start in the file that exists now (default: the last 10 lines,
    ///     like `tail -F`).
    ///   - pollInterval: seconds between polls (the fallback for missed inotify events);
    ///     must be positive.
    ///   - rotationQuietPeriod: how long a rotated-away file must go without new data
    ///     before it is finished and the new file is followed; at least 0.
    ///   - maxLineLength: the longest line accepted, in bytes.
    ///   - loop: the loop to run on (see ``File``).
    /// - Returns: a cold signal of lines. Events arrive on the loop's thread. It never
    ///   completes; it fails with a ``UVError`` as described above, with
    ///   ``LineError/lineTooLong(maxLength:)``, or with `SignalError.invalidArgument` for a
    ///   non-positive poll interval or a negative quiet period. Disposal (from any thread)
    ///   stops the timer and the watch, cancels the request in flight if libuv still can,
    ///   and closes every descriptor.
    public static func tail(
        _ path: String,
        from start: TailStart = .lastLines(10),
        pollInterval: Double = 0.2,
        rotationQuietPeriod: Double = 1.0,
        maxLineLength: Int = LineBuffer.defaultMaxLength,
        on loop: EventLoop? = nil
    ) -> Signal<String> {
        if let invalid = invalidTailArguments(path, pollInterval, rotationQuietPeriod) { return .error(invalid) }
        return follow(path, from: start, pollInterval: pollInterval, rotationQuietPeriod: rotationQuietPeriod,
                      maxLineLength: maxLineLength, on: loop) { send in .lines(send) }
    }

    /// ``tail(_:from:pollInterval:rotationQuietPeriod:maxLineLength:on:)`` delivering whole
    /// lines as byte chunks instead of one `String` per line: each value holds one or more
    /// complete lines, each ending with `\n`, bytes exactly as in the file (a rotated
    /// file's unfinished last line gets a `\n` added). Same rotation, truncation, waiting
    /// and error semantics. For consumers that pass lines on as bytes — a terminal, a
    /// socket — it avoids the per-line allocation that dominates `tail`'s cost, and a
    /// chunk is the very array the read went into (cut at its last line break), so no byte
    /// is copied between the read and the subscriber.
    ///
    /// - Returns: a cold signal of byte chunks, on the loop's thread; never completes.
    public static func tailChunks(
        _ path: String,
        from start: TailStart = .lastLines(10),
        pollInterval: Double = 0.2,
        rotationQuietPeriod: Double = 1.0,
        maxLineLength: Int = LineBuffer.defaultMaxLength,
        on loop: EventLoop? = nil
    ) -> Signal<[UInt8]> {
        if let invalid = invalidTailArguments(path, pollInterval, rotationQuietPeriod) { return .error(invalid) }
        return follow(path, from: start, pollInterval: pollInterval, rotationQuietPeriod: rotationQuietPeriod,
                      maxLineLength: maxLineLength, on: loop) { send in .chunks(send) }
    }

    /// The argument errors `tail` and `tailChunks` report instead of trapping.
    static func invalidTailArguments(_ path: String, _ pollInterval: Double, _ rotationQuietPeriod: Double) -> (any Error)? {
        if !(pollInterval > 0) || !pollInterval.isFinite {
            return SignalError.invalidArgument("File.tail(pollInterval: \(pollInterval)): must be positive")
        }
        if !(rotationQuietPeriod >= 0) || !rotationQuietPeriod.isFinite {
            return SignalError.invalidArgument("File.tail(rotationQuietPeriod: \(rotationQuietPeriod)): must be at least 0")
        }
        if containsNUL(path) {
            return UVError(code: UV_EINVAL.rawValue, operation: "File.tail: a path with a NUL byte", target: path)
        }
        return nil
    }

    /// The subscription behind `tail` and `tailChunks`. `readsCachedDataOnLoop: false`
    /// sends every read to the pool (for tests of that path; see ``TailFollower``).
    static func follow<Value>(
        _ path: String, from start: TailStart, pollInterval: Double, rotationQuietPeriod: Double,
        maxLineLength: Int, on loop: EventLoop?, readsCachedDataOnLoop: Bool = true,
        output: @escaping (@escaping (Value) -> Void) -> TailFollower.Output
    ) -> Signal<Value> {
        return AnonymousSignal { observer, lifetime in
            EventLoop.startWatcher(
                on: loop, operation: "File.tail", target: path, observer: observer, lifetime: lifetime
            ) { loop, send, fail in
                TailFollower(
                    loop: loop, path: path, start: start, pollInterval: pollInterval,
                    quietPeriod: rotationQuietPeriod, maxLineLength: maxLineLength, output: output(send),
                    readsCachedDataOnLoop: readsCachedDataOnLoop, fail: fail)
            }
        }
    }
}

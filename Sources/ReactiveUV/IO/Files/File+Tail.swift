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
    /// Follows every file that lives at `path`, by identity, like GNU `tail -F` but
    /// without its losses: whole lines as ``TailChunk``s tagged with the file and byte
    /// offset they came from, resumable from a ``TailCheckpointStore``, with every
    /// rotation, truncation and loss told through `notices`.
    ///
    /// **Files, not a path.** A file is its device and inode plus a fingerprint of its first
    /// bytes (``FileIdentity``). The path's directory is watched (inotify): every file that
    /// appears at the path is opened at once and read to its end by a reader of its own,
    /// however many rotations happen while reading lags. After a rotation the new file is
    /// read at once; the old one keeps being read — including lines its writer appends
    /// after the rename — until it is deleted, quiet for `rotationQuietPeriod` while a
    /// newer file is at the path, or replaced once more. Files are read in the order they
    /// were at the path: a newer file waits only while an older one still has lines to read
    /// (reading lags), never for the quiet period. Every line comes exactly once; lines a
    /// writer appends to the old file after the rename interleave with the new file's.
    ///
    /// **Start.** What the path holds when `subscribe` runs is opened synchronously and
    /// gets `start`; a file that appears later is read from its first byte, so lines
    /// appended right after `subscribe` returns to a file created then are never skipped.
    /// With `checkpoints`, remembered files are resumed instead (see ``TailCheckpointStore``):
    /// first those rotated away while the process was down (found among the directory's
    /// entries by identity), then the current one.
    ///
    /// **Truncation** is checked at every change event and at every end of file: a file
    /// smaller than our position, or whose first bytes changed (cut and written again past
    /// our position between two looks), is read again from 0; a ``TailNotice/truncated(path:identity:at:)``
    /// says so, and a ``TailNotice/lost(path:identity:range:reason:)`` names the bytes
    /// that were in the file but not read yet (copy-truncate's window is lost to every
    /// reader; this counts what we know was there).
    ///
    /// **Missing files** are waited for (``TailNotice/missing(path:)``, then
    /// ``TailNotice/appeared(path:identity:)``), and so is anything at the path that cannot
    /// be followed for now, as GNU `tail -F` does: a directory, FIFO, socket or device, or a
    /// file we may not read (`EACCES`) — ``TailNotice/unfollowable(path:reason:)`` says so
    /// once, and a readable regular file found there later is read from its start. The
    /// type is checked before any `open`, and the `open` is non-blocking: a FIFO at the
    /// path never holds the loop. Where inotify cannot see changes (network
    /// and FUSE file systems, a failing watch) the path is polled with `uv_fs_poll` and
    /// ``TailNotice/polling(path:reason:)`` says so.
    ///
    /// **Order.** Across any number of rotations, however fast, every line of a file comes
    /// before any line of the file that replaced it at the path (for a writer that finishes
    /// a file before it renames it; lines written to a file after its rename interleave).
    /// A file is read only once every older file has been seen at its end *after* the
    /// newer one was opened, and rotated files found among the siblings are read oldest
    /// first (`app.log.3` before `app.log.1`).
    ///
    /// **Where the work happens.** Reads of uncached data run on libuv's pool; what the
    /// page cache holds is read on the loop thread without waiting (`RWF_NOWAIT`). The
    /// small checks — `stat` of the path at a rename event, `open` and a 64-byte read of a
    /// new file, `fstat` and a 64-byte read at each end of file — are plain system calls on
    /// the loop thread: microseconds on a local file system, a round trip to the server on
    /// a network one.
    ///
    /// - Parameters:
    ///   - path: the file to follow.
    ///   - start: where to start in the file the path holds now (ignored for files the
    ///     store remembers).
    ///   - checkpoints: durable positions to resume from; the follower also records each
    ///     file it opens there (acknowledge with ``TailCheckpointStore/acknowledge(_:through:)``).
    ///   - options: poll interval, quiet period, line limit, open-file limit, polling.
    ///   - notices: called on the loop's thread, in order with the chunks.
    ///   - loop: the loop to run on (see ``File``).
    /// - Returns: a cold signal of chunks on the loop's thread; it never completes. It fails
    ///   with a ``UVError`` (`ENOTDIR during stat`, a read error), ``LineError/lineTooLong(maxLength:)``,
    ///   or `SignalError.invalidArgument` for bad options (a directory or an unreadable file
    ///   at the path is waited on, not an error). Disposal (any thread) stops every
    ///   handle and closes every descriptor.
    public static func follow(
        _ path: String,
        from start: TailStart = .lastLines(10),
        checkpoints: TailCheckpointStore? = nil,
        options: TailOptions = TailOptions(),
        notices: ((TailNotice) -> Void)? = nil,
        on loop: EventLoop? = nil
    ) -> Signal<TailChunk> {
        if let invalid = invalidTailArguments(path, options) { return .error(invalid) }
        return followSignal(path, from: start, checkpoints: checkpoints, options: options, notices: notices, on: loop) {
            send in send
        }
    }

    /// Follows a file like GNU `tail -F`: its lines, then every line appended, through
    /// truncation and rotation, until disposed. ``follow(_:from:checkpoints:options:notices:on:)``
    /// with each chunk split into `String` lines (``LineBuffer``'s rules: one `\r` before
    /// the break dropped, invalid UTF-8 replaced); see there for rotation, truncation,
    /// missing files and errors. A last line without its break is held until the break
    /// arrives; a rotated file's unfinished last line is sent when the file is finished.
    ///
    /// - Parameters:
    ///   - path: the file to follow.
    ///   - start: where to start in the file that exists now (default: the last 10 lines).
    ///   - pollInterval: seconds between checks besides inotify's events; positive.
    ///   - rotationQuietPeriod: how long a rotated-away file is read after its last new
    ///     data while a newer file is at the path; at least 0.
    ///   - maxLineLength: the longest line accepted, in bytes.
    ///   - loop: the loop to run on (see ``File``).
    /// - Returns: a cold signal of lines on the loop's thread; never completes; fails as
    ///   ``follow(_:from:checkpoints:options:notices:on:)`` does.
    public static func tail(
        _ path: String,
        from start: TailStart = .lastLines(10),
        pollInterval: Double = 0.2,
        rotationQuietPeriod: Double = 1.0,
        maxLineLength: Int = LineBuffer.defaultMaxLength,
        on loop: EventLoop? = nil
    ) -> Signal<String> {
        tail(path, from: start, options: options(pollInterval, rotationQuietPeriod, maxLineLength), notices: nil, on: loop)
    }

    /// ``tail(_:from:pollInterval:rotationQuietPeriod:maxLineLength:on:)`` with all of
    /// ``TailOptions`` and the ``TailNotice``s (missing, appeared, replaced, truncated,
    /// lost, polling) for a caller that reports them.
    ///
    /// - Parameters:
    ///   - path: the file to follow.
    ///   - start: where to start in the file that exists now.
    ///   - options: how to follow.
    ///   - notices: called on the loop's thread, in order with the lines.
    ///   - loop: the loop to run on (see ``File``).
    /// - Returns: a cold signal of lines on the loop's thread; never completes.
    public static func tail(
        _ path: String, from start: TailStart = .lastLines(10), options: TailOptions,
        notices: ((TailNotice) -> Void)?, on loop: EventLoop? = nil
    ) -> Signal<String> {
        if let invalid = invalidTailArguments(path, options) { return .error(invalid) }
        return followSignal(path, from: start, checkpoints: nil, options: options, notices: notices, on: loop) { send in
            var lines = LineBuffer(maxLength: options.maxLineLength)
            // Whole lines already checked against the limit: this cannot throw.
            return { chunk in try? lines.append(chunk.bytes, send) }
        }
    }

    /// ``tail(_:from:pollInterval:rotationQuietPeriod:maxLineLength:on:)`` delivering whole
    /// lines as byte chunks instead of one `String` per line: each value holds one or more
    /// complete lines, each ending with `\n`, bytes exactly as in the file (a rotated
    /// file's unfinished last line gets a `\n` added). Same rotation, truncation, waiting
    /// and error semantics. A chunk is the very array the read went into (cut at its last
    /// line break), so no byte is copied between the read and the subscriber.
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
        tailChunks(path, from: start, options: options(pollInterval, rotationQuietPeriod, maxLineLength), notices: nil, on: loop)
    }

    /// ``tailChunks(_:from:pollInterval:rotationQuietPeriod:maxLineLength:on:)`` with all of
    /// ``TailOptions`` and the ``TailNotice``s.
    ///
    /// - Parameters:
    ///   - path: the file to follow.
    ///   - start: where to start in the file that exists now.
    ///   - options: how to follow.
    ///   - notices: called on the loop's thread, in order with the chunks.
    ///   - loop: the loop to run on (see ``File``).
    /// - Returns: a cold signal of byte chunks, on the loop's thread; never completes.
    public static func tailChunks(
        _ path: String, from start: TailStart = .lastLines(10), options: TailOptions,
        notices: ((TailNotice) -> Void)?, on loop: EventLoop? = nil
    ) -> Signal<[UInt8]> {
        if let invalid = invalidTailArguments(path, options) { return .error(invalid) }
        return followSignal(path, from: start, checkpoints: nil, options: options, notices: notices, on: loop) { send in
            { chunk in send(chunk.bytes) }
        }
    }

    static func options(_ pollInterval: Double, _ rotationQuietPeriod: Double, _ maxLineLength: Int) -> TailOptions {
        var options = TailOptions()
        options.pollInterval = pollInterval
        options.rotationQuietPeriod = rotationQuietPeriod
        options.maxLineLength = maxLineLength
        return options
    }

    /// The argument errors the tails report instead of trapping.
    static func invalidTailArguments(_ path: String, _ options: TailOptions) -> (any Error)? {
        if !(options.pollInterval > 0) || !options.pollInterval.isFinite {
            return SignalError.invalidArgument("File.tail(pollInterval: \(options.pollInterval)): must be positive")
        }
        if !(options.rotationQuietPeriod >= 0) || !options.rotationQuietPeriod.isFinite {
            return SignalError.invalidArgument(
                "File.tail(rotationQuietPeriod: \(options.rotationQuietPeriod)): must be at least 0")
        }
        if options.maxOpenFiles < 1 {
            return SignalError.invalidArgument("File.tail(maxOpenFiles: \(options.maxOpenFiles)): must be at least 1")
        }
        if containsNUL(path) {
            return UVError(code: UV_EINVAL.rawValue, operation: "File.tail: a path with a NUL byte", target: path)
        }
        return nil
    }

    /// The subscription behind every tail: the synchronous start (``TailFollower/plan(_:start:store:sendsUnfinishedLastLine:)``)
    /// on the subscribing thread, then a ``TailFollower`` on the loop; `output` is given
    /// the subscription's `send` and makes what each chunk goes to (once per subscription,
    /// so it may keep state, such as a ``LineBuffer``).
    static func followSignal<Value>(
        _ path: String, from start: TailStart, checkpoints: TailCheckpointStore?, options: TailOptions,
        notices: ((TailNotice) -> Void)?, on loop: EventLoop?,
        output: @escaping (@escaping (Value) -> Void) -> (TailChunk) -> Void
    ) -> Signal<Value> {
        AnonymousSignal { observer, lifetime in
            let plan: TailPlan
            switch TailFollower.plan(
                path, start: start, store: checkpoints, sendsUnfinishedLastLine: options.sendsUnfinishedLastLineAtStart)
            {
            case .failure(let error):
                observer(.error(error))
                return
            case .success(let made):
                plan = made
            }
            var madeFollower = false
            EventLoop.startWatcher(
                on: loop, operation: "File.tail", target: path, observer: observer, lifetime: lifetime
            ) { loop, send, fail in
                madeFollower = true
                return TailFollower(
                    loop: loop, path: path, plan: plan, options: options, store: checkpoints,
                    emit: output(send), notices: notices, fail: fail)
            }
            // A closed loop: no follower took the descriptors.
            if !madeFollower { plan.closeAll() }
        }
    }
}

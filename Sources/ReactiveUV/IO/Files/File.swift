import CLibUV

/// Files as signals: reading, line splitting, following (`tail -F`) and watching, all on a
/// libuv loop.
///
/// Every signal here is cold: each subscription opens its own file (or handle) when it
/// starts and closes it when it ends. They run on the loop given as `on:`, by default the
/// subscribing thread's loop (``EventLoop/main`` on the main thread, the pool loop on a
/// background scheduler's thread) or else ``EventLoop/main``; events arrive on that loop's
/// thread. A subscription made on the loop's thread starts at once; one made on another
/// thread starts when the loop gets to it. Disposal may come from any thread: it hops to
/// the loop, cancels the request in flight when libuv still can, and closes the file.
///
/// Failures are ``UVError``s naming the libuv code (`ENOENT`, `EACCES`, ...), the
/// operation and the path: `ENOENT (no such file or directory) during open on /var/log/x`.
public enum File {
    /// The default chunk size of ``read(_:chunkSize:on:)``: 64 KiB.
    public static var defaultChunkSize: Int { 64 * 1024 }

    /// The file's contents as byte chunks, read with libuv's asynchronous fs requests
    /// (`uv_fs_open`, `uv_fs_read`, `uv_fs_close` on libuv's thread pool).
    ///
    /// Each chunk is a new array of at most `chunkSize` bytes (the read itself goes into
    /// one buffer reused for the whole file). The signal completes at end of file, after
    /// the file is closed. `--[bytes]--[bytes]--|`
    ///
    /// - Parameters:
    ///   - path: the file to read.
    ///   - chunkSize: the largest chunk, in bytes; at least 1.
    ///   - loop: the loop to run on (see ``File``).
    /// - Returns: a cold signal of chunks. Events arrive on the loop's thread. It fails
    ///   with a ``UVError`` when the file cannot be opened or read (`ENOENT` during open on
    ///   the path, `EISDIR` during read, ...), or with `SignalError.invalidArgument` for a
    ///   chunk size below 1. Disposal stops reading (also in the middle of a read: the
    ///   chunk being read is dropped) and closes the file.
    public static func read(_ path: String, chunkSize: Int = File.defaultChunkSize, on loop: EventLoop? = nil) -> Signal<[UInt8]> {
        if chunkSize < 1 {
            return .error(SignalError.invalidArgument("File.read(chunkSize: \(chunkSize)): the chunk size must be at least 1"))
        }
        return readerSignal(path, operation: "File.read", chunkSize: chunkSize, on: loop) { observer, lifetime in
            (
                consume: { chunk in
                    if !lifetime.isDisposed { observer(.next(Array(chunk))) }
                    return true
                },
                atEnd: {}
            )
        }
    }

    /// The file's lines, read with libuv's asynchronous fs requests in large chunks and
    /// split by ``LineBuffer`` (a line ends at `\n`, one `\r` before it is dropped, UTF-8
    /// with invalid bytes replaced).
    ///
    /// A last line without a line break is sent before completion.
    ///
    /// - Parameters:
    ///   - path: the file to read.
    ///   - maxLength: the longest line accepted, in bytes.
    ///   - loop: the loop to run on (see ``File``).
    /// - Returns: a cold signal of lines. Events arrive on the loop's thread. It completes
    ///   at end of file; fails with a ``UVError`` like ``read(_:chunkSize:on:)``, or with
    ///   ``LineError/lineTooLong(maxLength:)``. Disposal stops reading and closes the file.
    public static func lines(_ path: String, maxLength: Int = LineBuffer.defaultMaxLength, on loop: EventLoop? = nil) -> Signal<String> {
        readerSignal(path, operation: "File.lines", chunkSize: TailFollower.chunkSize, on: loop) { observer, lifetime in
            var buffer = LineBuffer(maxLength: maxLength)
            let emit: (String) -> Void = { line in
                if !lifetime.isDisposed { observer(.next(line)) }
            }
            return (
                consume: { chunk in
                    do {
                        try buffer.append(chunk, emit)
                        return true
                    } catch {
                        if !lifetime.isDisposed {
                            observer(.error(error))
                            lifetime.dispose()
                        }
                        return false
                    }
                },
                atEnd: {
                    if let last = buffer.finish() { emit(last) }
                }
            )
        }
    }

    /// The subscription plumbing shared by `read` and `lines`: pick the loop, start a
    /// ``FileReader`` there, stop it on disposal.
    private static func readerSignal<Value>(
        _ path: String, operation: String, chunkSize: Int, on loop: EventLoop?,
        _ makeConsumer: @escaping (
            _ observer: @escaping (Event<Value>) -> Void, _ lifetime: CompoundDisposable
        ) -> (consume: (UnsafeRawBufferPointer) -> Bool, atEnd: () -> Void)
    ) -> Signal<Value> {
        if containsNUL(path) {
            return .error(UVError(code: UV_EINVAL.rawValue, operation: "\(operation): a path with a NUL byte", target: path))
        }
        return AnonymousSignal { observer, lifetime in
            let loop = EventLoop.sourceLoop(loop)
            if loop.isClosed {
                observer(.error(closedLoopError(operation, path)))
                return
            }
            let consumer = makeConsumer(observer, lifetime)
            let reader = FileReader(
                loop: loop, path: path, chunkSize: chunkSize,
                consume: consumer.consume, atEnd: consumer.atEnd,
                finish: { error in
                    if lifetime.isDisposed { return }
                    observer(error.map { .error($0) } ?? .completed)
                    lifetime.dispose()
                })
            lifetime.add(Disposable { loop.perform { reader.stop() } })
            // A `send` subscribing to us (a file sent to a socket, a child's input) can
            // pause the reads while its peer is slow.
            FlowControl.current?.add(reader)
            loop.perform { reader.start() }
        }
    }
}

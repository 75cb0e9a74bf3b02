import CLibUV
import CSystemShims
import Glibc

/// The process's standard input as signals.
///
/// What fd 0 is decides how it is read (`uv_guess_handle`): a terminal through `uv_tty_t`
/// (libuv reopens the terminal, so the shell's file description is left alone), a pipe or
/// socket through `uv_pipe_t`, a file or device (`< file`, `/dev/null`) with `uv_fs_read`
/// requests. A pipe is switched to non-blocking mode while read (libuv needs it) and
/// switched back when the subscription ends. fd 0 itself is never closed.
///
/// One subscription reads at a time (a second concurrent one fails with `EBUSY`); a later
/// subscription goes on where the previous one stopped, except that bytes libuv had
/// already read into a chunk the disposed subscription did not take are gone. Events
/// arrive on the loop's thread: by default the subscribing thread's loop when it is a loop
/// thread, else ``EventLoop/main``.
public enum StandardInput {
    /// Standard input's bytes, chunk by chunk, until end of input: completion.
    ///
    /// Subscribing opens a handle on fd 0 and starts reading; disposing (from any thread)
    /// stops and closes the handle. Fails with a ``UVError`` naming `stdin` (`EBADF` when
    /// fd 0 is closed, `EBUSY` while another subscription reads).
    public static var reads: Signal<[UInt8]> { reads(on: nil) }

    /// Standard input's bytes on a chosen loop (see ``reads``).
    ///
    /// - Parameter loop: the loop to read on; `nil` for the default.
    /// - Returns: a cold signal of chunks.
    public static func reads(on loop: EventLoop?) -> Signal<[UInt8]> {
        reads(fd: 0, name: "stdin", exclusive: true, on: loop)
    }

    /// Standard input as UTF-8 lines without their breaks (`\n`, `\r\n`), split with
    /// ``LineBuffer``; the last line without a break is sent at end of input. A line over
    /// 1 MiB fails with ``LineError/lineTooLong(maxLength:)``.
    ///
    /// ```swift
    /// StandardInput.lines.subscribeNext { print("got", $0) }
    /// EventLoop.main.run()
    /// ```
    public static var lines: Signal<String> { reads.lines() }

    /// Standard input as lines, with a chosen limit and loop (see ``lines``).
    ///
    /// - Parameters:
    ///   - maxLength: the longest line accepted, in bytes.
    ///   - loop: the loop to read on; `nil` for the default.
    /// - Returns: a cold signal of lines.
    public static func lines(maxLength: Int = LineBuffer.defaultMaxLength, on loop: EventLoop? = nil) -> Signal<String> {
        reads(on: loop).lines(maxLength: maxLength)
    }

    /// Whether a subscription is reading fd 0 (only one may).
    private static let busy = UnsafeAtomicInt(0)

    /// fd 0's file status flags before the first subscription (read on first use).
    private static let originalFlags: Int32 = fcntl(0, F_GETFL)

    /// Reads any inherited descriptor the way standard input is read (tests use a
    /// `pipe(2)`). The descriptor is not closed when it is 0, 1 or 2 (libuv's rule); a
    /// higher one is, when read through a pipe or terminal handle.
    static func reads(fd: Int32, name: String, exclusive: Bool, on requestedLoop: EventLoop?) -> Signal<[UInt8]> {
        AnonymousSignal { observer, lifetime in
            let loop = EventLoop.sourceLoop(requestedLoop)
            loop.start(observer, lifetime, operation: "read", target: name) {
                if exclusive {
                    guard busy.compareExchange(expected: 0, desired: 1) else {
                        observer(.error(UVError(code: UV_EBUSY.rawValue, operation: "read (another subscription is reading)", target: name)))
                        lifetime.dispose()
                        return
                    }
                    lifetime.add(Disposable { busy.store(0) })
                }
                switch uv_guess_handle(fd) {
                case UV_TTY, UV_NAMED_PIPE, UV_TCP:
                    readStream(
                        fd: fd, name: name, restoreFlags: exclusive, loop: loop, observer: observer, lifetime: lifetime)
                case UV_FILE:
                    DescriptorFileReader(loop: loop, fd: fd, name: name, observer: observer, lifetime: lifetime).start()
                default:
                    observer(.error(UVError(code: UV_EBADF.rawValue, operation: "read", target: name)))
                    lifetime.dispose()
                }
            }
        }
    }

    /// Reads a terminal, pipe or socket through a stream handle (loop thread).
    private static func readStream(
        fd: Int32, name: String, restoreFlags: Bool, loop: EventLoop,
        observer: @escaping Sink<[UInt8]>, lifetime: CompoundDisposable
    ) {
        let isTTY = uv_guess_handle(fd) == UV_TTY
        // libuv makes the descriptor non-blocking; remember fd 0's flags as they were before
        // any subscription touched them, to put them back.
        let savedFlags = restoreFlags ? originalFlags : -1
        let stream: UVStream
        do {
            stream = try UVStream(loop: loop, type: isTTY ? UV_TTY : UV_NAMED_PIPE, target: name, operation: "read") {
                isTTY ? uv_tty_init(loop.uvLoop, uvCast($0), fd, 1) : uv_pipe_init(loop.uvLoop, uvCast($0), 0)
            }
            if !isTTY {
                let rc = uv_pipe_open(uvCast(stream.handle), fd)
                if rc < 0 {
                    stream.close()
                    throw UVError(code: rc, operation: "read", target: name)
                }
            }
        } catch {
            observer(.error(error))
            lifetime.dispose()
            return
        }
        // Put fd 0's flags back once the handle is closed, unless a new subscription has
        // started reading it meanwhile (it wants non-blocking mode). Only for standard input:
        // libuv closes other descriptors, whose numbers may be reused by then.
        if restoreFlags && !isTTY && savedFlags >= 0 && fd <= 2 {
            stream.whenClosed { _ in
                if busy.load() == 0 { _ = fcntl(fd, F_SETFL, savedFlags) }
            }
        }
        lifetime.add(Disposable { loop.perform { stream.close() } })
        stream.readSignal().attach(observer, lifetime)
    }
}

/// Reads a descriptor that libuv cannot poll (a regular file, `/dev/null`) with one
/// `uv_fs_read` request after another, from its current position. Loop thread only.
///
/// The request and the buffer are heap memory freed when the last request finishes; a
/// disposed subscription stops asking for more (a read in progress is cancelled when it
/// has not started yet, otherwise its result is dropped).
final class DescriptorFileReader: @unchecked Sendable {
    // Thread-safety: loop thread only; the disposal hops there.
    let loop: EventLoop
    let fd: Int32
    let name: String
    let observer: Sink<[UInt8]>
    let lifetime: CompoundDisposable
    /// The one `uv_fs_t`, reused; its owner is this reader while a read is in flight.
    let request = UVRequest<uv_fs_t>(UV_FS)
    let buffer = UnsafeMutableRawPointer.allocate(byteCount: UVStream.readBufferSize, alignment: 16)
    var inFlight = false

    init(loop: EventLoop, fd: Int32, name: String, observer: @escaping Sink<[UInt8]>, lifetime: CompoundDisposable) {
        self.loop = loop
        self.fd = fd
        self.name = name
        self.observer = observer
        self.lifetime = lifetime
    }

    deinit {
        buffer.deallocate()
    }

    func start() {
        lifetime.add(Disposable { [self] in
            // EBUSY (the read is running) is expected: its result is dropped.
            loop.perform { if self.inFlight { self.request.cancel() } }
        })
        readNext()
    }

    private func readNext() {
        var buf = uv_buf_init(buffer.assumingMemoryBound(to: CChar.self), UInt32(UVStream.readBufferSize))
        // The request holds the reader until its callback.
        request.owner = self
        do {
            try request.submit("read", name) { request in
                uv_fs_read(loop.uvLoop, request, fd, &buf, 1, -1) { request in
                    guard let request else { return }
                    let uvRequest = UVRequest<uv_fs_t>.finish(request)
                    let reader = uvRequest.owner(as: DescriptorFileReader.self)
                    uvRequest.owner = nil
                    let result = request.pointee.result
                    uv_fs_req_cleanup(request)
                    reader.inFlight = false
                    reader.finished(result)
                }
            }
        } catch {
            request.owner = nil
            fail(error as? UVError ?? UVError(code: UV_EINVAL.rawValue, operation: "read", target: name))
            return
        }
        inFlight = true
    }

    private func finished(_ result: Int) {
        if lifetime.isDisposed { return }
        if result > 0 {
            let bytes = buffer.assumingMemoryBound(to: UInt8.self)
            observer(.next([UInt8](UnsafeBufferPointer(start: bytes, count: result))))
            if !lifetime.isDisposed { readNext() }
        } else if result == 0 {
            observer(.completed)
            lifetime.dispose()
        } else if result != Int(UV_ECANCELED.rawValue) {
            fail(UVError(code: Int32(result), operation: "read", target: name))
        }
    }

    private func fail(_ error: UVError) {
        if !lifetime.isDisposed { observer(.error(error)) }
        lifetime.dispose()
    }
}

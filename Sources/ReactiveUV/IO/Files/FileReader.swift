import CLibUV
import Glibc

/// One subscription of ``File/read(_:chunkSize:on:)`` or ``File/lines(_:maxLength:on:)``:
/// open, read chunk after chunk into one reused buffer, close, all as libuv fs requests on
/// the loop's thread.
///
/// The chunk consumer decides what a chunk becomes (an array, or lines). Disposal (``stop()``,
/// on the loop's thread) cancels the request in flight when it has not started, and in
/// every case closes the file once the request is back; the terminal event, when there is
/// one, is sent after the file is closed.
///
/// Thread-safety: loop-thread confined. ``File`` reaches the loop with
/// ``EventLoop/perform(_:)`` for `start` and `stop`.
final class FileReader: LoopResource, PausableSource, @unchecked Sendable {
    let loop: EventLoop
    let path: String
    /// Gets each chunk; returns `false` when it failed the subscription itself (a line over
    /// the limit), which stops reading.
    let consume: (UnsafeRawBufferPointer) -> Bool
    /// Sends the terminal event: `nil` is completion (after `atEnd`), otherwise the error.
    let finish: ((any Error)?) -> Void
    /// Called at end of file before completion (the last partial line goes out here).
    let atEnd: () -> Void

    private let request: FileRequest
    private let buffer: UnsafeMutableRawBufferPointer
    private var fd: Int32 = -1
    private var offset: Int64 = 0
    /// Set by disposal (or loop shutdown): no more events, wind down.
    private var stopped = false
    /// Whether we registered with the loop (so we unregister exactly once).
    private var registered = false
    /// Paused by a writer's backpressure (see ``FlowControl``): the next read waits.
    private var paused = false
    /// A chunk was consumed while paused: the next read is issued at the resume.
    private var waitingForResume = false

    init(
        loop: EventLoop, path: String, chunkSize: Int,
        consume: @escaping (UnsafeRawBufferPointer) -> Bool,
        atEnd: @escaping () -> Void,
        finish: @escaping ((any Error)?) -> Void
    ) {
        self.loop = loop
        self.path = path
        self.consume = consume
        self.atEnd = atEnd
        self.finish = finish
        request = FileRequest(loop: loop)
        buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize, alignment: 16)
    }

    deinit {
        // Every read completion captures `self`, so no read into this buffer is pending.
        buffer.deallocate()
    }

    /// Opens the file (loop thread).
    func start() {
        if stopped { return }
        if loop.isClosed {
            finish(closedLoopError("File.read", path))
            return
        }
        loop.register(self)
        registered = true
        request.open(path, flags: O_RDONLY) { [self] rc in opened(rc) }
    }

    /// Ends the subscription without another event (loop thread; re-entrant from inside
    /// `consume`). Cancels the request in flight; its completion closes the file.
    func stop() {
        if stopped { return }
        stopped = true
        if waitingForResume {
            // No request in flight to bring the close: close now.
            waitingForResume = false
            return closeFile(then: nil)
        }
        // Never cancel the close: a cancelled close would leak the descriptor.
        if !closing { request.cancel() }
    }

    func closeForLoopShutdown() { stop() }

    private var closing = false

    private func opened(_ rc: Int) {
        if rc >= 0 { fd = Int32(rc) }
        if stopped { return closeFile(then: nil) }
        if rc < 0 { return closeFile(then: uvError(rc, "open", path)) }
        readNext()
    }

    private func readNext() {
        request.read(fd, into: buffer, at: offset) { [self] n in didRead(n) }
    }

    private func didRead(_ n: Int) {
        if stopped { return closeFile(then: nil) }
        if n < 0 { return closeFile(then: uvError(n, "read", path)) }
        if n == 0 {
            atEnd()
            return closeFile(then: nil, completing: true)
        }
        offset += Int64(n)
        let keepGoing = consume(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
        // The consumer may have disposed the subscription (a user callback) or failed it.
        if stopped || !keepGoing {
            stopped = true
            return closeFile(then: nil)
        }
        if paused {
            waitingForResume = true
            return
        }
        readNext()
    }

    /// Pauses or resumes reading, from any thread: a paused reader finishes the read in
    /// flight and delivers it, then issues no other until resumed.
    func setPaused(_ paused: Bool) {
        loop.perform { [self] in
            self.paused = paused
            if !paused && waitingForResume && !stopped {
                waitingForResume = false
                readNext()
            }
        }
    }

    /// Closes the descriptor (if any), then sends the terminal event (an error, or
    /// completion when `completing`) unless disposed, then lets go of the loop.
    private func closeFile(then error: (any Error)?, completing: Bool = false) {
        let report = {
            if !self.stopped {
                self.stopped = true
                if let error {
                    self.finish(error)
                } else if completing {
                    self.finish(nil)
                }
            }
            self.done()
        }
        guard fd >= 0 else { return report() }
        closing = true
        let descriptor = fd
        request.close(descriptor) { [self] _ in
            fd = -1
            closing = false
            report()
        }
    }

    private func done() {
        if registered {
            registered = false
            loop.unregister(self)
        }
    }
}

import CLibUV
import Glibc

/// One subscription to a stream's bytes (loop thread only).
final class StreamReader {
    let sink: Sink<[UInt8]>
    let lifetime: CompoundDisposable
    /// Paused by a writer's backpressure (see ``FlowControl``).
    var paused = false

    init(_ sink: @escaping Sink<[UInt8]>, _ lifetime: CompoundDisposable) {
        self.sink = sink
        self.lifetime = lifetime
    }

    /// Sends the `count` bytes at `bytes` as one chunk, built in `scratch`'s spare array
    /// and handed back to it once the subscriber returned. A method of the reader so that
    /// its `let`s are read from a guaranteed `self` (fewer retains than reading them
    /// through the stream's optional `reader`).
    @inline(__always)
    func deliver(_ bytes: UnsafePointer<UInt8>, _ count: Int, _ scratch: ReadScratch) {
        if lifetime.isDisposed { return }
        // The event owns the chunk and gives it back to the scratch after the call: built
        // from a borrowed chunk (`.next(chunk)`, then `recycle(chunk)`) it cost a retain
        // and a release per read (callgrind, ruv-echo).
        let event = Event.next(scratch.chunk(bytes, count))
        sink(event)
        if case .next(let chunk) = consume event { scratch.recycle(chunk) }
    }
}

extension UVStream {
    /// The stream's bytes as a signal: `reads` of connections, standard input and pipes.
    ///
    /// Each subscription starts reading (`uv_read_start`) on the loop thread and stops
    /// (`uv_read_stop`) when disposed; the handle stays open. One subscription reads at a
    /// time: a second one, while the first is active, fails with `EBUSY`. End of stream is
    /// completion; a read error closes the stream and fails the subscription.
    ///
    /// While a ``FlowControl`` is being collected on the subscribing thread (a `send` is
    /// subscribing to its source), the subscription registers itself there, so the writer
    /// can pause it when its peer is slow.
    func readSignal() -> Signal<[UInt8]> {
        AnonymousSignal { [self] observer, lifetime in
            let reader = StreamReader(observer, lifetime)
            FlowControl.current?.add(PausableRead(stream: self, reader: reader))
            lifetime.add(Disposable { [self] in loop.perform { self.stopReading(reader) } })
            loop.start(observer, lifetime, operation: "read", target: target) { self.startReading(reader) }
        }
    }

    /// Makes `reader` the stream's reader (loop thread).
    func startReading(_ reader: StreamReader) {
        guard state == .open else {
            if let closeReason { reader.sink(.error(closeReason)) } else { reader.sink(.completed) }
            reader.lifetime.dispose()
            return
        }
        if readEOF {
            reader.sink(.completed)
            reader.lifetime.dispose()
            return
        }
        if self.reader != nil {
            reader.sink(.error(UVError(
                code: UV_EBUSY.rawValue, operation: "read (another subscription is reading)", target: target)))
            reader.lifetime.dispose()
            return
        }
        // The thread's read memory, looked up once (here, on the loop thread) rather than
        // in every alloc_cb and read_cb.
        if readScratch == nil { readScratch = ReadScratch.current }
        self.reader = reader
        updateReading()
    }

    /// Forgets `reader` if it is still the stream's reader (its subscription ended).
    func stopReading(_ reader: StreamReader) {
        guard self.reader === reader else { return }
        self.reader = nil
        updateReading()
    }

    /// Pauses or resumes `reader` for backpressure (loop thread).
    func setPaused(_ reader: StreamReader, _ paused: Bool) {
        guard reader.paused != paused else { return }
        reader.paused = paused
        if self.reader === reader { updateReading() }
    }

    /// Whether the current reader is paused by backpressure (tests).
    var isReadingPaused: Bool { reader?.paused ?? false }

    /// Starts or stops libuv's reading to match: read while open, not at end of stream, and
    /// a reader exists that is not paused.
    func updateReading() {
        guard state == .open else { return }
        let wanted = !readEOF && (reader.map { !$0.paused } ?? false)
        if wanted && !isReading {
            do {
                try uv.started(uv_read_start(uvStream, UVStream.allocCallback, UVStream.readCallback), "read")
            } catch {
                close(error)
                return
            }
            isReading = true
        } else if !wanted && isReading {
            isReading = false
            // uv_read_stop cannot fail on an open stream (it returns 0 since libuv 1.x);
            // checked all the same.
            do { try uv.check(uv_read_stop(uvStream), "read stop") } catch { close(error) }
        }
    }

    /// Hands libuv the loop thread's one read buffer (``ReadScratch``).
    private static let allocCallback: uv_alloc_cb = { handle, _, buffer in
        guard let handle, let buffer else { return }
        // Reading starts only after `startReading` set the scratch.
        let scratch = UVStream.from(handle).readScratch.unsafelyUnwrapped
        buffer.pointee = uv_buf_t(base: scratch.buffer.assumingMemoryBound(to: CChar.self), len: UVStream.readBufferSize)
    }

    /// Copies the bytes out and sends them; end of stream completes; errors close.
    ///
    /// The stream is called unretained (a retain and a release per read, measured in
    /// ruv-echo under callgrind). Sound: the handle's ``UVHandle`` holds the stream strongly
    /// until the close callback, and libuv runs close callbacks only from `uv_run`, which is
    /// not re-entered from inside this loop's callbacks (``EventLoop`` refuses), so the
    /// stream outlives this call even when a subscriber closes it.
    private static let readCallback: uv_read_cb = { handle, count, buffer in
        guard let handle else { return }
        Unmanaged.passUnretained(UVStream.from(handle))._withUnsafeGuaranteedRef {
            $0.didRead(count, buffer?.pointee.base)
        }
    }

    func didRead(_ count: Int, _ base: UnsafeMutablePointer<CChar>?) {
        if count > 0, let base {
            // The reader and the scratch are called unretained (two retains and two
            // releases per read, measured in ruv-echo under callgrind). Sound:
            // - the reader: `self.reader` holds it, and while `deliveryDepth` is non-zero a
            //   reader cleared or replaced there (the subscriber disposed itself or closed the
            //   stream inside `sink`) is parked in `retiredReaders` instead of released, so
            //   it lives until the delivery returned (StreamReadLifetimeTests);
            // - the scratch: `readScratch` is set once and never cleared, and the thread's
            //   pthread key holds it too, until the thread ends.
            guard let reader = reader.map({ Unmanaged.passUnretained($0) }) else { return }
            let scratch = Unmanaged.passUnretained(readScratch.unsafelyUnwrapped)
            deliveryDepth &+= 1
            reader._withUnsafeGuaranteedRef { reader in
                scratch._withUnsafeGuaranteedRef { scratch in
                    reader.deliver(UnsafeRawPointer(base).assumingMemoryBound(to: UInt8.self), count, scratch)
                }
            }
            deliveryDepth &-= 1
            if deliveryDepth == 0 && !retiredReaders.isEmpty { retiredReaders.removeAll() }
        } else if count == Int(UV_EOF.rawValue) {
            // libuv has stopped reading by itself.
            isReading = false
            readEOF = true
            if let reader {
                self.reader = nil
                if !reader.lifetime.isDisposed { reader.sink(.completed) }
                reader.lifetime.dispose()
            }
            // Both directions are done: the connection is over.
            if shutdownState == .done { close() }
        } else if count < 0 {
            close(uvError(count, "read", target))
        }
        // 0 is libuv's EAGAIN: nothing to do.
    }
}

/// A read subscription a writer may pause: what ``FlowControl`` collects.
final class PausableRead: PausableSource, @unchecked Sendable {
    // Thread-safety: immutable; the pause itself runs on the stream's loop thread.
    let stream: UVStream
    let reader: StreamReader

    init(stream: UVStream, reader: StreamReader) {
        self.stream = stream
        self.reader = reader
    }

    /// Pauses or resumes the read, from any thread (hops to the stream's loop).
    func setPaused(_ paused: Bool) {
        let stream = self.stream
        let reader = self.reader
        stream.loop.perform { stream.setPaused(reader, paused) }
    }
}

import CLibUV

// A connection's lines outlive the subscription reading them. A protocol often reads one
// line and then the rest (`c.lines.take(1).concat(c.lines)`: a header, then the body; a
// command, then its payload); the peer's bytes come in chunks that hold several lines, so
// when the first subscription ends after its line, the lines after it are already out of
// the socket. Split by a splitter of that subscription's own, they went with it — the body
// lost without an error (found by probing, 2026-11-27). The splitting state is the
// connection's instead: the next `lines` subscription gets the rest of the chunk and the
// partial line first, in order, and a subscription made from inside a line's delivery (as
// `concat` does) gets the lines of the chunk being split without a break.

/// The line splitting a connection keeps between its ``StreamConnection/lines``
/// subscriptions: the partial line, and the rest of a chunk its subscriber left in the
/// middle of. One subscriber at a time (another one fails with `EBUSY`, as ``StreamConnection/reads``).
///
/// Thread-safety: loop-thread confined (subscriptions hop there with `loop.start`).
/// `package`: ReactiveUVTLS's connections keep their lines the same way.
package final class ConnectionLines {
    private let loop: EventLoop
    /// What errors name (the peer).
    private let target: String
    /// The connection's reads, subscribed while a subscriber takes lines.
    private let makeReads: () -> Signal<[UInt8]>
    private var buffer = LineBuffer()
    /// The rest of a chunk whose subscriber left after one of its lines: split first for
    /// the next subscriber.
    private var unsplit: [UInt8] = []
    private var observer: Sink<String>?
    private var lifetime: CompoundDisposable?
    /// The subscription to the stream's reads while someone takes lines.
    private var reading: CompoundDisposable?
    /// Whether a chunk is being split (a subscriber leaving and another arriving inside a
    /// delivery is handed the rest of the chunk by the split itself).
    private var splitting = false
    /// A terminal event of the reads that arrived during a split.
    private var deferredEnd: Event<[UInt8]>?
    /// The line limit of `buffer` (kept apart: `buffer` is being mutated during a split,
    /// when a subscriber made in a delivery asks for its limit).
    private var limit = LineBuffer.defaultMaxLength
    /// A limit asked for during a split, applied when the split returns.
    private var limitAfterSplit: Int?
    /// A subscriber made while the current one was being given a line: it takes over if
    /// the current one is gone when that delivery returns (`take(n)` completes its
    /// downstream, which subscribes the next, before it disposes its upstream), else it
    /// fails with `EBUSY`.
    private var successor: (observer: Sink<String>, lifetime: CompoundDisposable, maxLength: Int)?

    /// - Parameters:
    ///   - loop: the connection's loop.
    ///   - target: the peer, for errors.
    ///   - reads: the connection's reads (one subscription at a time, made on `loop`).
    package init(loop: EventLoop, target: String, reads: @escaping () -> Signal<[UInt8]>) {
        self.loop = loop
        self.target = target
        makeReads = reads
    }

    /// A connection's `lines(maxLength:)`: each subscription hops to `loop` and attaches
    /// to the splitting `lines()` returns there (the connection's, made on first use).
    package static func signal(
        loop: EventLoop, target: String, maxLength: Int, _ lines: @escaping () -> ConnectionLines
    ) -> Signal<String> {
        AnonymousSignal { observer, lifetime in
            loop.start(observer, lifetime, operation: "read", target: target) {
                lines().attach(maxLength: maxLength, observer, lifetime)
            }
        }
    }

    /// Starts a subscriber (loop thread).
    func attach(maxLength: Int, _ observer: @escaping Sink<String>, _ lifetime: CompoundDisposable) {
        if self.observer != nil {
            if splitting && successor == nil {
                successor = (observer, lifetime, maxLength)
            } else {
                busy(observer, lifetime)
            }
            return
        }
        if splitting {
            limitAfterSplit = maxLength
        } else {
            setLimit(maxLength)
        }
        self.observer = observer
        self.lifetime = lifetime
        let loop = self.loop
        lifetime.add(Disposable { [self] in loop.perform { self.detach(lifetime) } })
        if splitting { return }  // the chunk being split goes on into this subscriber
        if !unsplit.isEmpty {
            let rest = unsplit
            unsplit = []
            rest.withUnsafeBytes { split($0) }
            if self.observer == nil || self.lifetime !== lifetime { return }
        }
        startReading()
    }

    /// Fails a subscriber made while another one reads.
    private func busy(_ observer: Sink<String>, _ lifetime: CompoundDisposable) {
        if lifetime.isDisposed { return }
        observer(.error(UVError(code: UV_EBUSY.rawValue, operation: "read (another subscription is reading)", target: target)))
        lifetime.dispose()
    }

    /// After a line's delivery: a successor made during it takes over if the subscriber
    /// that got the line is gone, or is told `EBUSY`.
    private func settleSuccessor() {
        guard let next = successor else { return }
        successor = nil
        if observer == nil || (lifetime?.isDisposed ?? true) {
            observer = nil
            lifetime = nil
            attach(maxLength: next.maxLength, next.observer, next.lifetime)
        } else {
            busy(next.observer, next.lifetime)
        }
    }

    /// Gives `buffer` the limit `maxLength`, keeping its partial line (not during a split).
    private func setLimit(_ maxLength: Int) {
        let wanted = max(1, maxLength)
        if wanted == limit { return }
        limit = wanted
        let pending = buffer.pending
        buffer = LineBuffer(maxLength: wanted)
        buffer.pending = pending
    }

    /// A subscriber ended (loop thread): reading stops unless a split is under way (it
    /// stops, or goes on into a new subscriber, after the line it is delivering).
    private func detach(_ ended: CompoundDisposable) {
        guard lifetime === ended else { return }
        observer = nil
        lifetime = nil
        if !splitting { stopReading() }
    }

    private func startReading() {
        if reading != nil { return }
        let part = CompoundDisposable()
        reading = part
        makeReads().attach({ [self] event in receive(event) }, part)
    }

    private func stopReading() {
        let part = reading
        reading = nil
        part?.dispose()
    }

    private func receive(_ event: Event<[UInt8]>) {
        switch event {
        case .next(let chunk):
            if splitting { return }  // (a re-entrant chunk while ending: nothing may follow)
            chunk.withUnsafeBytes { split($0) }
        case .error, .completed:
            if splitting {
                deferredEnd = event
                return
            }
            end(event)
        }
    }

    /// Splits `bytes` into the current subscriber until it leaves; what it did not take
    /// stays for the next.
    private func split(_ bytes: UnsafeRawBufferPointer) {
        var from = 0
        while true {
            splitting = true
            var stoppedAt: Int?
            var failure: (any Error)?
            do {
                stoppedAt = try buffer.append(UnsafeRawBufferPointer(rebasing: bytes[from...]), until: { [self] line in
                    // Gone before this line (disposed from another thread, its `detach` still
                    // on its way): the line is the next subscriber's.
                    guard let observer, let lifetime, !lifetime.isDisposed else { return .giveBack }
                    observer(.next(line))
                    settleSuccessor()
                    if self.observer == nil || (self.lifetime?.isDisposed ?? true) { return .stop }
                    // A successor with another limit: the rest is split again under its own.
                    return limitAfterSplit == nil ? .next : .stop
                })
            } catch {
                failure = error
            }
            splitting = false
            if let wanted = limitAfterSplit {
                limitAfterSplit = nil
                setLimit(wanted)
            }
            if let failure {
                end(.error(failure))
                return
            }
            let active = observer != nil && !(lifetime?.isDisposed ?? true)
            if let stoppedAt, from + stoppedAt < bytes.count {
                if active {
                    from += stoppedAt
                    continue
                }
                unsplit = Array(bytes[(from + stoppedAt)...]) + unsplit
            }
            if !active {
                stopReading()
                deferredEnd = nil  // the stream's next reads subscription tells it again
            } else if let end = deferredEnd {
                deferredEnd = nil
                self.end(end)
            }
            return
        }
    }

    /// The reads ended (or a line was too long): the subscriber gets the last partial line
    /// at a clean end, then the terminal event.
    private func end(_ event: Event<[UInt8]>) {
        stopReading()
        guard let observer, let lifetime else { return }
        self.observer = nil
        self.lifetime = nil
        if lifetime.isDisposed { return }
        switch event {
        case .error(let error):
            observer(.error(error))
        default:
            if let last = buffer.finish() { observer(.next(last)) }
            if !lifetime.isDisposed { observer(.completed) }
        }
        lifetime.dispose()
    }
}

extension UVStream {
    /// The connection's line splitting (created by its first ``StreamConnection/lines``
    /// subscription; loop thread).
    func connectionLines() -> ConnectionLines {
        if let lines = lineSplitting { return lines }
        let lines = ConnectionLines(loop: loop, target: target, reads: { [unowned self] in readSignal() })
        lineSplitting = lines
        return lines
    }
}

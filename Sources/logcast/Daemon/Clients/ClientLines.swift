import ReactiveUV

/// A client's input as protocol lines, forgiving where `TCPConnection.lines` is strict.
///
/// A line longer than the limit is not the end of the conversation here: the client gets
/// `ERR` and its later commands still work. So the splitter drops the rest of an overlong
/// line and reports it as one `.tooLong` item.
enum ClientLine: Equatable {
    case line(String)
    case tooLong
}

extension Signal where Value == [UInt8] {
    /// Splits byte chunks into protocol lines of at most `maxLength` bytes; longer lines
    /// become `.tooLong` (once each) and their bytes are skipped up to the next break.
    func clientLines(maxLength: Int) -> Signal<ClientLine> {
        let source = self
        return Signal<ClientLine>.create { subscriber in
            var buffer = LineBuffer(maxLength: maxLength)
            var skipping = false
            return source.subscribe(
                next: { chunk in
                    var rest = chunk[...]
                    while !rest.isEmpty {
                        if skipping {
                            guard let nl = rest.firstIndex(of: 10) else { return }
                            rest = rest[(nl + 1)...]
                            skipping = false
                            continue
                        }
                        do {
                            // Feed up to and including the next break, so an error names one line.
                            let end = rest.firstIndex(of: 10).map { $0 + 1 } ?? rest.endIndex
                            try buffer.append(Array(rest[..<end])) { subscriber.sendNext(.line($0)) }
                            rest = rest[end...]
                        } catch {
                            buffer.reset()
                            subscriber.sendNext(.tooLong)
                            skipping = true
                        }
                    }
                },
                error: { subscriber.sendError($0) },
                completed: {
                    if !skipping, let last = buffer.finish() { subscriber.sendNext(.line(last)) }
                    subscriber.sendCompleted()
                })
        }
    }
}

extension Signal where Value == [UInt8] {
    /// Joins the chunks sent during one turn of the main loop into one chunk, sent when the
    /// turn's other work is done: a burst of lines from one read of a log file becomes one
    /// `write(2)` per client instead of one per line. Completion or an error first sends
    /// what is pending, and so does each value of `flushes` (before a goodbye and a close).
    func coalescedPerLoopTurn(flushes: Signal<Void>) -> Signal<[UInt8]> {
        let source = self
        return Signal<[UInt8]>.create { subscriber in
            var pending: [UInt8] = []
            var scheduled = false
            let flush = {
                scheduled = false
                if pending.isEmpty { return }
                let chunk = pending
                pending.removeAll(keepingCapacity: true)
                subscriber.sendNext(chunk)
            }
            let disposable = CompoundDisposable()
            disposable += flushes.subscribeNext { flush() }
            disposable += source.subscribe(
                next: { chunk in
                    pending += chunk
                    if !scheduled {
                        // Not tracked: after disposal the flush sends into a finished
                        // subscriber, which drops it.
                        scheduled = true
                        Scheduler.main.schedule { flush() }
                    }
                },
                error: { error in
                    flush()
                    subscriber.sendError(error)
                },
                completed: {
                    flush()
                    subscriber.sendCompleted()
                })
            return disposable
        }
    }
}

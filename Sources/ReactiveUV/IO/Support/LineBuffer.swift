/// Splits a stream of byte chunks into lines, carrying a partial line over to the next chunk.
///
/// Shared by every line signal (`TCPConnection.lines`, `File.lines`, `File.tail`,
/// `StandardInput.lines`) so they agree on the rules: a line ends at `\n`; one `\r` before
/// it is dropped (CRLF peers); bytes are decoded as UTF-8 with invalid sequences replaced
/// (U+FFFD), never rejected; a line longer than `maxLength` bytes is an error
/// (``LineError/lineTooLong(maxLength:)``) rather than unbounded memory.
public struct LineBuffer: Sendable {
    /// The longest line accepted, in bytes, not counting the line break.
    public let maxLength: Int
    /// The bytes of the line in progress.
    var pending: [UInt8] = []

    /// Creates a splitter accepting lines of at most `maxLength` bytes.
    public init(maxLength: Int = LineBuffer.defaultMaxLength) {
        self.maxLength = max(1, maxLength)
    }

    /// The default line limit: 1 MiB.
    public static var defaultMaxLength: Int { 1 << 20 }

    /// Whether a partial line is waiting for its end.
    public var hasPartialLine: Bool { !pending.isEmpty }

    /// Feeds `chunk`, calling `emit` for each complete line in order.
    ///
    /// - Throws: ``LineError/lineTooLong(maxLength:)`` when a line exceeds the limit; the
    ///   lines before it in the chunk have been emitted.
    public mutating func append(_ chunk: UnsafeRawBufferPointer, _ emit: (String) -> Void) throws {
        _ = try append(chunk, until: { line in
            emit(line)
            return .next
        })
    }

    /// What ``append(_:until:)``'s `emit` did with a line.
    enum Take {
        /// Took it; go on with the next.
        case next
        /// Took it; stop after it.
        case stop
        /// Did not take it: stop, and leave it unsplit (the carried part back in the
        /// buffer, the rest in the chunk from the returned offset).
        case giveBack
    }

    /// Feeds `chunk`, calling `emit` for each complete line until it says to stop.
    ///
    /// - Returns: where `emit` stopped: the offset in `chunk` of the first byte not split
    ///   (after the line it took, or where the line it gave back starts in the chunk), or
    ///   `nil` when the whole chunk was taken (a trailing partial line is kept for the next
    ///   chunk).
    /// - Throws: ``LineError/lineTooLong(maxLength:)`` as the other `append` does.
    mutating func append(_ chunk: UnsafeRawBufferPointer, until emit: (String) -> Take) throws -> Int? {
        guard let base = chunk.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return nil }
        let count = chunk.count
        var start = 0
        while start < count {
            // memchr is the fastest way to find the next break in a large chunk.
            let rest = count - start
            guard let hit = memchrNewline(base + start, rest) else {
                // One byte over is a `\r` the coming `\n` makes part of the break (as in
                // `checkPartialLine`): a CRLF line at the limit split between the two.
                let partialLength = pending.count + rest
                if partialLength > maxLength + 1 || (partialLength == maxLength + 1 && base[count - 1] != 13) {
                    throw tooLong()
                }
                pending.append(contentsOf: UnsafeBufferPointer(start: base + start, count: rest))
                return nil
            }
            let end = hit - base
            let length = end - start
            // The line's length without its break: a trailing `\r` (perhaps left in
            // `pending` by the previous chunk) does not count.
            let last: UInt8? = length > 0 ? base[end - 1] : pending.last
            let contentLength = pending.count + length - (last == 13 ? 1 : 0)
            if contentLength > maxLength { throw tooLong() }
            let take: Take
            if pending.isEmpty {
                take = emit(Self.decode(UnsafeBufferPointer(start: base + start, count: length)))
            } else {
                let carried = pending.count
                pending.append(contentsOf: UnsafeBufferPointer(start: base + start, count: length))
                let line = pending.withUnsafeBufferPointer { Self.decode($0) }
                take = emit(line)
                if case .giveBack = take {
                    pending.removeSubrange(carried...)
                } else {
                    pending.removeAll(keepingCapacity: true)
                }
            }
            switch take {
            case .next: start = end + 1
            case .stop: return end + 1
            case .giveBack: return start
            }
        }
        return nil
    }

    /// Feeds `chunk` (an array), calling `emit` for each complete line.
    public mutating func append(_ chunk: [UInt8], _ emit: (String) -> Void) throws {
        try chunk.withUnsafeBytes { try append($0, emit) }
    }

    /// Feeds `chunk`, calling `emit` with the complete lines it finishes as **one byte
    /// chunk** (each line still ending with its `\n`, bytes unchanged), keeping a trailing
    /// partial line for later. No `String` is made per line: for consumers that pass lines
    /// on as bytes (`ruv-tail`, a socket), this is the fast path.
    ///
    /// - Throws: ``LineError/lineTooLong(maxLength:)`` when a line exceeds the limit.
    public mutating func appendWholeLines(_ chunk: UnsafeRawBufferPointer, _ emit: ([UInt8]) -> Void) throws {
        guard let base = chunk.baseAddress?.assumingMemoryBound(to: UInt8.self), chunk.count > 0 else { return }
        let count = chunk.count
        guard let lastBreak = try checkLines(base, count, carried: pending.count, carriedLast: pending.last) else {
            pending.append(contentsOf: UnsafeBufferPointer(start: base, count: count))
            return
        }
        let wholeCount = pending.count + lastBreak + 1
        let whole = [UInt8](unsafeUninitializedCapacity: wholeCount) { buffer, initialized in
            let target = buffer.baseAddress!
            pending.withUnsafeBufferPointer { old in
                if let from = old.baseAddress { target.update(from: from, count: old.count) }
            }
            (target + pending.count).update(from: base, count: lastBreak + 1)
            initialized = wholeCount
        }
        pending.removeAll(keepingCapacity: true)
        if lastBreak + 1 < count {
            pending.append(contentsOf: UnsafeBufferPointer(start: base + lastBreak + 1, count: count - lastBreak - 1))
        }
        emit(whole)
    }

    /// Hands out the partial line (leaving none), for a read that puts the next bytes right
    /// after it in one array; ``acceptWholeLines(_:partial:)`` then takes that array.
    mutating func takePartialLine() -> [UInt8] {
        let partial = pending
        pending = []
        return partial
    }

    /// Puts back a partial line handed out by ``takePartialLine()`` (a read found nothing new).
    mutating func restorePartialLine(_ partial: [UInt8]) {
        pending = partial
    }

    /// ``appendWholeLines(_:_:)`` for a chunk already split at its last line break (by
    /// the read that made it): `whole` starts with the partial line taken with
    /// ``takePartialLine()`` (so none is pending) and ends with a line break, or is empty;
    /// `partial` holds no break. Checks every line, keeps `partial` as the new partial line
    /// and returns `whole` as it is (no copy), or `nil` when it is empty.
    ///
    /// - Throws: ``LineError/lineTooLong(maxLength:)`` when a line exceeds the limit.
    mutating func acceptWholeLines(_ whole: [UInt8], partial: [UInt8]) throws -> [UInt8]? {
        assert(pending.isEmpty, "LineBuffer.acceptWholeLines: the partial line was not taken")
        try whole.withUnsafeBufferPointer { buffer in
            if let base = buffer.baseAddress, buffer.count > 0 {
                _ = try checkLines(base, buffer.count, carried: 0, carriedLast: nil)
            }
        }
        try partial.withUnsafeBufferPointer { buffer in
            if let base = buffer.baseAddress { try checkPartialLine(base, buffer.count, lineStart: 0) }
        }
        pending = partial
        return whole.isEmpty ? nil : whole
    }

    /// Checks the length of every line in `count` bytes at `base`, whose first line
    /// continues a partial line of `carried` bytes (the last of them `carriedLast`), and of
    /// the partial line after the last break; returns the last break's index, or `nil`
    /// when there is none.
    ///
    /// Only the first line and the partial line need a look of their own: a line between
    /// the first and the last break is at most as long as the span between them, so when
    /// that span is within the limit (always, for chunks no bigger than the limit) the lines
    /// in it need no search at all. Finding each break with memchr instead cost a call per
    /// line, a third of `tailChunks`' CPU time.
    private func checkLines(_ base: UnsafePointer<UInt8>, _ count: Int, carried: Int, carriedLast: UInt8?) throws -> Int? {
        guard let first = memchrNewline(base, count) else {
            try checkPartialLine(base, count, lineStart: -carried)
            return nil
        }
        let firstBreak = first - base
        try checkLine(base, end: firstBreak, lineStart: -carried, carriedLast: carriedLast)
        let lastBreak = lastNewline(base, count)
        if lastBreak - firstBreak - 1 > maxLength {
            // Long lines may hide in between: check each one.
            var lineStart = firstBreak + 1
            while lineStart < lastBreak, let hit = memchrNewline(base + lineStart, lastBreak - lineStart) {
                let end = hit - base
                try checkLine(base, end: end, lineStart: lineStart, carriedLast: carriedLast)
                lineStart = end + 1
            }
            try checkLine(base, end: lastBreak, lineStart: lineStart, carriedLast: carriedLast)
        }
        try checkPartialLine(base, count, lineStart: lastBreak + 1)
        return lastBreak
    }

    /// Throws if the line from `lineStart` (negative: it began in the carried partial line,
    /// whose last byte is `carriedLast`) to the break at `end` is over the limit, not
    /// counting one `\r` before the break.
    private func checkLine(_ base: UnsafePointer<UInt8>, end: Int, lineStart: Int, carriedLast: UInt8?) throws {
        let previous: UInt8? = end > 0 ? base[end - 1] : carriedLast
        if end - lineStart - (previous == 13 ? 1 : 0) > maxLength { throw tooLong() }
    }

    /// Throws if the unfinished line from `lineStart` to the chunk's end is already over the
    /// limit; one byte over is allowed only for a `\r` that the coming break will make part
    /// of the line break.
    private func checkPartialLine(_ base: UnsafePointer<UInt8>, _ count: Int, lineStart: Int) throws {
        let partialLength = count - lineStart
        if partialLength > maxLength + 1 || (partialLength == maxLength + 1 && base[count - 1] != 13) {
            throw tooLong()
        }
    }

    /// Ends a whole-lines stream: the partial line with a `\n` added, if there is one.
    public mutating func finishWholeLines() -> [UInt8]? {
        if pending.isEmpty { return nil }
        var line = pending
        line.append(10)
        pending.removeAll()
        return line
    }

    /// Ends the stream: returns the partial line, if any (a last line without a break).
    public mutating func finish() -> String? {
        if pending.isEmpty { return nil }
        let line = pending.withUnsafeBufferPointer { Self.decode($0) }
        pending.removeAll()
        return line
    }

    /// Drops the partial line (after a truncation, say).
    public mutating func reset() { pending.removeAll() }

    func tooLong() -> LineError { .lineTooLong(maxLength: maxLength) }

    /// UTF-8 decoding of one line without its break, dropping one trailing `\r`.
    static func decode(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        var n = bytes.count
        if n > 0 && bytes[n - 1] == 13 { n -= 1 }
        return String(decoding: UnsafeBufferPointer(rebasing: bytes[0..<n]), as: UTF8.self)
    }
}

/// `memchr` for `\n`, returning a typed pointer.
@inline(__always)
func memchrNewline(_ p: UnsafePointer<UInt8>, _ count: Int) -> UnsafePointer<UInt8>? {
    guard let r = memchr(p, 10, count) else { return nil }
    return UnsafePointer(r.assumingMemoryBound(to: UInt8.self))
}

/// The index of the last `\n` among `count` bytes, which must hold one. A plain backward
/// loop: glibc's `memrchr` is not visible to Swift, and the search usually ends within the
/// last line.
@inline(__always)
func lastNewline(_ p: UnsafePointer<UInt8>, _ count: Int) -> Int {
    var index = count - 1
    while p[index] != 10 { index -= 1 }
    return index
}

/// Errors of line splitting.
public enum LineError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A line was longer than the limit (in bytes).
    case lineTooLong(maxLength: Int)

    /// A readable message naming the limit.
    public var description: String {
        switch self {
        case .lineTooLong(let max): return "line longer than the limit of \(max) bytes"
        }
    }
}

extension Signal where Value == [UInt8] {
    /// Splits byte chunks into UTF-8 lines (see ``LineBuffer`` for the rules). A last line
    /// without a break is sent at completion; a line over `maxLength` bytes fails the signal
    /// with ``LineError/lineTooLong(maxLength:)``.
    ///
    /// Disposal from inside a line's delivery (`take(1)`, `first()`, a `dispose()` in the
    /// callback) stops the rest of the chunk at once; a terminal event the source sends
    /// while a chunk is being split (a stream closed by that disposal) is handled after the
    /// split, never by the splitter in the middle of its work.
    public func lines(maxLength: Int = LineBuffer.defaultMaxLength) -> Signal<String> {
        let source = self
        return AnonymousSignal { observer, lifetime in
            let splitter = LineSplitter(maxLength: maxLength, observer: observer, lifetime: lifetime)
            source.attach({ event in splitter.receive(event) }, lifetime)
        }
    }
}

/// The state of one ``Signal/lines(maxLength:)`` subscription: a ``LineBuffer`` and the
/// re-entrance guard around it.
///
/// Why a guard: a line's subscriber may end the subscription from its callback, and that
/// can make the source send its terminal event synchronously (disposing a stream's read
/// closes the stream, which completes its reader) while `append` is still iterating the
/// chunk. Finishing the buffer then would touch it during its own mutation (an exclusivity
/// abort); the terminal event is kept and handled when the split returns.
///
/// Thread-safety: events to one subscriber are serialized (the threading contract), so it
/// is touched by one thread at a time.
final class LineSplitter {
    private var buffer: LineBuffer
    private let observer: Sink<String>
    private let lifetime: CompoundDisposable
    /// Whether `append` is running.
    private var splitting = false
    /// A terminal event that arrived during a split.
    private var deferredEnd: Event<[UInt8]>?
    /// Set once a terminal event was handled.
    private var ended = false

    init(maxLength: Int, observer: @escaping Sink<String>, lifetime: CompoundDisposable) {
        self.buffer = LineBuffer(maxLength: maxLength)
        self.observer = observer
        self.lifetime = lifetime
    }

    func receive(_ event: Event<[UInt8]>) {
        if ended { return }
        switch event {
        case .next(let chunk):
            if splitting { return }  // a re-entrant chunk while ending: nothing may follow
            splitting = true
            let observer = self.observer
            let lifetime = self.lifetime
            var failure: (any Error)?
            do {
                try buffer.append(chunk) { line in
                    if !lifetime.isDisposed { observer(.next(line)) }
                }
            } catch {
                failure = error
            }
            splitting = false
            if let failure {
                ended = true
                if !lifetime.isDisposed { observer(.error(failure)) }
                lifetime.dispose()
            } else if let end = deferredEnd {
                deferredEnd = nil
                receive(end)
            }
        case .error, .completed:
            if splitting {
                deferredEnd = event
                return
            }
            ended = true
            if case .error(let error) = event {
                if !lifetime.isDisposed { observer(.error(error)) }
            } else {
                if let last = buffer.finish(), !lifetime.isDisposed { observer(.next(last)) }
                if !lifetime.isDisposed { observer(.completed) }
            }
        }
    }
}

import Glibc

import Glibc
import ReactiveUV

/// Lines read in one loop turn, formatted once for every client: `<file>: <text>\n` each.
///
/// A block is the unit the fan-out shares. It is built once (one copy of the bytes the file
/// gave, with the file name put in front of every line), scanned once by the filter set,
/// and then referenced — never copied — by every client that has not yet been written its
/// lines: a client that takes everything is written `bytes` itself; a filtered client is
/// written the slices its pattern matched. It is freed when the last client has passed it.
final class LineBlock {
    /// The formatted lines, each ending with `\n`.
    let bytes: [UInt8]
    /// Line i's text (after `<file>: `, without the `\n`) is `textStarts[i] ..< ends[i] - 1`;
    /// the whole formatted line is `lineStarts[i] ..< ends[i]`.
    let lineStarts: [UInt32]
    let textStarts: [UInt32]
    let ends: [UInt32]
    /// Its place in the stream of all blocks.
    let sequence: Int
    /// Bytes of all blocks before this one (how far behind a client is, in bytes).
    var streamStart = 0
    /// When it was sealed: how long a client's batch has waited (``LineFanOut``).
    let sealedAt: SchedulerTime
    /// Line indexes each pattern (by ``PatternID``) matched, ascending; filled by the scan.
    var matches: [PatternID: [UInt32]] = [:]

    var lineCount: Int { ends.count }

    init(bytes: [UInt8], lineStarts: [UInt32], textStarts: [UInt32], ends: [UInt32], sequence: Int,
         sealedAt: SchedulerTime = .monotonicNow) {
        self.bytes = bytes
        self.sealedAt = sealedAt
        self.lineStarts = lineStarts
        self.textStarts = textStarts
        self.ends = ends
        self.sequence = sequence
    }

    /// How many lines `pattern` takes from this block (`nil`: every line).
    func count(for pattern: PatternID?) -> Int {
        guard let pattern else { return lineCount }
        return matches[pattern]?.count ?? 0
    }

    /// How many bytes of lines `pattern` takes from this block (`nil`: every line).
    func byteCount(for pattern: PatternID?) -> Int {
        guard let pattern else { return bytes.count }
        guard let lines = matches[pattern] else { return 0 }
        var total = 0
        for line in lines { total += Int(ends[Int(line)] &- lineStarts[Int(line)]) }
        return total
    }

    /// Appends the lines `pattern` takes (`nil`: all of them) to `output`; returns how many.
    func append(for pattern: PatternID?, to output: inout [UInt8]) -> Int {
        guard let pattern else {
            output.append(contentsOf: bytes)
            return lineCount
        }
        guard let lines = matches[pattern], !lines.isEmpty else { return 0 }
        bytes.withUnsafeBufferPointer { all in
            for line in lines {
                let start = Int(lineStarts[Int(line)]), end = Int(ends[Int(line)])
                output.append(contentsOf: UnsafeBufferPointer(rebasing: all[start..<end]))
            }
        }
        return lines.count
    }
}

extension LineBlock {
    /// The lines a client with `access` (`nil`: every source) and `pattern` takes, by
    /// index: a restricted client's lines are those of its pattern whose source (the text
    /// before `: `) its access allows.
    private func lines(for pattern: PatternID?, access: SourceAccess, _ body: (Int) -> Void) {
        bytes.withUnsafeBufferPointer { all in
            func visit(_ line: Int) {
                if allows(line, access, in: all) { body(line) }
            }
            if let pattern {
                for line in matches[pattern] ?? [] { visit(Int(line)) }
            } else {
                for line in 0..<lineCount { visit(line) }
            }
        }
    }

    /// Whether `access` allows line `line`'s source (its text before `: `); `all` is
    /// ``bytes``' buffer.
    func allows(_ line: Int, _ access: SourceAccess, in all: UnsafeBufferPointer<UInt8>) -> Bool {
        let start = Int(lineStarts[line]), text = Int(textStarts[line])
        return access.allows(UnsafeBufferPointer(rebasing: all[start..<max(start, text - 2)]))
    }

    /// ``count(for:)`` for a client with `access`.
    func count(for pattern: PatternID?, access: SourceAccess?) -> Int {
        guard let access else { return count(for: pattern) }
        var n = 0
        lines(for: pattern, access: access) { _ in n += 1 }
        return n
    }

    /// ``byteCount(for:)`` for a client with `access`.
    func byteCount(for pattern: PatternID?, access: SourceAccess?) -> Int {
        guard let access else { return byteCount(for: pattern) }
        var total = 0
        lines(for: pattern, access: access) { total += Int(ends[$0] &- lineStarts[$0]) }
        return total
    }

    /// ``append(for:to:)`` for a client with `access`.
    func append(for pattern: PatternID?, access: SourceAccess?, to output: inout [UInt8]) -> Int {
        guard let access else { return append(for: pattern, to: &output) }
        var n = 0
        var taken: [Int] = []
        lines(for: pattern, access: access) { taken.append($0) }
        bytes.withUnsafeBufferPointer { all in
            for line in taken {
                output.append(contentsOf: UnsafeBufferPointer(rebasing: all[Int(lineStarts[line])..<Int(ends[line])]))
                n += 1
            }
        }
        return n
    }
}

/// Collects the lines of one loop turn into the next ``LineBlock``.
struct LineBlockBuilder {
    var bytes: [UInt8] = []
    var lineStarts: [UInt32] = []
    var textStarts: [UInt32] = []
    var ends: [UInt32] = []

    var isEmpty: Bool { ends.isEmpty }

    /// Past this size a block is sealed even within one loop turn (offsets are 32-bit, and a
    /// smaller block is released sooner).
    static let sealSize = 4 << 20

    /// Adds every complete line of `chunk` (bytes as read from a file: lines ending in
    /// `\n`; a last line without one is taken as a line), each prefixed with `prefix`.
    ///
    /// Why raw copies: this runs for every byte logcast serves. The lines are counted
    /// first, the arrays grown once (geometrically, so a block built from many chunks is
    /// not copied over and over), and each line is then two `memcpy`s and three stores —
    /// not four `Array.append`s, each with its own capacity and uniqueness checks.
    mutating func append(prefix: [UInt8], chunk: [UInt8]) {
        chunk.withUnsafeBufferPointer { source in
            guard let base = source.baseAddress, source.count > 0 else { return }
            let count = source.count
            var lines = 0
            var offset = 0
            while offset < count, let nl = memchr(base + offset, 10, count - offset) {
                lines += 1
                offset = UnsafeRawPointer(base).distance(to: UnsafeRawPointer(nl)) + 1
            }
            let unterminated = base[count - 1] != 10
            if unterminated { lines += 1 }
            let start = bytes.count
            let added = count + lines * prefix.count + (unterminated ? 1 : 0)
            Self.grow(&bytes, by: added)
            Self.grow(&lineStarts, by: lines)
            Self.grow(&textStarts, by: lines)
            Self.grow(&ends, by: lines)
            // Room for the new bytes (zeroed, then overwritten: Array has no uninitialized
            // append; memset of a chunk is a small part of copying it).
            bytes.append(contentsOf: repeatElement(0, count: added))
            bytes.withUnsafeMutableBufferPointer { out in
                prefix.withUnsafeBufferPointer { pre in
                    let target = out.baseAddress!
                    var w = start
                    var offset = 0
                    while offset < count {
                        let end: Int
                        if let nl = memchr(base + offset, 10, count - offset) {
                            end = UnsafeRawPointer(base).distance(to: UnsafeRawPointer(nl)) + 1
                        } else {
                            end = count
                        }
                        lineStarts.append(UInt32(w))
                        if let p = pre.baseAddress { memcpy(target + w, p, pre.count) }
                        w += pre.count
                        textStarts.append(UInt32(w))
                        memcpy(target + w, base + offset, end - offset)
                        w += end - offset
                        if base[end - 1] != 10 {
                            target[w] = 10
                            w += 1
                        }
                        ends.append(UInt32(w))
                        offset = end
                    }
                }
            }
        }
    }

    /// Makes room for `more` elements, at least doubling the capacity when it grows.
    private static func grow<T>(_ array: inout [T], by more: Int) {
        let needed = array.count + more
        if needed > array.capacity { array.reserveCapacity(Swift.max(needed, 2 * array.capacity)) }
    }

    /// Adds one line (`text` without its `\n`).
    mutating func append(prefix: [UInt8], line text: some Collection<UInt8>) {
        lineStarts.append(UInt32(bytes.count))
        bytes.append(contentsOf: prefix)
        textStarts.append(UInt32(bytes.count))
        bytes.append(contentsOf: text)
        bytes.append(10)
        ends.append(UInt32(bytes.count))
    }

    /// The block, and an empty builder for the next turn.
    mutating func seal(sequence: Int, at time: SchedulerTime = .monotonicNow) -> LineBlock {
        let block = LineBlock(bytes: bytes, lineStarts: lineStarts, textStarts: textStarts, ends: ends, sequence: sequence,
                              sealedAt: time)
        self = LineBlockBuilder()
        return block
    }
}

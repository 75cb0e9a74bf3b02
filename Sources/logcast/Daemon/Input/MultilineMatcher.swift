import CHyperscan
import LogcastScan

/// A `--multiline-start` pattern, compiled once at start: which lines of a chunk start an
/// event.
///
/// Why the GREP engine and not a small matcher of our own: logcast has no other regex
/// engine (Swift `Regex` backtracks, and its speed on a hostile pattern is unbounded), and
/// the start pattern runs on every line of every followed file, as `GREP` does — the same
/// linear-time guarantee and the same dialect are what an operator expects. A whole chunk's
/// lines are scanned in one C call (``lcs_scan_lines``), not one Hyperscan call per line.
///
/// Matching is on the line's bytes without its `\n`, unanchored: `^` anchors at the line's
/// start (write `^\d{4}-` for "a line starting with a date").
///
/// Main loop only (its scratch space is the loop's).
final class MultilineMatcher {
    /// The pattern as given.
    let pattern: String
    /// The compiled database and its scratch (a set of one pattern; ``FilterSet`` frees them).
    private let set: FilterSet
    /// (line, expression) pairs the C scan fills; a scan that fills it resumes where it
    /// stopped, so its size bounds memory, not the chunk.
    private let pairs: UnsafeMutablePointer<UInt32>
    private static let pairCapacity = 1024

    private init(pattern: String, set: FilterSet) {
        self.pattern = pattern
        self.set = set
        pairs = .allocate(capacity: 2 * Self.pairCapacity)
    }

    deinit { pairs.deallocate() }

    /// Compiles `pattern` as `GREP` would (the same dialect, the same refusals: a pattern
    /// that needs backtracking is refused, not run).
    ///
    /// - Parameter pattern: the start pattern.
    /// - Returns: the matcher, or why the pattern was refused.
    static func compile(_ pattern: String) -> Result<MultilineMatcher, FilterSet.Refusal> {
        if pattern.isEmpty { return .failure(.invalid("the pattern is empty")) }
        if let refusal = FilterSet.check(pattern) { return .failure(refusal) }
        return FilterSet.compile([(id: 0, text: pattern)]).map { MultilineMatcher(pattern: pattern, set: $0) }
    }

    /// Marks which lines start an event.
    ///
    /// - Parameters:
    ///   - base: the chunk's bytes.
    ///   - starts: each line's first byte.
    ///   - ends: each line's end (its `\n` excluded).
    ///   - isStart: set to `true` for each line the pattern matches (same count as `starts`).
    func mark(_ base: UnsafePointer<UInt8>, starts: [UInt32], ends: [UInt32], isStart: inout [Bool]) {
        let count = starts.count
        var first = 0
        starts.withUnsafeBufferPointer { s in
            ends.withUnsafeBufferPointer { e in
                while first < count {
                    var used = 0
                    var next = count
                    let rc = lcs_scan_lines(set.database, set.scratch, base, s.baseAddress, e.baseAddress, first, count,
                                            pairs, Self.pairCapacity, &used, &next)
                    for k in 0..<used { isStart[Int(pairs[2 * k])] = true }
                    if rc == 1 && next > first {
                        first = next
                    } else {
                        // A Hyperscan error (not expected with a database compiled here)
                        // makes each line it did not scan an event of its own: nothing is
                        // lost or wrongly joined.
                        if rc < 0 { for i in min(next, count)..<count { isStart[i] = true } }
                        break
                    }
                }
            }
        }
    }
}

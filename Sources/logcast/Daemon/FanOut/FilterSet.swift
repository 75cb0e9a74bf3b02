import CHyperscan
import Glibc
import LogcastScan

/// A distinct pattern some client filters with; the same text is the same id for as long
/// as any client uses it.
typealias PatternID = Int32

/// Every live client filter compiled into one Hyperscan database: each line is scanned once
/// and the scan says which patterns matched it.
///
/// Why Hyperscan (and not Swift `Regex`, PCRE or RE2): its scan time is linear in the line
/// for every pattern it accepts — it refuses what needs backtracking (back-references,
/// lookaround, atomic groups, possessive quantifiers) instead of running it — and one
/// database matches thousands of patterns in one pass, reporting each pattern's id. RE2's
/// `RE2::Set` has the same guarantee, but its lazily built DFA can run out of memory on
/// many patterns and then fails the match, and it is C++ (a shim of its own). Matching is
/// on bytes (no `HS_FLAG_UTF8`: a log line need not be valid UTF-8, which that flag would
/// make undefined behaviour), so `.` is one byte.
///
/// Made on a compile thread (``FilterCompiler``), then used on the main loop only: the
/// scratch space is the main loop's.
final class FilterSet: @unchecked Sendable {
    // Immutable after init; `scratch` and `pairs` are used by the main loop only;
    // `helperScratch` and `helperPairs` by the helper thread while the main loop waits for it.
    let database: OpaquePointer
    let scratch: OpaquePointer
    /// The helper thread's own scratch space (a clone: one scratch per scanning thread), or
    /// `nil` when none could be made (then the loop scans alone).
    let helperScratch: OpaquePointer?
    /// The helper's match buffer (grown by the loop thread, while the helper is idle).
    private var helperPairs = MatchPairs()
    /// Hyperscan expression id → pattern (a pattern split into alternatives is several
    /// expressions: see ``FilterSet/expressions(of:)``).
    let expressionPattern: [PatternID]
    /// The patterns this set matches.
    let patterns: Set<PatternID>
    /// Expression id → the pattern's slot in a scan's per-pattern lists (`slotPattern`):
    /// an array index per match, not a dictionary lookup.
    private let expressionSlot: [Int]
    private let slotPattern: [PatternID]
    /// The loop thread's match buffer.
    private var pairs = MatchPairs()

    /// A match buffer the C scan fills: (line, expression) pairs, two `UInt32`s each,
    /// doubled when a scan filled it. Its owner frees it (`free()`, in `deinit`).
    private struct MatchPairs {
        private(set) var base = UnsafeMutablePointer<UInt32>.allocate(capacity: 2 * 4096)
        /// How many pairs fit.
        private(set) var capacity = 4096

        mutating func grow() {
            base.deallocate()
            capacity *= 2
            base = .allocate(capacity: 2 * capacity)
        }

        func free() { base.deallocate() }
    }

    /// Flags of every expression: report a pattern once per line; a pattern that can match
    /// the empty string (`x*`) is allowed and matches every line.
    static let flags = UInt32(HS_FLAG_SINGLEMATCH | HS_FLAG_ALLOWEMPTY)

    /// The thread that scans the upper half of a large block (one per process, made on
    /// first use), or `nil` when no thread could be made.
    nonisolated(unsafe) static let helper: OpaquePointer? = lcs_helper_start()
    /// Blocks of at least this many lines are split between the loop and the helper: below
    /// it, handing over and waiting cost more than the half scan saves.
    static let splitLines = 1024

    private init(database: OpaquePointer, scratch: OpaquePointer, expressionPattern: [PatternID]) {
        self.database = database
        self.scratch = scratch
        var clone: OpaquePointer?
        helperScratch = hs_clone_scratch(scratch, &clone) == HS_SUCCESS ? clone : nil
        self.expressionPattern = expressionPattern
        self.patterns = Set(expressionPattern)
        var slots: [PatternID: Int] = [:]
        var slotPattern: [PatternID] = []
        expressionSlot = expressionPattern.map { pattern in
            if let slot = slots[pattern] { return slot }
            slots[pattern] = slotPattern.count
            slotPattern.append(pattern)
            return slotPattern.count - 1
        }
        self.slotPattern = slotPattern
    }

    deinit {
        pairs.free()
        helperPairs.free()
        if let helperScratch { hs_free_scratch(helperScratch) }
        hs_free_scratch(scratch)
        hs_free_database(database)
    }

    /// Why a pattern was refused.
    enum Refusal: Error, Equatable {
        /// A construct Hyperscan does not run (its message says which).
        case unsupported(String)
        /// Not a regular expression.
        case invalid(String)
        /// Too large a pattern or database.
        case tooLarge(String)

        /// The `ERR …` text.
        var reply: String {
            switch self {
            case .unsupported(let why): return "ERR unsupported pattern: \(why)"
            case .invalid(let why): return "ERR invalid regex: \(why)"
            case .tooLarge(let why): return "ERR pattern too large: \(why)"
            }
        }
    }

    /// Compiles `patterns` (already checked one by one with ``check(_:)``) into one set;
    /// blocks, so it runs on a compile thread.
    static func compile(_ patterns: [(id: PatternID, text: String)]) -> Result<FilterSet, Refusal> {
        var texts: [String] = []
        var owners: [PatternID] = []
        for pattern in patterns {
            for expression in expressions(of: pattern.text) {
                texts.append(expression)
                owners.append(pattern.id)
            }
        }
        return compileExpressions(texts, owners: owners)
    }

    /// Compiles one pattern alone: whether Hyperscan accepts it (and can build it within
    /// the size limits). Blocks; runs on a compile thread.
    static func check(_ pattern: String) -> Refusal? {
        if pattern.utf8.contains(0) { return .invalid("a NUL byte") }
        let parts = expressions(of: pattern)
        switch compileExpressions(parts, owners: parts.map { _ in 0 }) {
        case .success: return nil
        case .failure(let refusal): return refusal
        }
    }

    /// The largest database accepted (bytes): a bound on what one pattern can cost.
    static let maxDatabaseSize = 64 << 20

    private static func compileExpressions(_ texts: [String], owners: [PatternID]) -> Result<FilterSet, Refusal> {
        guard !texts.isEmpty else { return .failure(.invalid("no expression")) }
        // strdup'ed C strings: hs_compile_multi wants an array of pointers.
        let cStrings = texts.map { strdup($0) }
        defer { cStrings.forEach { free($0) } }
        let pointers = cStrings.map { UnsafePointer($0) }
        let flags = [UInt32](repeating: flags, count: texts.count)
        let ids = (0..<texts.count).map { UInt32($0) }
        var database: OpaquePointer?
        var error: UnsafeMutablePointer<hs_compile_error_t>?
        let rc = pointers.withUnsafeBufferPointer { p in
            hs_compile_multi(p.baseAddress, flags, ids, UInt32(texts.count), UInt32(HS_MODE_BLOCK), nil, &database, &error)
        }
        if rc != HS_SUCCESS {
            let message = error.flatMap { $0.pointee.message.map { String(cString: $0) } } ?? "hyperscan error \(rc)"
            if let error { hs_free_compile_error(error) }
            return .failure(classify(message))
        }
        guard let database else { return .failure(.invalid("no database")) }
        var size = 0
        hs_database_size(database, &size)
        if size > maxDatabaseSize {
            hs_free_database(database)
            return .failure(.tooLarge("its database would take \(size) bytes (limit \(maxDatabaseSize))"))
        }
        var scratch: OpaquePointer?
        guard hs_alloc_scratch(database, &scratch) == HS_SUCCESS, let scratch else {
            hs_free_database(database)
            return .failure(.tooLarge("no scratch space"))
        }
        return .success(FilterSet(database: database, scratch: scratch, expressionPattern: owners))
    }

    /// Sorts Hyperscan's compile message into a refusal.
    static func classify(_ message: String) -> Refusal {
        let lower = message.lowercased()
        if lower.contains("not supported") || lower.contains("unsupported") { return .unsupported(message) }
        if lower.contains("exceeds limit") || lower.contains("too large") || lower.contains("resource limit") {
            return .tooLarge(message)
        }
        return .invalid(message)
    }

    /// A pattern's top-level alternatives, when splitting it is safe: `a|b|c` → `a`, `b`,
    /// `c`. Hyperscan compiles thousands of separate expressions far faster than one
    /// expression with thousands of branches (a 2,001-way alternation: under a second as
    /// expressions, over 20 s as one), and "the line matches one of them" is the same
    /// question. Not split: anything with an inline option group `(?…)` at the top level
    /// (it would apply to the following branches) or `\Q…\E` quoting.
    static func expressions(of pattern: String) -> [String] {
        let bytes = Array(pattern.utf8)
        var parts: [String] = []
        var depth = 0
        var inClass = false
        var start = 0
        var i = 0
        while i < bytes.count {
            let c = bytes[i]
            if c == UInt8(ascii: "\\") {
                if i + 1 < bytes.count && bytes[i + 1] == UInt8(ascii: "Q") { return [pattern] }
                i += 2
                continue
            }
            if inClass {
                if c == UInt8(ascii: "]") { inClass = false }
            } else if c == UInt8(ascii: "[") {
                inClass = true
                // `[]…]` and `[^]…]`: a `]` first in a class is a literal.
                if i + 1 < bytes.count && bytes[i + 1] == UInt8(ascii: "^") { i += 1 }
                if i + 1 < bytes.count && bytes[i + 1] == UInt8(ascii: "]") { i += 1 }
            } else if c == UInt8(ascii: "(") {
                if depth == 0 && i + 1 < bytes.count && bytes[i + 1] == UInt8(ascii: "?")
                    && !(i + 2 < bytes.count && bytes[i + 2] == UInt8(ascii: ":")) {
                    return [pattern]
                }
                depth += 1
            } else if c == UInt8(ascii: ")") {
                depth = max(0, depth - 1)
            } else if c == UInt8(ascii: "|") && depth == 0 {
                parts.append(String(decoding: bytes[start..<i], as: UTF8.self))
                start = i + 1
            }
            i += 1
        }
        if parts.isEmpty { return [pattern] }
        parts.append(String(decoding: bytes[start...], as: UTF8.self))
        return parts
    }

    /// Scans every line of `block` once and records which patterns matched which lines.
    ///
    /// A block of ``splitLines`` lines or more is scanned by two threads at once: the helper
    /// takes the upper half (with its own scratch space and match buffer) while this thread
    /// scans the lower half, then this thread waits for it. Matches are collected lower half
    /// first, so every pattern's line list stays ascending. Returns whether it was split.
    func scan(_ block: LineBlock) -> Bool {
        guard block.lineCount > 0 else { return false }
        var split = false
        var lists = [[UInt32]](repeating: [], count: slotPattern.count)
        let count = block.lineCount
        block.bytes.withUnsafeBufferPointer { bytes in
            block.textStarts.withUnsafeBufferPointer { starts in
                // The text ends before the line's `\n`.
                var textEnds = block.ends
                for k in textEnds.indices { textEnds[k] -= 1 }
                textEnds.withUnsafeBufferPointer { ends in
                    guard count >= FilterSet.splitLines, let helper = FilterSet.helper, let helperScratch else {
                        scanLines(bytes, starts, ends, from: 0, to: count, into: &lists)
                        return
                    }
                    let half = count / 2
                    split = true
                    lcs_helper_submit(helper, database, helperScratch, bytes.baseAddress, starts.baseAddress,
                                      ends.baseAddress, half, count, helperPairs.base, helperPairs.capacity)
                    scanLines(bytes, starts, ends, from: 0, to: half, into: &lists)
                    var used = 0
                    var next = half
                    let rc = lcs_helper_wait(helper, &used, &next)
                    collect(helperPairs.base, used, into: &lists)
                    if rc == 1 {
                        // Its buffer filled: a larger one for next time; this thread scans
                        // on from the line that did not fit.
                        helperPairs.grow()
                    } else if rc < 0 {
                        next += 1  // (as in scanLines: skip a line Hyperscan failed on)
                    }
                    if next < count { scanLines(bytes, starts, ends, from: next, to: count, into: &lists) }
                }
            }
        }
        var result: [PatternID: [UInt32]] = [:]
        for (slot, lines) in lists.enumerated() where !lines.isEmpty { result[slotPattern[slot]] = lines }
        block.matches = result
        return split
    }

    /// Scans lines `from ..< to` on this thread into `lists`.
    private func scanLines(_ bytes: UnsafeBufferPointer<UInt8>, _ starts: UnsafeBufferPointer<UInt32>,
                           _ ends: UnsafeBufferPointer<UInt32>, from: Int, to: Int, into lists: inout [[UInt32]]) {
        var used = 0
        var next = from
        while next < to {
            let rc = lcs_scan_lines(database, scratch, bytes.baseAddress, starts.baseAddress, ends.baseAddress,
                                    next, to, pairs.base, pairs.capacity, &used, &next)
            collect(pairs.base, used, into: &lists)
            used = 0
            if rc == 1 {
                // Full: a larger buffer, then on from the line that did not fit.
                pairs.grow()
                continue
            }
            if rc < 0 {
                // Cannot happen with a valid database and scratch; skip the line rather
                // than stop the daemon.
                next += 1
            }
        }
    }

    /// Moves `used` pairs into per-pattern line lists (a pattern split into several
    /// expressions reports a line once).
    private func collect(_ pairs: UnsafeMutablePointer<UInt32>, _ used: Int, into lists: inout [[UInt32]]) {
        expressionSlot.withUnsafeBufferPointer { expressionSlot in
            for k in 0..<used {
                let line = pairs[2 * k]
                let slot = expressionSlot[Int(pairs[2 * k + 1])]
                if let last = lists[slot].last, last == line { continue }
                lists[slot].append(line)
            }
        }
    }
}

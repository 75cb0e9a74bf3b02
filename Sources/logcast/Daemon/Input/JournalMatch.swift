import ArgumentParser

/// One word of `--journal`'s matches, as journalctl takes them: `FIELD=value` or `+`.
///
/// How sd_journal combines them (sd_journal_add_match(3)): matches of the same field are
/// OR'd, matches of different fields AND'd, and `+` (sd_journal_add_disjunction) ORs the
/// group before it with the group after it: `_SYSTEMD_UNIT=a.service PRIORITY=3 +
/// _SYSTEMD_UNIT=b.service` is "a's errors, or anything of b".
enum JournalMatch: Equatable, CustomStringConvertible {
    /// `FIELD=value`: the bytes handed to sd_journal_add_match.
    case field(String)
    /// `+`: sd_journal_add_disjunction.
    case or

    var description: String {
        switch self {
        case .field(let text): return text
        case .or: return "+"
        }
    }

    /// Whether `word` is a match rather than a FILE: a lone `+`, or `FIELD=…` where FIELD is
    /// what journald accepts as a field name (capitals, digits and `_`, not starting with a
    /// digit, at most 64 bytes). A path with such a name is still a FILE as `./FIELD=value`.
    ///
    /// - Parameter word: a positional argument.
    /// - Returns: true for a match.
    static func isMatch(_ word: String) -> Bool {
        if word == "+" { return true }
        guard let eq = word.utf8.firstIndex(of: UInt8(ascii: "=")) else { return false }
        let name = word.utf8[..<eq]
        guard (1...64).contains(name.count), let first = name.first, !(48...57).contains(first) else { return false }
        return name.allSatisfy { (65...90).contains($0) || (48...57).contains($0) || $0 == UInt8(ascii: "_") }
    }

    /// The matches among `words`, in order, checked: a `+` stands between two matches.
    ///
    /// - Parameter words: the positional arguments (FILEs and matches mixed).
    /// - Returns: the matches.
    /// - Throws: a `ValidationError` naming the misplaced `+`.
    static func parse(_ words: [String]) throws -> [JournalMatch] {
        let matches = words.filter(isMatch).map { $0 == "+" ? JournalMatch.or : .field($0) }
        for (i, match) in matches.enumerated() where match == .or {
            if i == 0 || i == matches.count - 1 || matches[i - 1] == .or {
                throw ValidationError("--journal: '+' must stand between two matches (FIELD=value + FIELD=value), got: \(matches.map(\.description).joined(separator: " "))")
            }
        }
        return matches
    }
}

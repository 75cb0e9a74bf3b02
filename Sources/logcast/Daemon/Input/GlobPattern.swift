import Glibc

/// A FILE argument that names files by pattern (`'/var/log/app/*.log'`, `'/srv/**/*.log'`):
/// its path split into components, each matched on its own.
///
/// A component holding `*`, `?` or `[` is matched with `fnmatch(3)` (glibc's, as the shell
/// does, so `[a-z]`, `[!x]` and `\*` mean what they mean there) against the names of one
/// directory; `FNM_PERIOD` keeps `*` from matching names that start with a dot, as a shell
/// glob does. A component that is exactly `**` matches any number of directories, none
/// included (bash's `globstar`); it does not descend into directories whose names start
/// with a dot, nor through symbolic links to directories (a link cycle would never end).
/// The other components are literal. The literal components before the first pattern form
/// the ``base`` directory, where every scan starts.
struct GlobPattern: Sendable, CustomStringConvertible {
    /// One component after the base.
    enum Component: Sendable, Equatable {
        /// A name as written.
        case literal(String)
        /// A name pattern for `fnmatch(3)`.
        case pattern(String)
        /// `**`: any depth of directories.
        case anyDepth
    }

    /// The argument as given.
    let text: String
    /// The directory the literal prefix names (`.` for a relative pattern with none).
    let base: String
    /// The components after the base; the last one names files (never `**`).
    let components: [Component]

    /// The most components a pattern may have (a bound on the scan's recursion).
    static let maxComponents = 64

    var description: String { text }

    /// Whether `argument` is meant as a pattern: it holds `*`, `?` or `[` and no file of
    /// that very name exists (a file literally named `a[1].log` stays a file).
    static func isPattern(_ argument: String) -> Bool {
        guard argument.contains(where: { $0 == "*" || $0 == "?" || $0 == "[" }) else { return false }
        return access(argument, F_OK) != 0
    }

    /// Parses `text`, or says why it cannot be followed.
    ///
    /// - Parameter text: the FILE argument (already known to be a pattern).
    /// - Returns: the pattern, or a message for the user.
    static func parse(_ text: String) -> Result<GlobPattern, GlobPatternError> {
        if text.isEmpty { return .failure(GlobPatternError("an empty pattern")) }
        if text.utf8.count > 4096 { return .failure(GlobPatternError("pattern '\(text.prefix(80))…' is longer than 4096 bytes")) }
        if text.hasSuffix("/") {
            return .failure(GlobPatternError("pattern '\(text)' ends with '/': it must end with a file name or a name pattern"))
        }
        let absolute = text.hasPrefix("/")
        let parts = text.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        if parts.count > maxComponents {
            return .failure(GlobPatternError("pattern '\(text)' has more than \(maxComponents) components"))
        }
        var literalPrefix: [String] = []
        var index = 0
        while index < parts.count, !hasMeta(parts[index]) {
            literalPrefix.append(parts[index])
            index += 1
        }
        guard index < parts.count else {
            return .failure(GlobPatternError("'\(text)' has no '*', '?' or '[': not a pattern"))
        }
        var components: [Component] = []
        for part in parts[index...] {
            if part == "**" {
                // `**/**` is the same as `**`, and scanning it twice would find every
                // directory twice.
                if components.last != .anyDepth { components.append(.anyDepth) }
            } else if hasMeta(part) {
                components.append(.pattern(part))
            } else {
                components.append(.literal(part))
            }
        }
        if components.last == .anyDepth {
            return .failure(GlobPatternError(
                "pattern '\(text)' ends with '**': add a name pattern for the files, e.g. '\(text)/*.log'"))
        }
        let base = literalPrefix.isEmpty ? (absolute ? "/" : ".") : (absolute ? "/" : "") + literalPrefix.joined(separator: "/")
        return .success(GlobPattern(text: text, base: base, components: components))
    }

    /// Whether a component is a pattern.
    static func hasMeta(_ part: String) -> Bool { part.contains { $0 == "*" || $0 == "?" || $0 == "[" } }

    /// Whether `name` (one directory entry) matches the pattern component `pattern`.
    static func matches(_ pattern: String, _ name: String) -> Bool {
        fnmatch(pattern, name, FNM_PERIOD) == 0
    }

    /// `directory/name`, without doubling a `/` after the root.
    static func join(_ directory: String, _ name: String) -> String {
        // A relative pattern with no literal prefix (`'*.log'`) names its files as the
        // shell would (`app.log`, not `./app.log`): that is the name lines are tagged with.
        if directory == "." { return name }
        return directory.hasSuffix("/") ? directory + name : directory + "/" + name
    }
}

/// Why a pattern cannot be followed (said on standard error at start).
struct GlobPatternError: Error, Equatable, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

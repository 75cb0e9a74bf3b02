/// A client's filter: which log lines it wants. Built from `GREP <regex>`.
struct LineFilter: @unchecked Sendable {
    // Swift's Regex is not Sendable; a filter is used on the loop thread that made it.
    let pattern: String
    let regex: Regex<AnyRegexOutput>?

    /// Everything passes.
    static let all = LineFilter(pattern: "", regex: nil)

    /// Compiles `pattern`; an empty pattern matches everything.
    static func compile(_ pattern: String) -> Result<LineFilter, ProtocolError> {
        if pattern.isEmpty { return .success(.all) }
        do {
            return .success(LineFilter(pattern: pattern, regex: try Regex(pattern)))
        } catch {
            return .failure(.invalidRegex(String(describing: error).prefix(200).description))
        }
    }

    func matches(_ line: TaggedLine) -> Bool {
        guard let regex else { return true }
        return (try? regex.firstMatch(in: line.text)) != nil
    }
}

/// A log line and the file it came from.
struct TaggedLine: Sendable, Equatable {
    let file: String
    let text: String

    /// How a line is sent to clients: `<file>: <text>`.
    var wireFormat: String { "\(file): \(text)\n" }
}

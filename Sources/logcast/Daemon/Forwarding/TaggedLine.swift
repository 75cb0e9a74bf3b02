/// A log line and the file it came from (the forwarder's unit, and how a `LINE` from a
/// forwarding logcast arrives).
struct TaggedLine: Sendable, Equatable {
    let file: String
    let text: String

    /// How a line is sent to clients: `<file>: <text>\n`.
    var wireFormat: String { "\(file): \(text)\n" }
}

/// An HTTP version as a message's start line names it: `HTTP/1.1` is major 1, minor 1.
public struct HTTPVersion: Sendable, Equatable, Hashable, Comparable, CustomStringConvertible {
    /// The major version: 1 for every message this library speaks.
    public var major: Int
    /// The minor version: 0 or 1.
    public var minor: Int

    /// A version from its two numbers.
    ///
    /// - Parameters:
    ///   - major: the major version.
    ///   - minor: the minor version.
    public init(major: Int, minor: Int) {
        self.major = major
        self.minor = minor
    }

    /// HTTP/1.0: no chunked framing, connections close unless `Connection: keep-alive`.
    public static let http1_0 = HTTPVersion(major: 1, minor: 0)
    /// HTTP/1.1: persistent connections and chunked framing.
    public static let http1_1 = HTTPVersion(major: 1, minor: 1)

    /// `HTTP/1.1`, as written on a start line.
    public var description: String { "HTTP/\(major).\(minor)" }

    /// Orders versions by major, then minor number.
    public static func < (lhs: HTTPVersion, rhs: HTTPVersion) -> Bool {
        (lhs.major, lhs.minor) < (rhs.major, rhs.minor)
    }
}

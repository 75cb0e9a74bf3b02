/// Why bytes read from a peer are not an HTTP message we accept, with the status a server
/// answers before it closes the connection.
///
/// A server never lets the application see a request that failed to parse: it writes the
/// status (with `Connection: close`) and closes, so bytes after a malformed or hostile
/// message are never read as a request of their own (request smuggling). A client fails the
/// response signal with this error.
public struct HTTPParseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The status a server answers: 400, 413, 414, 431 or 505.
    public let status: Int
    /// What was wrong, for logs and for the body of the error response.
    public let reason: String

    /// An error with its status and reason.
    ///
    /// - Parameters:
    ///   - status: the status a server answers.
    ///   - reason: what was wrong.
    public init(status: Int, reason: String) {
        self.status = status
        self.reason = reason
    }

    /// `400 Bad Request`: the bytes are not HTTP/1.x, or they frame the message ambiguously.
    static func badRequest(_ reason: String) -> HTTPParseError { HTTPParseError(status: 400, reason: reason) }
    /// `413 Content Too Large`: the body is over the configured maximum.
    static func bodyTooLarge(_ limit: Int) -> HTTPParseError {
        HTTPParseError(status: 413, reason: "body larger than \(limit) bytes")
    }
    /// `414 URI Too Long`: the request line is over the configured maximum.
    static func uriTooLong(_ limit: Int) -> HTTPParseError {
        HTTPParseError(status: 414, reason: "request line longer than \(limit) bytes")
    }
    /// `431 Request Header Fields Too Large`: the header section is over the configured maximum.
    static func headersTooLarge(_ limit: Int) -> HTTPParseError {
        HTTPParseError(status: 431, reason: "header section larger than \(limit) bytes")
    }
    /// `505 HTTP Version Not Supported`: HTTP/2 or later on an HTTP/1 connection.
    static func versionNotSupported(_ version: String) -> HTTPParseError {
        HTTPParseError(status: 505, reason: "\(version) is not spoken here, only versions 1.0 and 1.1")
    }

    /// `HTTP 400: reason`.
    public var description: String { "HTTP \(status): \(reason)" }
}

/// A parsed message head: the start line's parts, the header fields, and what the framing
/// rules derived from them. Internal: the server's request and the client's response are
/// built from it.
struct HTTPMessageHead: Sendable {
    /// The request method (`GET`); empty in a response.
    var method: String = ""
    /// The head's text as read (start line, fields), from which the strings below are made
    /// when asked; `nil` until the parser has the head, or once `headers` were changed.
    /// The headers' own: a second reference to the same head cost a retain and a release
    /// per message.
    var raw: HTTPRawHead? { headers.rawHead }
    /// The request target as sent (`/path?query`); empty in a response. Made on each call.
    var target: String { method.isEmpty ? "" : raw?.startLine ?? "" }
    /// The response status; 0 in a request.
    var status: Int = 0
    /// The response's reason phrase; empty in a request. Made on each call.
    var reason: String { method.isEmpty ? raw?.startLine ?? "" : "" }
    var version: HTTPVersion = .http1_1
    var headers = HTTPHeaders()
    /// Whether the connection may carry another message after this one (http_parser's
    /// reading of the version and `Connection`).
    var keepAlive = true
    /// Whether the body is chunked.
    var chunked = false
    /// The body's length from `Content-Length`; `nil` when chunked or absent.
    var contentLength: Int?
    /// Whether the message asks to switch protocols (`Connection: upgrade` + `Upgrade`, or CONNECT).
    var upgrade = false
}

/// How an ``HTTPClient`` connects, pools and times out.
public struct HTTPClientOptions: Sendable {
    /// Seconds to connect (and, for HTTPS, to finish the TLS handshake). Default 10.
    public var connectTimeout = 10.0
    /// Seconds from sending a request to its response head. Default 30.
    public var responseTimeout = 30.0
    /// Connections open at once to one host (scheme, host, port); more requests wait for
    /// one to be free. Default 8.
    public var maxConnectionsPerHost = 8
    /// Seconds a pooled keep-alive connection may wait unused before it is closed. Default 30.
    public var idleTimeout = 30.0
    /// Whether 301, 302, 303, 307 and 308 answers are followed (303, and 301/302 to a
    /// POST, become GET without body, as browsers do). Default `false`.
    public var followRedirects = false
    /// Redirects followed for one request before it fails. Default 5.
    public var maxRedirects = 5
    /// How `http://` URLs are connected. Default: TCP (``TCPHTTPConnector``).
    public var connector: any HTTPConnector = TCPHTTPConnector()
    /// How `https://` URLs are connected, and whom their servers are checked against.
    ///
    /// `nil` by default: ReactiveUVHTTP has no TLS (so a plain HTTP program does not link
    /// OpenSSL), and an `https://` URL fails with
    /// ``HTTPClientError/secureConnectorMissing(_:)``. Import the `ReactiveUVHTTPS` product
    /// and start from `HTTPClientOptions.https(trust:)`, or set its `TLSHTTPConnector` here.
    public var secureConnector: (any HTTPConnector)?
    /// The most bytes of a response head. Default 64 KiB.
    public var maxHeadBytes = 64 * 1024
    /// The most bytes of a response body. Default 64 MiB.
    public var maxBodyBytes = 64 << 20
    /// The most body bytes held for a response whose ``HTTPResponse/body`` is not
    /// subscribed yet; past it, reading the connection pauses until it is (backpressure:
    /// the server's sends stall in TCP). Default 64 KiB.
    public var bodyBufferBytes = 64 * 1024

    /// The defaults above.
    public init() {}
}

/// Why a request failed, when the transport or the parser did not say.
public enum HTTPClientError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The URL is not `http://` or `https://` with a host.
    case invalidURL(String)
    /// A header field would split the request (CR, LF or NUL, or a name that is not a token).
    case invalidHeader(name: String)
    /// No response head within ``HTTPClientOptions/responseTimeout``, or no connection
    /// within ``HTTPClientOptions/connectTimeout``.
    case timedOut
    /// The server closed the connection before the response was complete.
    case connectionClosed
    /// More redirects than ``HTTPClientOptions/maxRedirects``.
    case tooManyRedirects
    /// An event stream was answered with another status or type.
    case notAnEventStream(status: Int, contentType: String?)
    /// An `https://` URL (asked for, or redirected to) with no
    /// ``HTTPClientOptions/secureConnector``: TLS is in the `ReactiveUVHTTPS` product.
    case secureConnectorMissing(String)

    /// What went wrong, in words.
    public var description: String {
        switch self {
        case .invalidURL(let url): "not an http(s) URL: \(url)"
        case .invalidHeader(let name): "header field \(name) holds CR, LF or NUL, or is not a token"
        case .timedOut: "timed out"
        case .connectionClosed: "the server closed the connection before the response was complete"
        case .tooManyRedirects: "too many redirects"
        case .notAnEventStream(let status, let type): "not an event stream: status \(status), Content-Type \(type ?? "none")"
        case .secureConnectorMissing(let url):
            "\(url): https needs TLS, which is in the ReactiveUVHTTPS product: import ReactiveUVHTTPS and use HTTPClientOptions.https(trust:) (or HTTP.request(_:_:headers:body:trust:on:))"
        }
    }
}

/// An `http://` or `https://` URL split for a request.
struct HTTPURL: Sendable, Equatable {
    var secure: Bool
    var host: String
    var port: Int
    /// Path and query, `/` at least.
    var target: String

    init?(_ text: String) {
        let lower = text.lowercased()
        let rest: Substring
        if lower.hasPrefix("http://") {
            secure = false
            rest = text.dropFirst(7)
        } else if lower.hasPrefix("https://") {
            secure = true
            rest = text.dropFirst(8)
        } else {
            return nil
        }
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        var authority = rest[..<authorityEnd]
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        var path = String(rest[authorityEnd...])
        if let hash = path.firstIndex(of: "#") { path = String(path[..<hash]) }
        if path.isEmpty || path.first == "?" { path = "/" + path }
        var hostPart = authority
        var portNumber = secure ? 443 : 80
        if authority.first == "[" {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            hostPart = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if after.first == ":" {
                guard let p = Int(after.dropFirst()), (1...65535).contains(p) else { return nil }
                portNumber = p
            }
        } else if let colon = authority.lastIndex(of: ":") {
            hostPart = authority[..<colon]
            guard let p = Int(authority[authority.index(after: colon)...]), (1...65535).contains(p) else { return nil }
            portNumber = p
        }
        guard !hostPart.isEmpty, !path.utf8.contains(where: { $0 <= 32 || $0 == 0x7F }) else { return nil }
        host = String(hostPart)
        port = portNumber
        target = path
    }

    /// `host:port` as the pool's key (with the scheme) and the `Host` field.
    var hostField: String {
        let h = host.contains(":") ? "[\(host)]" : host
        return port == (secure ? 443 : 80) ? h : "\(h):\(port)"
    }

    var poolKey: String { "\(secure ? "https" : "http")://\(host):\(port)" }

    /// `location` resolved against this URL (absolute, or a path on the same origin).
    func resolve(_ location: String) -> HTTPURL? {
        if let absolute = HTTPURL(location) { return absolute }
        guard location.hasPrefix("/") else { return nil }
        var url = self
        url.target = location
        return url
    }
}

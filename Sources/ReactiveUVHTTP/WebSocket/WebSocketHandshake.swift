/// What the server answers a WebSocket upgrade request with: the `101`'s headers, or a
/// refusal to send as an ordinary response.
public enum WebSocketHandshake: Sendable, Equatable {
    /// Accept: send `101 Switching Protocols` with `headers`, then run a
    /// ``WebSocketConnection`` with `compression` over the upgraded transport.
    case accept(headers: HTTPHeaders, compression: WebSocketDeflateParameters?, subprotocol: String?)
    /// Refuse: send `status` with `headers` and `body` (text/plain), then close.
    case refuse(status: Int, headers: HTTPHeaders, body: String)
}

/// WebSocket (RFC 6455) entry points: the server's handshake and the client's `connect`.
public enum WebSocket {
    /// The GUID RFC 6455 §1.3 appends to the key before hashing.
    static let acceptGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    /// The `Sec-WebSocket-Accept` value for a `Sec-WebSocket-Key`: base64(SHA-1(key + GUID)).
    ///
    /// - Parameter key: the client's key, as sent.
    /// - Returns: the value the server must answer with.
    public static func acceptValue(forKey key: String) -> String {
        Base64.encode(SHA1.digest(Array((key + acceptGUID).utf8)))
    }

    /// Checks an upgrade request and says how to answer it (RFC 6455 §4.2.1, §4.2.2; RFC 7692 §5).
    ///
    /// The HTTP server calls it with the request's method and headers; on
    /// ``WebSocketHandshake/accept(headers:compression:subprotocol:)`` it writes `101` with
    /// those headers (the request's `upgrade(headers:)`) and wraps the upgraded transport in
    /// a ``WebSocketConnection`` with the `compression` given. Refusals:
    /// - `405` for a method other than `GET` (with `Allow: GET`);
    /// - `426` with `Upgrade: websocket` when the request does not ask for `websocket`, and
    ///   with `Sec-WebSocket-Version: 13` when it asks for another version (§4.4);
    /// - `400` when `Connection` lacks `upgrade`, or `Sec-WebSocket-Key` is not 16 bytes in
    ///   base64.
    ///
    /// permessage-deflate is accepted from the first acceptable offer (browsers send
    /// `permessage-deflate; client_max_window_bits`, Python's `websockets` the same), unless
    /// `options.compression` is `nil`. The subprotocol is the first the client lists that
    /// `options.subprotocols` contains; none when there is no match (the client decides).
    ///
    /// - Parameters:
    ///   - method: the request method.
    ///   - headers: the request headers.
    ///   - options: the server's options: compression settings and subprotocols.
    /// - Returns: the answer to send.
    public static func serverHandshake(method: String, headers: HTTPHeaders, options: WebSocketOptions = WebSocketOptions()) -> WebSocketHandshake {
        func refuse(_ status: Int, _ body: String, _ extra: [(String, String)] = []) -> WebSocketHandshake {
            var fields = HTTPHeaders(extra)
            fields.add("Content-Type", "text/plain; charset=utf-8")
            return .refuse(status: status, headers: fields, body: body + "\n")
        }
        guard method == "GET" else { return refuse(405, "WebSocket upgrades must use GET", [("Allow", "GET")]) }
        guard headers.hasToken("Upgrade", "websocket") else {
            return refuse(426, "this resource speaks WebSocket: send Upgrade: websocket", [("Upgrade", "websocket"), ("Connection", "Upgrade")])
        }
        guard headers.hasToken("Connection", "upgrade") else { return refuse(400, "Connection must list upgrade") }
        let versions = headers.values("Sec-WebSocket-Version")
        guard versions.count == 1, versions[0] == "13" else {
            return refuse(426, "unsupported WebSocket version; this server speaks 13", [("Sec-WebSocket-Version", "13")])
        }
        let keys = headers.values("Sec-WebSocket-Key")
        guard keys.count == 1, let decoded = Base64.decode(keys[0]), decoded.count == 16 else {
            return refuse(400, "Sec-WebSocket-Key must be 16 bytes in base64")
        }
        var answer = HTTPHeaders()
        answer.add("Upgrade", "websocket")
        answer.add("Connection", "Upgrade")
        answer.add("Sec-WebSocket-Accept", acceptValue(forKey: keys[0]))
        let offered = headers.values("Sec-WebSocket-Protocol").flatMap { $0.split(separator: ",").map { String($0.trimmingSpaces) } }
        let subprotocol = offered.first { options.subprotocols.contains($0) }
        if let subprotocol { answer.add("Sec-WebSocket-Protocol", subprotocol) }
        var compression: WebSocketDeflateParameters?
        if let settings = options.compression,
            let (parameters, value) = WebSocketDeflateParameters.negotiateServer(offers: headers.values("Sec-WebSocket-Extensions"), settings: settings)
        {
            compression = parameters
            answer.add("Sec-WebSocket-Extensions", value)
        }
        return .accept(headers: answer, compression: compression, subprotocol: subprotocol)
    }
}

/// The client's side of the opening handshake: the request, and the check of the `101`.
struct WebSocketClientHandshake {
    /// The largest response head accepted from a server.
    static let maxHeadSize = 16 * 1024

    let key: String
    let options: WebSocketOptions

    init(options: WebSocketOptions) {
        var generator = SystemRandomNumberGenerator()
        key = Base64.encode((0..<16).map { _ in UInt8.random(in: 0 ... 255, using: &generator) })
        self.options = options
    }

    /// The `GET` request, or an error for a header the caller set that would split it.
    func request(host: String, path: String, headers: HTTPHeaders) throws(WebSocketError) -> [UInt8] {
        guard path.hasPrefix("/"), !path.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7F }) else {
            throw .handshakeFailed("the path must start with / and contain no spaces or control characters: \(path.debugDescription)")
        }
        var fields = HTTPHeaders()
        fields.add("Host", host)
        fields.add("Upgrade", "websocket")
        fields.add("Connection", "Upgrade")
        fields.add("Sec-WebSocket-Key", key)
        fields.add("Sec-WebSocket-Version", "13")
        if !options.subprotocols.isEmpty { fields.add("Sec-WebSocket-Protocol", options.subprotocols.joined(separator: ", ")) }
        if let compression = options.compression {
            fields.add("Sec-WebSocket-Extensions", WebSocketDeflateParameters.clientOffer(compression))
        }
        var text = "GET \(path) HTTP/1.1\r\n"
        for (name, value) in fields.fields { text += "\(name): \(value)\r\n" }
        for (name, value) in headers.fields {
            guard HTTPHeaders.isValidField(name: name, value: value) else {
                throw .handshakeFailed("header \(name.debugDescription) has a character that would split the request")
            }
            text += "\(name): \(value)\r\n"
        }
        text += "\r\n"
        return Array(text.utf8)
    }

    /// The end of the head in `bytes` (the index after `\r\n\r\n`), if it is all there.
    static func headEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for i in 0...(bytes.count - 4) where bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 {
            return i + 4
        }
        return nil
    }

    /// Checks the server's response head (without its final blank line) and returns the
    /// compression and subprotocol agreed.
    func check(head: [UInt8]) throws(WebSocketError) -> (compression: WebSocketDeflateParameters?, subprotocol: String?) {
        guard let text = String(validating: head, as: UTF8.self) else { throw .handshakeFailed("the response head is not UTF-8") }
        var lines = text.split(separator: "\r\n", omittingEmptySubsequences: false)
        while lines.last?.isEmpty == true { lines.removeLast() }
        guard let statusLine = lines.first else { throw .handshakeFailed("empty response") }
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0] == "HTTP/1.1" || parts[0] == "HTTP/1.0" else {
            throw .handshakeFailed("not an HTTP response: \(String(statusLine.prefix(80)).debugDescription)")
        }
        guard parts[1] == "101" else { throw .handshakeFailed("the server answered \(statusLine.dropFirst(parts[0].count + 1)), not 101") }
        var headers = HTTPHeaders()
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex, line.first != " ", line.first != "\t" else {
                throw .handshakeFailed("malformed header line \(String(line.prefix(80)).debugDescription)")
            }
            headers.add(String(line[..<colon]), String(line[line.index(after: colon)...].trimmingSpaces))
        }
        guard headers.hasToken("Upgrade", "websocket") else { throw .handshakeFailed("the 101 lacks Upgrade: websocket") }
        guard headers.hasToken("Connection", "upgrade") else { throw .handshakeFailed("the 101 lacks Connection: Upgrade") }
        let expected = WebSocket.acceptValue(forKey: key)
        guard headers.values("Sec-WebSocket-Accept") == [expected] else {
            throw .handshakeFailed("Sec-WebSocket-Accept is \(headers["Sec-WebSocket-Accept"] ?? "missing"), expected \(expected)")
        }
        var subprotocol: String?
        if let chosen = headers["Sec-WebSocket-Protocol"] {
            guard options.subprotocols.contains(chosen) else { throw .handshakeFailed("the server chose subprotocol \(chosen), which we did not offer") }
            subprotocol = chosen
        }
        let extensions = headers.values("Sec-WebSocket-Extensions")
        var compression: WebSocketDeflateParameters?
        if let settings = options.compression {
            do { compression = try WebSocketDeflateParameters.acceptClient(answer: extensions, settings: settings) } catch let error as WebSocketError {
                throw error
            } catch {
                throw .handshakeFailed("\(error)")
            }
        } else if !extensions.isEmpty {
            throw .handshakeFailed("the server chose an extension we did not offer: \(extensions.joined(separator: ", "))")
        }
        return (compression, subprotocol)
    }
}

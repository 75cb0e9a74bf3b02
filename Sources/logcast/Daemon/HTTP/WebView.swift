import Glibc
import ReactiveUV
import ReactiveUVHTTP

/// The live web view on `--http` (issue 31): `GET /` (the page), `/webview.js`,
/// `/webview.css` (its script and style, from ``WebViewPage``) and `GET /ws` (the WebSocket
/// whose connection becomes a logcast client through ``WebViewTransport``).
///
/// **Who may look.** Without `--auth-token-file` the page and `/ws` are open (on a
/// loopback address; a non-loopback `--http` follows `--listen`'s protected mode, as
/// `/metrics` does). With a token, the page is opened once as `/?token=<token>`: logcast
/// answers `303` to `/` with a cookie (`logcast_token`, the token in hex; `HttpOnly`,
/// `SameSite=Strict`, `Path=/`) so the token leaves the address bar, and the page and `/ws`
/// then need that cookie (or `?token=` again: non-browser clients may use either). The
/// client is admitted as `token`, so `--access-file` rules for `token` apply to the view
/// as to a TCP client. A WebSocket whose `Origin` is not this server is refused (`403`): a
/// cookie would otherwise let another site's page read the logs (cross-site WebSocket
/// hijacking). The script and style are static and carry no log data: they are served to
/// anyone.
enum WebView {
    /// The cookie that carries the token after `/?token=`.
    static let cookieName = "logcast_token"

    /// Only logcast's own script, style and WebSocket: no inline script, no other origin,
    /// no frames, no forms, no plugins.
    static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

    /// Headers every web view response carries.
    static let commonHeaders: [(String, String)] = [
        ("Content-Security-Policy", contentSecurityPolicy), ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "no-referrer"), ("Cache-Control", "no-store"), ("X-Frame-Options", "DENY"),
    ]

    /// The largest message the page sends (a command): more is a protocol error (1009).
    static let maxMessageSize = 64 << 10

    /// Answers `request` if it is the web view's; returns `false` for any other path.
    ///
    /// - Parameters:
    ///   - request: the HTTP request.
    ///   - server: the daemon the view's client joins.
    /// - Returns: whether the request was the web view's (and is answered).
    static func answer(_ request: HTTPRequest, server: LogcastServer) -> Bool {
        let path = request.path
        guard path == "/" || path == "/ws" || path == "/webview.js" || path == "/webview.css" else { return false }
        if path == "/ws" {
            openWebSocket(request, server: server)
            return true
        }
        guard request.method == "GET" || request.method == "HEAD" else {
            _ = request.respond(status: 405, headers: ["Allow": "GET, HEAD"], text: "only GET and HEAD\n")
            return true
        }
        switch path {
        case "/webview.js": respond(request, "text/javascript; charset=utf-8", WebViewPage.script)
        case "/webview.css": respond(request, "text/css; charset=utf-8", WebViewPage.style)
        default: page(request, server: server)
        }
        return true
    }

    /// Answers `200` with `text` as `type`, with the ``commonHeaders``.
    ///
    /// - Parameters:
    ///   - request: the request.
    ///   - type: the `Content-Type`.
    ///   - text: the body.
    ///   - extra: more header fields.
    static func respond(_ request: HTTPRequest, _ type: String, _ text: String, extra: [(String, String)] = []) {
        _ = request.respond(headers: HTTPHeaders(commonHeaders + [("Content-Type", type)] + extra), text: text)
    }

    /// `/`: the page, after the token check; `?token=` sets the cookie and redirects.
    ///
    /// - Parameters:
    ///   - request: the request.
    ///   - server: the daemon (its token).
    static func page(_ request: HTTPRequest, server: LogcastServer) {
        guard let token = server.security.token else {
            respond(request, "text/html; charset=utf-8", WebViewPage.html)
            return
        }
        if let given = request.queryParameter("token") {
            guard ClientAuth.constantTimeEquals(Array(given.utf8), token) else {
                refuse(request, "wrong token")
                return
            }
            // The token leaves the address bar (and the history) for a cookie.
            let cookie = "\(cookieName)=\(hex(token)); HttpOnly; SameSite=Strict; Path=/"
            _ = request.respond(status: 303, headers: HTTPHeaders(commonHeaders + [("Location", "/"), ("Set-Cookie", cookie)]),
                                text: "see /\n")
            return
        }
        guard authorized(request, token: token) else {
            refuse(request, "this logcast asks for its token: open /?token=<token> once (a cookie keeps it)")
            return
        }
        respond(request, "text/html; charset=utf-8", WebViewPage.html)
    }

    /// Answers `401` saying `why` (never the token).
    ///
    /// - Parameters:
    ///   - request: the request.
    ///   - why: what is missing.
    static func refuse(_ request: HTTPRequest, _ why: String) {
        _ = request.respond(status: 401, headers: HTTPHeaders(commonHeaders + [("Content-Type", "text/plain; charset=utf-8")]),
                            text: "authorization required: \(why)\n")
    }

    /// Whether the request carries the token: the cookie, or `?token=` (constant time).
    ///
    /// - Parameters:
    ///   - request: the request.
    ///   - token: the token from `--auth-token-file`.
    /// - Returns: whether the cookie or the query parameter holds it.
    static func authorized(_ request: HTTPRequest, token: [UInt8]) -> Bool {
        if let given = request.queryParameter("token") { return ClientAuth.constantTimeEquals(Array(given.utf8), token) }
        let expected = Array(hex(token).utf8)
        for header in request.headers.values("Cookie") {
            for pair in header.split(separator: ";") {
                let trimmed = pair.drop(while: { $0 == " " })
                guard trimmed.hasPrefix(cookieName + "=") else { continue }
                if ClientAuth.constantTimeEquals(Array(trimmed.dropFirst(cookieName.count + 1).utf8), expected) { return true }
            }
        }
        return false
    }

    /// Whether a browser's `Origin` (absent for non-browser clients) is this server.
    ///
    /// - Parameter request: the WebSocket upgrade request.
    /// - Returns: `true` without an `Origin`, or when it names the `Host` asked for.
    static func sameOrigin(_ request: HTTPRequest) -> Bool {
        let origins = request.headers.values("Origin")
        guard let origin = origins.first else { return true }
        guard origins.count == 1, let host = request.headers.values("Host").first else { return false }
        return origin == "http://\(host)" || origin == "https://\(host)"
    }

    /// `/ws`: the origin and token checks, the handshake, then a client of the daemon
    /// (``LogcastServer/accept(_:identity:)``) greeted with the files it may choose from.
    ///
    /// - Parameters:
    ///   - request: the upgrade request.
    ///   - server: the daemon.
    static func openWebSocket(_ request: HTTPRequest, server: LogcastServer) {
        let plain = HTTPHeaders(commonHeaders + [("Content-Type", "text/plain; charset=utf-8")])
        guard sameOrigin(request) else {
            _ = request.respond(status: 403, headers: plain, text: "a WebSocket from another origin\n")
            return
        }
        let token = server.security.token
        if let token, !authorized(request, token: token) {
            refuse(request, "this logcast asks for its token: open /?token=<token> once (a cookie keeps it)")
            return
        }
        guard !server.stopping else {
            _ = request.respond(status: 503, headers: plain, text: "shutting down\n")
            return
        }
        // With a hub, the view reads through its own replay: from where the page asks
        // (`?since=`, after a reconnect) or from now.
        var since: String?
        if server.since != nil {
            if let asked = request.queryParameter("since") {
                guard !asked.isEmpty, asked.count <= 40, asked.allSatisfy({ $0.isASCII && ($0.isNumber || "@.:-TZ".contains($0)) }) else {
                    _ = request.respond(status: 400, headers: plain, text: "since: a stream sequence, @<epoch seconds> or an ISO time\n")
                    return
                }
                since = asked
            } else {
                since = "@" + epochNow()
            }
        }
        var options = WebSocketOptions()
        options.maxMessageSize = maxMessageSize
        // A browser that vanished (a laptop closed) is noticed and its client ended.
        options.pingInterval = 30
        options.pingTimeout = 30
        // No permessage-deflate: deflating every frame for every page was 44% of logcast's
        // CPU with three pages attached (after the byte-level frames; logcast-bench costs,
        // Benchmarks/README.md), paid per line per page on the loop that serves every
        // client, while the page sees the same messages either way. The cost moves to the
        // link (JSON lines uncompressed), which for a view on loopback or a LAN is free.
        options.compression = nil
        switch WebSocket.serverHandshake(method: request.method, headers: request.headers, options: options) {
        case .refuse(let status, let headers, let body):
            _ = request.respond(status: status, headers: headers, text: body)
        case .accept(let headers, let compression, let subprotocol):
            _ = request.upgrade(headers: headers).subscribe(
                next: { upgrade in
                    let ws = WebSocketConnection(upgrade: upgrade, role: .server, options: options, compression: compression, subprotocol: subprotocol)
                    // The named files and those the patterns follow now (a file a pattern
                    // finds later still shows in the list of every line, not in the chooser).
                    let files = server.config.files + server.globs.flatMap(\.followedPaths)
                    let transport = WebViewTransport(ws: ws, knownFiles: files, initialSince: since, logger: server.logger)
                    // The token was checked above: the view is `token`, as after AUTH.
                    server.accept(transport, identity: token == nil ? nil : (name: "token", how: "web view"))
                    guard let session = server.sessions.values.first(where: { $0.transport === transport }), !session.ended else { return }
                    let access = session.feed.access
                    transport.hello(files: files.filter { path in
                        guard let access else { return true }
                        return Array(path.utf8).withUnsafeBufferPointer { access.allows($0) }
                    })
                },
                error: { error in server.logger.debug("web view upgrade failed: \(error)") })
        }
    }

    /// The wall-clock time, seconds since the epoch with milliseconds (`SINCE @…`).
    ///
    /// - Returns: e.g. `1764293000.123`.
    static func epochNow() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let millis = Int(now.tv_nsec) / 1_000_000
        let fraction = String(millis + 1000).dropFirst()
        return "\(now.tv_sec).\(fraction)"
    }

    /// `bytes` in lowercase hexadecimal (a cookie value needs no quoting).
    ///
    /// - Parameter bytes: the bytes.
    /// - Returns: two digits per byte.
    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes { out += [digits[Int(byte >> 4)], digits[Int(byte & 15)]] }
        return String(decoding: out, as: UTF8.self)
    }
}

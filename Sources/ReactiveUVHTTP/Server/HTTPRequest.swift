import ReactiveUV

/// One request read by an HTTP server: its head, its body as a signal, and the calls that
/// answer it.
///
/// **Threads.** Requests arrive on the connection's loop thread. ``respond(status:headers:body:)``
/// and its siblings may be called from any thread (they hop to the loop). Responses on a
/// connection are written in request order whatever order the application answers in
/// (pipelining).
///
/// **Exactly one answer.** The first `respond` (or ``upgrade(headers:)``) wins; later ones
/// return `false` and write nothing. A request never answered keeps its connection until
/// the client goes away or the server's listen subscription is disposed.
public final class HTTPRequest: @unchecked Sendable, CustomStringConvertible {
    // Thread-safety: the head is immutable; everything else is confined to `loop`'s thread
    // (public calls from other threads hop there through `EventLoop.execute`).

    /// The head as parsed, kept whole: the request's fields below are read from it. Moved
    /// in whole (see `init`): taking its method and headers out into fields of their own
    /// copied them (a retain each) and then destroyed the rest of the head (a release
    /// each), per request.
    private let head: HTTPMessageHead

    /// The request method as sent: `GET`, `POST`, ...
    public var method: String { head.method }
    /// The request target as sent: path and query, `/search?q=x`.
    ///
    /// Made from the request's head bytes on each call (most requests are routed on
    /// ``path`` once, and a string made for every request cost more than reading it).
    public var target: String { head.headers.rawHead?.startLine ?? "" }
    /// The HTTP version: 1.0 or 1.1.
    public var version: HTTPVersion { head.version }
    /// The header fields, in order.
    public var headers: HTTPHeaders { head.headers }
    /// The loop of the connection the request came on; its events arrive on this loop's thread.
    ///
    /// The connection's, not a field of its own (as ``peer``): copying both into every
    /// request cost a retain in `init` and a release in `deinit` each.
    public var loop: EventLoop { connection.loop }
    /// The connection's peer (`127.0.0.1:51234`, a socket path).
    public var peer: String { connection.peer }

    /// The path part of ``target`` (before `?`), still percent-encoded.
    public var path: Substring {
        // `Substring(_:)`, not `[...]`: the range subscript checked the string's bounds
        // again (~57 instructions a request, callgrind, ruv-http-hello).
        Substring(head.headers.withRawHead { $0.startLineBeforeQuery } ?? "")
    }
    /// The query part of ``target`` (after `?`), still percent-encoded; `nil` without `?`.
    public var query: Substring? {
        let target = target
        return target.utf8.firstIndex(of: UInt8(ascii: "?")).map { target[target.index(after: $0)...] }
    }

    /// The value of query parameter `name` (first occurrence, `+` and `%XX` decoded).
    ///
    /// - Parameter name: the parameter's name as it appears in the query.
    /// - Returns: the decoded value, `""` for a bare `name`, or `nil` when absent.
    public func queryParameter(_ name: String) -> String? {
        guard let query else { return nil }
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            if HTTPRouter.percentDecode(parts[0]) == name { return parts.count > 1 ? HTTPRouter.percentDecode(parts[1]) : "" }
        }
        return nil
    }

    /// The connection the request came on. Strong: an application may keep a request and
    /// answer it after its client is gone, when nothing else holds the connection any more
    /// (`unowned` trapped there: one late answer ended the whole server). The cycle with
    /// the connection's queue lasts while the request waits in it; the connection empties
    /// the queue when it closes, and a closed connection's `flush()` writes nothing.
    let connection: HTTPServerConnection
    var keepAliveRequested: Bool { head.keepAlive }
    /// Whether the client waits for `100 Continue` before sending the body.
    ///
    /// Looked up when asked, not made in `init`: it matters only while a body is unread,
    /// and callers test that first (`bodyEnded`, `bodySubscribed`); walking the fields for
    /// `Expect` in every request's `init` cost ~90 instructions and a retain and a release.
    var expectsContinue: Bool { head.version >= .http1_1 && head.headers.hasToken("Expect", "100-continue") }
    var upgradeRequested: Bool { head.upgrade }
    /// Whether the message ends with its head: neither chunked nor a `Content-Length` but
    /// 0 (a request has a body only by one of those, RFC 9112 §6.3), and no upgrade.
    var endsWithHead: Bool { !head.chunked && (head.contentLength ?? 0) == 0 && !head.upgrade }

    // Body and response state: the loop thread's only (docs/ENGINE.md, rule 2), so without
    // the run-time exclusivity check per access (`@exclusivity(unchecked)`).
    // Body state (loop thread).
    @exclusivity(unchecked) var bodyChunks: [[UInt8]] = []
    @exclusivity(unchecked) var bodyEnded = false
    @exclusivity(unchecked) var bodyTrailers = HTTPHeaders()
    @exclusivity(unchecked) var bodySubscriber: Subscriber<[UInt8]>?
    @exclusivity(unchecked) var bodySubscribed = false
    @exclusivity(unchecked) var bodyDiscarding = false
    @exclusivity(unchecked) var sentContinue = false

    // Response state (loop thread).
    /// Boxed: a request without one (every byte answer) then lets go of a nil reference in
    /// `deinit`, not of an enum through an outlined switch over its cases (~19 instructions
    /// a request); the box is made only for a stream or an upgrade.
    @exclusivity(unchecked) private var storedResponse: HTTPBox<HTTPPendingResponse>?
    /// Which answer the request has: kept beside ``response``, as asking the enum itself
    /// (`switch request.response`, even without binding its fields) copied it out of the
    /// request first, a retain and a release of each of its references, per response
    /// (callgrind, ruv-http-hello).
    @exclusivity(unchecked) private(set) var responseKind = HTTPPendingResponse.Kind.none
    /// A streamed or upgrade answer, once given (a byte answer is in the fields below).
    var response: HTTPPendingResponse? {
        get { storedResponse?.value }
        set {
            responseKind = newValue?.kind ?? .none
            storedResponse = newValue.map { HTTPBox($0) }
        }
    }
    /// A byte answer (``responseKind`` `.bytes`): its parts as fields of the request, not a
    /// case of ``HTTPPendingResponse``. Stored from `respond`'s arguments they cost a
    /// retain each; the enum was made, copied into the request and copied out again to be
    /// written, ~5 retains and as many releases more per response. The connection reads
    /// them in place (`inout`, see `HTTPServerConnection.flush`).
    @exclusivity(unchecked) private(set) var responseStatus = 0
    @exclusivity(unchecked) var responseHeaders = HTTPHeaders()
    @exclusivity(unchecked) var responseBody: [UInt8] = []

    /// Lets go of a streamed answer's body signal once it is being written; the request
    /// still counts as answered with a stream.
    func dropStreamedBody() { storedResponse = nil }

    /// Whether the request's method is `HEAD`, read in place: ``method`` returns a copy.
    @inline(__always)
    var isHead: Bool { head.method.utf8.count == 4 && head.method == "HEAD" }
    @exclusivity(unchecked) var answered = false

    // `consuming`: the parser makes the head for this request and hands it over whole
    // (``HTTPParser/onHead``), so it is moved into `head`, not copied and destroyed. The
    // head's text (``target``, ``path``) is read through its headers, which hold it: a
    // field of its own cost a retain and a release a request.
    init(head: consuming HTTPMessageHead, connection: HTTPServerConnection) {
        self.connection = connection
        self.head = head
    }

    /// `GET /path HTTP/1.1`.
    public var description: String { "\(method) \(target) \(version)" }

    // MARK: - Body

    /// The request body, chunk by chunk, then completion (also for a request without body).
    ///
    /// One subscription per request: a second fails with ``HTTPServerError/bodyAlreadySubscribed``.
    /// Chunks that arrived before the subscription are delivered first; while none is
    /// subscribed, at most ``HTTPServerOptions/bodyBufferBytes`` are held and reading pauses
    /// (backpressure: the client's sends stall in TCP). A subscriber receives chunks on the
    /// loop's thread, synchronously as they are read, so reading goes on only as fast as it
    /// takes them. Subscribing to the body of a request with `Expect: 100-continue` sends
    /// `100 Continue` (not for a request without a body, whose body completes at once).
    /// Disposing discards the rest of the body (the connection stays usable).
    /// The body fails if the connection fails mid-body.
    ///
    /// `--[chunk]--[chunk]--|`
    public var body: Signal<[UInt8]> {
        Signal.create { subscriber in
            let d = CompoundDisposable()
            self.onLoop { self.attachBody(subscriber, d) }
            return d
        }
    }

    /// The whole body as one array, once it has arrived (bounded by ``HTTPServerOptions/maxBodyBytes``).
    public var collectedBody: Signal<[UInt8]> {
        body.aggregate(start: [UInt8]()) { all, chunk in
            var all = all
            all.append(contentsOf: chunk)
            return all
        }
    }

    /// The chunked trailer fields, valid once ``body`` has completed.
    public var trailers: HTTPHeaders { bodyTrailers }

    private func attachBody(_ subscriber: Subscriber<[UInt8]>, _ d: CompoundDisposable) {
        guard !d.isDisposed else { return }
        guard !bodySubscribed else {
            subscriber.sendError(HTTPServerError.bodyAlreadySubscribed)
            return
        }
        bodySubscribed = true
        let held = bodyChunks
        bodyChunks = []
        connection.bodyBytesHeld -= held.reduce(0) { $0 + $1.count }
        for chunk in held where !d.isDisposed { subscriber.sendNext(chunk) }
        if bodyEnded {
            subscriber.sendCompleted()
        } else {
            bodySubscriber = subscriber
            d.add(Disposable { [weak self] in
                guard let self else { return }
                self.onLoop {
                    if self.bodySubscriber != nil {
                        self.bodySubscriber = nil
                        self.bodyDiscarding = true
                    }
                }
            })
            if expectsContinue { connection.sendContinueIfFirst(self) }
        }
        connection.resumeReading()
    }

    func receiveBody(_ bytes: UnsafeRawBufferPointer) {
        if let bodySubscriber {
            bodySubscriber.sendNext(Array(bytes))
        } else if !bodyDiscarding && !answeredAndDone {
            bodyChunks.append(Array(bytes))
            connection.bodyBytesHeld += bytes.count
            let server = connection.server
            server.maxBodyBytesHeld = max(server.maxBodyBytesHeld, connection.bodyBytesHeld)
        }
    }

    /// A request answered and written no longer keeps body bytes nobody asked for.
    @exclusivity(unchecked) var answeredAndDone = false

    func endBody(trailers: HTTPHeaders) {
        bodyEnded = true
        // Most messages have no trailers, and `bodyTrailers` starts empty: storing empty
        // ones was a retain and a release per request.
        if trailers.count != 0 { bodyTrailers = trailers }
        if let s = bodySubscriber {
            bodySubscriber = nil
            s.sendCompleted()
        }
    }

    func failBody(_ error: any Error) {
        if let s = bodySubscriber {
            bodySubscriber = nil
            s.sendError(error)
        }
    }

    // MARK: - Responding

    /// Answers with a body of bytes (sent with `Content-Length`).
    ///
    /// Fields the server owns are set by it: `Content-Length`, `Transfer-Encoding`,
    /// `Connection` and (unless given) `Date`. A field whose name is not a token or whose
    /// value holds CR, LF or NUL is refused (``HTTPHeaders/isValidField(name:value:)``):
    /// nothing of this answer is written, the client gets `500` instead, and the call
    /// returns `false`. Callable from any thread.
    ///
    /// - Parameters:
    ///   - status: the status code, 200 to 599 (or 1xx/204/304, sent without a body).
    ///   - headers: the application's fields.
    ///   - body: the body; not written for `HEAD` or a status without body.
    /// - Returns: `false` when the request was already answered or a field was refused.
    @discardableResult
    public func respond(status: Int = 200, headers: HTTPHeaders = [:], body: [UInt8]) -> Bool {
        if onLoopThread { return answerOnLoop(status: status, headers: headers, body: body) }
        // From another thread: hop, and report what can be known here (a refused field);
        // "already answered" is only known on the loop, where the extra answer is dropped.
        loop.execute { _ = self.answerOnLoop(status: status, headers: headers, body: body) }
        return headers.allFieldsValid
    }

    /// Answers with a UTF-8 text body (sent with `Content-Length`); see ``respond(status:headers:body:)``.
    ///
    /// - Parameters:
    ///   - status: the status code.
    ///   - headers: the application's fields; `Content-Type` is `text/plain; charset=utf-8`
    ///     unless given.
    ///   - text: the body.
    /// - Returns: `false` when the request was already answered or a field was refused.
    @discardableResult
    public func respond(status: Int = 200, headers: HTTPHeaders = [:], text: String) -> Bool {
        var headers = headers
        if !headers.contains("Content-Type") { headers.add("Content-Type", "text/plain; charset=utf-8") }
        return respond(status: status, headers: headers, body: Array(text.utf8))
    }

    /// Answers with a body streamed from `body`: chunked to HTTP/1.1 clients, close-delimited
    /// to HTTP/1.0 ones (never chunked to them).
    ///
    /// `body` is subscribed once every earlier response on the connection is written, and
    /// its chunks are written as they come, the connection's write queue bounded (``HTTPTransport/send(_:)``).
    /// Completion ends the body; an error closes the connection (HTTP/1.1 has no way to say
    /// "this body failed" but cutting it short). A client that goes away disposes it.
    ///
    /// - Parameters:
    ///   - status: the status code.
    ///   - headers: the application's fields.
    ///   - body: the body's chunks; empty chunks are skipped.
    /// - Returns: `false` when the request was already answered or a field was refused.
    @discardableResult
    public func respond(status: Int = 200, headers: HTTPHeaders = [:], stream body: Signal<[UInt8]>) -> Bool {
        answer(.stream(status: status, headers: headers, body: body))
    }

    /// Answers with a text body streamed from `body`, each string as UTF-8; see
    /// ``respond(status:headers:stream:)-(_,_,Signal<[UInt8]>)``.
    ///
    /// - Parameters:
    ///   - status: the status code.
    ///   - headers: the application's fields.
    ///   - body: the body's pieces.
    /// - Returns: `false` when the request was already answered or a field was refused.
    @discardableResult
    public func respond(status: Int = 200, headers: HTTPHeaders = [:], stream body: Signal<String>) -> Bool {
        answer(.stream(status: status, headers: headers, body: body.map { Array($0.utf8) }))
    }

    /// Switches the connection to another protocol (WebSocket): the seam a protocol built
    /// on HTTP upgrades through.
    ///
    /// Subscribing answers the request: once every earlier response on the connection is
    /// written, `101 Switching Protocols` is written with `headers` (add `Upgrade` and
    /// `Connection: Upgrade` and the protocol's own fields), HTTP stops on the connection,
    /// and one ``HTTPUpgrade`` is sent, the transport and the bytes already read past this
    /// request's head, then completion. The receiver owns the transport from then on (the
    /// listen subscription still closes it when disposed). Fails with
    /// ``HTTPServerError/alreadyAnswered`` when the request was answered, with
    /// ``HTTPServerError/invalidHeader(name:)`` for a field that could split the message,
    /// and with the transport's error when the write fails. Events arrive on ``loop``'s
    /// thread. To refuse a handshake, call ``respond(status:headers:body:)``
    /// (400 or 426) instead.
    ///
    /// - Parameter headers: the fields of the `101` response.
    /// - Returns: a signal of one upgrade.
    public func upgrade(headers: HTTPHeaders) -> Signal<HTTPUpgrade> {
        Signal.create { subscriber in
            let d = CompoundDisposable()
            self.onLoop {
                guard !d.isDisposed else { return }
                guard !self.answered else { return subscriber.sendError(HTTPServerError.alreadyAnswered) }
                if !headers.fieldsChecked, let bad = headers.fields.first(where: { !HTTPHeaders.isValidField(name: $0.name, value: $0.value) }) {
                    return subscriber.sendError(HTTPServerError.invalidHeader(name: bad.name))
                }
                self.answered = true
                self.response = .upgrade(headers: headers, subscriber: subscriber)
                self.connection.flush()
            }
            return d
        }
    }

    // `consuming`, here and in `answerOnLoop`: the response made by `respond` is moved
    // through into ``response``; passed borrowed, it was copied into the request (a retain
    // of its headers and of its body, and their release when the caller's copy died).
    private func answer(_ response: consuming HTTPPendingResponse) -> Bool {
        if loop.isCurrentThread { return answerOnLoop(response) }
        // From another thread: hop, and report what can be known here (a refused field);
        // "already answered" is only known on the loop, where the extra answer is dropped.
        let valid = response.headersValid
        let box = HTTPBox(response)
        loop.execute { _ = self.answerOnLoop(box.value) }
        return valid
    }

    private func answerOnLoop(_ response: consuming HTTPPendingResponse) -> Bool {
        guard !answered else { return false }
        answered = true
        let valid = response.headersValid
        if valid {
            self.response = response
        } else {
            responseStatus = 500
            responseKind = .bytes
        }
        connection.flush()
        return valid
    }

    /// A byte answer, on the loop: stored in the request's fields (see ``responseStatus``).
    private func answerOnLoop(status: Int, headers: HTTPHeaders, body: [UInt8]) -> Bool {
        guard !answered else { return false }
        answered = true
        let valid = headers.allFieldsValid
        if valid {
            responseStatus = status
            responseHeaders = headers
            responseBody = body
        } else {
            responseStatus = 500
        }
        responseKind = .bytes
        connection.flush()
        return valid
    }

    /// Whether the caller is on ``loop``'s thread, asked of the loop without a retain
    /// (`_withUnsafeGuaranteedRef`): `connection.loop.isCurrentThread` retained and released
    /// the loop around the call, per answer. Sound: the loop is a `let` of the connection,
    /// a `let` of this request, which the caller's `self` holds for the call.
    @inline(__always)
    var onLoopThread: Bool {
        Unmanaged.passUnretained(connection.loop)._withUnsafeGuaranteedRef { $0.isCurrentThread }
    }

    func onLoop(_ work: @escaping () -> Void) {
        if loop.isCurrentThread {
            work()
        } else {
            let box = HTTPBox(work)
            loop.execute { box.value() }
        }
    }
}

/// A mutable box for handing a non-Sendable value to the loop's thread, where it is used alone.
final class HTTPBox<T>: @unchecked Sendable {
    // Thread-safety: written before the hand-off, read after it on the loop's thread.
    var value: T
    init(_ value: T) { self.value = value }
}

/// A streamed or upgrade answer waiting for its turn on the connection (a byte answer is
/// held in ``HTTPRequest/responseStatus`` and the fields after it).
enum HTTPPendingResponse {
    case stream(status: Int, headers: HTTPHeaders, body: Signal<[UInt8]>)
    case upgrade(headers: HTTPHeaders, subscriber: Subscriber<HTTPUpgrade>)

    /// ``HTTPHeaders/allFieldsValid`` of ``headers``, asked of the enum in place: through
    /// ``headers`` the headers were copied out first (a retain and a release per response).
    var headersValid: Bool {
        switch self {
        case .stream(_, let h, _), .upgrade(let h, _): h.allFieldsValid
        }
    }

    /// Which answer a request has (``HTTPRequest/responseKind``); `none` stands for none yet.
    enum Kind { case none, bytes, stream, upgrade }

    var kind: Kind {
        switch self {
        case .stream: .stream
        case .upgrade: .upgrade
        }
    }
}

/// Misuse of a request, reported as a signal error.
public enum HTTPServerError: Error, Sendable, Equatable, CustomStringConvertible {
    /// ``HTTPRequest/body`` was subscribed a second time.
    case bodyAlreadySubscribed
    /// The request was answered already.
    case alreadyAnswered
    /// A header field given to ``HTTPRequest/upgrade(headers:)`` could split the message.
    case invalidHeader(name: String)

    /// What went wrong, in words.
    public var description: String {
        switch self {
        case .bodyAlreadySubscribed: "the request body was already subscribed"
        case .alreadyAnswered: "the request was already answered"
        case .invalidHeader(let name): "header field \(name) holds CR, LF or NUL, or is not a token"
        }
    }
}

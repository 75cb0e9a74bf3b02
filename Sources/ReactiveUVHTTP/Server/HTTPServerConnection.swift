import CSystemShims
import ReactiveUV

/// One connection of an HTTP server: reads, parses, hands requests to the application and
/// writes their responses in request order.
///
/// ```
///  transport.reads ──▶ received ──▶ HTTPParser.parse (straight on the read buffer)
///        ▲                              │ onHead ─▶ HTTPRequest ─▶ queue + server.deliver
///        │ stop/resume                  │ onBody ─▶ request body (held ≤ bodyBufferBytes)
///        │ (backpressure,               │ onEnd
///        │  pipelining bound,           ▼
///        │  upgrade, error)          queue: [HTTPRequest] in request order
///        │                              │ flush: the answered prefix, one write per batch
///        └──────────────────────────────┴─▶ transport.write / send ─▶ close | next batch
/// ```
///
/// Everything here runs on the connection's loop thread; requests hop there for calls
/// made elsewhere. Reading stops (`reads` disposed, so libuv stops reading and TCP pushes
/// back on the client) while: too many requests wait for answers, too many body bytes wait
/// for a subscriber, a request asking to upgrade waits for its answer, or no further request
/// will be answered (an error, `Connection: close`). Bytes read but not parsed wait in
/// `pending`; after an upgrade they are the new protocol's first bytes.
final class HTTPServerConnection {
    let transport: any HTTPTransport
    let loop: EventLoop
    /// The transport's description, every request's ``HTTPRequest/peer``: asked of the
    /// transport once, not through the protocol per request.
    let peer: String
    let server: HTTPServerState
    private let parser: HTTPParser
    // Every `var` below lives on the connection's loop thread (docs/ENGINE.md, rule 2):
    // `@exclusivity(unchecked)` drops the run-time check per access, which cost more than
    // the field's work on the per-request path.

    @exclusivity(unchecked) private var reading: Disposable?
    private var watchingClose: Disposable?
    @exclusivity(unchecked) private var pending: [UInt8] = []
    @exclusivity(unchecked) private(set) var queue: [HTTPRequest] = []
    @exclusivity(unchecked) private var current: HTTPRequest?
    @exclusivity(unchecked) var bodyBytesHeld = 0
    @exclusivity(unchecked) private var writing = false
    @exclusivity(unchecked) private var parsing = false
    /// No request after the ones queued will be read (error, `Connection: close`, EOF).
    @exclusivity(unchecked) private var noMoreRequests = false
    /// A request asked to switch protocols: nothing after it is parsed until it is answered.
    @exclusivity(unchecked) private var upgradeHeld = false
    private var errorResponse: [UInt8]?
    @exclusivity(unchecked) private var lingering = false
    private var lingerSince: UInt64 = 0
    @exclusivity(unchecked) private(set) var isClosed = false
    @exclusivity(unchecked) private var detached = false
    @exclusivity(unchecked) private var headSince: UInt64 = 0
    @exclusivity(unchecked) private var idleSince: UInt64
    /// The transport as a plain connection, written without a signal (`write`), or `nil`
    /// for TLS. Cast once here, not per response.
    private let plainStream: StreamConnection?
    /// The completion every plain write passes (one write is in flight at a time, while
    /// `writing`): made once per connection rather than an object and a closure context
    /// per response. What the write finishes is in the two fields after it.
    private var writeDone: DirectWrite?
    @exclusivity(unchecked) private var writeFinishing = 0
    @exclusivity(unchecked) private var writeClosesAfter = false

    init(transport: any HTTPTransport, server: HTTPServerState) {
        self.transport = transport
        self.loop = transport.loop
        self.peer = transport.description
        self.server = server
        parser = HTTPParser(.request, limits: server.options.parserLimits)
        idleSince = csys_monotonic_ns()
        plainStream = transport as? StreamConnection
        // Unretained: the parser is this connection's and calls these only from inside
        // `parser.parse` and `parser.finish`, which only this connection's own methods call
        // (`parse`, `readEnded`), so their `self` keeps it alive for the call. The checked
        // `unowned` cost an atomic strong retain and a release per callback, and an
        // `unowned(unsafe)` self was still copied (a retain and a release) around each
        // call; `Unmanaged` and `_withUnsafeGuaranteedRef` are not. The head goes into the
        // inner closure as an optional taken there, so it is moved into the request, not
        // copied (a closure captures a plain value by copying it out).
        let this = Unmanaged.passUnretained(self)
        parser.onHead = { head in
            var held: HTTPMessageHead? = consume head
            this._withUnsafeGuaranteedRef { $0.head(held.take().unsafelyUnwrapped) }
        }
        parser.onBody = { bytes in this._withUnsafeGuaranteedRef { $0.current?.receiveBody(bytes) } }
        parser.onEnd = { trailers in this._withUnsafeGuaranteedRef { $0.messageEnded(trailers) } }
    }

    /// Starts reading; the server keeps the connection until it closes.
    func start() {
        if server.draining { return transport.close() }
        server.connections[ObjectIdentifier(self)] = self
        watchingClose = transport.closed.subscribe(error: { [self] _ in self.didClose() }, completed: { [self] in self.didClose() })
        resumeReading()
    }

    // MARK: - Reading

    private var mustPause: Bool {
        if bodyBytesHeld > server.options.bodyBufferBytes { return true }
        // Inside a body the rest of it is read whatever follows; between messages, the
        // next one waits while reading it is not wanted.
        if current != nil { return false }
        return upgradeHeld || noMoreRequests || queue.count >= server.options.maxPipelinedRequests
    }

    /// Reads again if nothing holds reading back; parses what waited first.
    func resumeReading() {
        guard !isClosed, !detached, reading == nil else { return }
        if !lingering {
            guard !mustPause else { return }
            if !pending.isEmpty {
                let held = pending
                pending = []
                parse(held)
                guard !mustPause, !isClosed else { return }
            }
        }
        // A TLS connection delivers the plaintext it already holds (the request that came
        // with the handshake's last bytes) during `subscribe` itself, before `reading`
        // holds the subscription. Handled there, stopping to read (an upgrade, the
        // pipelining bound) found no subscription to dispose, and the write of a 101 that
        // completes at once handed the transport over while this subscription still read
        // it: the WebSocket's own `reads` failed with EBUSY and the connection was lost
        // after the 101. So what arrives during `subscribe` is held, and handled once the
        // subscription is in `reading`, for as long as it still is.
        var early: [Event<[UInt8]>]? = []
        let subscription = transport.reads.subscribe(
            next: { [self] chunk in
                if early != nil { early!.append(.next(chunk)) } else { self.received(chunk) }
            },
            error: { [self] e in
                if early != nil { early!.append(.error(e)) } else { self.abort() }
            },
            completed: { [self] in
                if early != nil { early!.append(.completed) } else { self.readEnded() }
            })
        let held = early ?? []
        early = nil
        if isClosed {
            subscription.dispose()
            return
        }
        reading = subscription
        for event in held {
            guard reading === subscription, !isClosed else { break }
            switch event {
            case .next(let chunk): received(chunk)
            case .error: abort()
            case .completed: readEnded()
            }
        }
    }

    private func stopReading() {
        reading?.dispose()
        reading = nil
    }

    private func received(_ chunk: [UInt8]) {
        if lingering || detached { return }
        if pending.isEmpty {
            parse(chunk)
        } else {
            pending.append(contentsOf: chunk)
            let held = pending
            pending = []
            parse(held)
        }
    }

    private func parse(_ bytes: [UInt8]) {
        // Answers given while parsing (the application answers inside `deliver`) are
        // written once parsing stops: the answers to requests pipelined in one read go out
        // in one write, and a write completing at once cannot re-enter the parse (an
        // upgrade must see every byte after its head in `pending`).
        parsing = true
        defer {
            parsing = false
            flush()
        }
        bytes.withUnsafeBytes { all in
            var offset = 0
            // The clock read once per read, not once per pipelined head: the head timeout
            // counts from when a head's first bytes arrived, which this read's time is.
            var now: UInt64 = 0
            while offset < all.count && !isClosed {
                if mustPause {
                    pending = Array(all[offset...])
                    stopReading()
                    return
                }
                if !parser.isMidMessage && headSince == 0 {
                    if now == 0 { now = csys_monotonic_ns() }
                    headSince = now
                }
                // The rest as a pointer and a count: `rebasing: all[offset...]` checked the
                // slice's bounds again per message. `offset < all.count` holds here.
                let (consumed, outcome) = parser.parse(UnsafeRawBufferPointer(start: all.baseAddress.unsafelyUnwrapped + offset, count: all.count - offset))
                switch outcome {
                case .needMore:
                    offset = all.count
                case .messageEnd:
                    offset += consumed
                case .upgrade:
                    offset += consumed
                    upgradeHeld = true
                case .error(let e):
                    refuse(e)
                    return
                }
            }
        }
    }

    /// `consuming`: the parser's head is moved into the request (see ``HTTPParser/onHead``).
    private func head(_ head: consuming HTTPMessageHead) {
        headSince = 0
        let request = HTTPRequest(head: consume head, connection: self)
        queue.append(request)
        // A request without a body has it ended from the start and is never `current`
        // (the parser ends its message right after its head, before anything else can
        // happen on the connection): holding it there cost a retain and a release, and the
        // message end a call on it, per request.
        if request.endsWithHead {
            request.bodyEnded = true
        } else {
            current = request
        }
        if !request.keepAliveRequested { noMoreRequests = true }
        // The subscriber without a retain: loaded from the server it was retained and
        // released around the call. Sound: it is a `let` of the server, a `let` of this
        // connection, which the parse under way holds (`parse`'s `self`).
        Unmanaged.passUnretained(server.requests)._withUnsafeGuaranteedRef { $0.sendNext(request) }
    }

    private func messageEnded(_ trailers: HTTPHeaders) {
        // Taken out before its body ends (the message has, for the parser), rather than
        // called through `current?` and cleared after: that retained and released it.
        current.take()?.endBody(trailers: trailers)
    }

    private func readEnded() {
        reading = nil
        if lingering { return close() }
        if case .error = parser.finish() { current?.failBody(HTTPParseError.badRequest("connection closed inside a request")) }
        // The client ended its side: answer what it asked, then close.
        noMoreRequests = true
        if let current, !current.answered {
            current.answered = true
            queue.removeAll { $0 === current }
        }
        if !writing && queue.isEmpty { close() } else { flush() }
    }

    /// Answers a malformed or hostile request with its status after the earlier answers,
    /// then closes: nothing after the bad bytes is ever read as a request.
    private func refuse(_ e: HTTPParseError) {
        noMoreRequests = true
        stopReading()
        if let current, current.bodyEnded == false {
            // Taken out of the queue before its body fails, so an answer the application
            // gives from the body's error is dropped: only the refusal is written.
            if !current.answered {
                current.answered = true
                queue.removeAll { $0 === current }
            }
            current.failBody(e)
        }
        let body = Array((e.reason + "\n").utf8)
        errorResponse = (HTTPResponseHead.encode(
            status: e.status, headers: ["Content-Type": "text/plain; charset=utf-8"], framing: .length(body.count),
            keepAlive: false, date: server.date) ?? []) + body
        flush()
    }

    // MARK: - Writing

    /// Writes the answered prefix of the queue: consecutive byte answers in one write, a
    /// streamed or upgrade answer on its own.
    ///
    /// The guard inlined, the work apart: an answer given while its request is parsed
    /// (the usual case) calls this only to find `parsing` set.
    @inline(__always)
    func flush() {
        guard !writing, !parsing, !isClosed, !detached else { return }
        flushAnswered()
    }

    @inline(never)
    private func flushAnswered() {
        guard !queue.isEmpty else {
            if let errorResponse {
                self.errorResponse = nil
                write(errorResponse, finishing: 0, closeAfter: true)
            } else if noMoreRequests && reading == nil && !lingering && pending.isEmpty {
                finishConnection()
            }
            return
        }
        // Switched on the kind, not on the response: switching on the enum, even in place
        // and without binding its fields, copied it (a retain and a release of each of its
        // references) per batch; its fields are taken below where they are used.
        // The first request is bound only where it is used: bound before the switch it was
        // retained and released per batch, also for byte answers, which do not use it.
        switch queue[0].responseKind {
        case .none:
            let first = queue[0]
            if first.bodySubscribed && !first.sentContinue && !first.bodyEnded && first.expectsContinue { sendContinueIfFirst(first) }
            return
        case .bytes:
            // Written into the server's one response buffer, stored back before the write:
            // a write that completes at once flushes again from inside it, into the same
            // buffer (the bytes of this batch are copied or sent by then).
            var out = server.responseBuffer
            out.removeAll()
            var count = 0
            var closeAfter = false
            // Each request without a retain (`_withUnsafeGuaranteedRef`): `for request in
            // queue` retained and released each, a pair per response. Sound: `requests`
            // holds every one of them until the loop ends, and nothing in the loop calls
            // out of the server (no application code runs, the queue is not changed).
            let requests = queue
            for index in requests.indices {
                let more = Unmanaged.passUnretained(requests[index])._withUnsafeGuaranteedRef { request -> Bool in
                    guard request.responseKind == .bytes else { return false }
                    let status = request.responseStatus
                    // The response's own `Connection: close` is found as its head is written.
                    var keep = keepAliveIgnoringHeaders(after: request)
                    let noBody = HTTPStatus.hasNoBody(status, isHead: request.isHead)
                    let length: Int? = status < 200 || status == 204 ? nil : request.responseBody.count
                    // The headers and the body passed `inout`, in place: passed as values,
                    // each was copied out of the request (a retain and a release).
                    guard
                        HTTPResponseHead.encode(
                            status: status, headers: &request.responseHeaders, length: length, keepAlive: &keep, date: server.date,
                            dateGeneration: server.dateGeneration, cache: &server.headPrefix, into: &out)
                    else {
                        // Validated when answered; kept as a guard so nothing invalid is ever written.
                        closeAfter = true
                        return false
                    }
                    if !noBody { out.append(&request.responseBody) }
                    count += 1
                    if !keep { closeAfter = true }
                    return !closeAfter
                }
                if !more { break }
            }
            server.responseBuffer = out
            write(out.bytesWritten, finishing: count, closeAfter: closeAfter)
            server.responseBuffer.trim()
        case .stream:
            let first = queue[0]
            guard case .stream(let status, let headers, let body)? = first.response else { return }
            let http10 = first.version < .http1_1
            let noBody = HTTPStatus.hasNoBody(status, isHead: first.isHead)
            let keep = keepAlive(after: first, headers: headers) && !http10
            // HEAD carries the framing the GET would (RFC 9110 9.3.2), only the body is left
            // out; a status without a body (1xx, 204, 304) has no framing at all.
            let framing: HTTPResponseHead.Framing = HTTPStatus.hasNoBody(status, method: "GET") || http10 ? .none : .chunked
            guard let head = HTTPResponseHead.encode(status: status, headers: headers, framing: framing, keepAlive: keep, date: server.date) else {
                return abort()
            }
            var wire = Signal<[UInt8]>.return(head)
            if !noBody {
                if http10 {
                    wire = wire.concat(body.filter { !$0.isEmpty })
                } else {
                    let framed = body.filter { !$0.isEmpty }.map { chunk in HTTPResponseHead.chunkPrefix(chunk.count) + chunk + HTTPResponseHead.crlf }
                    wire = wire.concat(framed).concat(.return(Array("0\r\n\r\n".utf8)))
                }
            }
            // The request no longer holds the body signal once it is being sent: an
            // application's events signal that captures its request (a natural thing to
            // write) would otherwise make request -> body -> events -> request a cycle that
            // outlives the connection (LeakSanitizer found it in the SSE test).
            first.dropStreamedBody()
            writing = true
            _ = transport.send(wire).subscribe(
                error: { [self] _ in self.abort() },
                completed: { [self] in self.wrote(finishing: 1, closeAfter: !keep) })
        case .upgrade:
            guard case .upgrade(let headers, let subscriber)? = queue[0].response else { return }
            guard let head = HTTPResponseHead.encode(status: 101, headers: headers, framing: .none, keepAlive: true, date: UnsafeRawBufferPointer(start: nil, count: 0)) else {
                return subscriber.sendError(HTTPServerError.invalidHeader(name: "?"))
            }
            writing = true
            _ = transport.write(head).subscribe(
                error: { [self] e in
                    subscriber.sendError(e)
                    self.abort()
                },
                completed: { [self] in self.upgraded(subscriber) })
        }
    }

    /// Whether the connection stays open after answering `request` with `headers` (its
    /// response's fields, which the caller already took out of `request.response`: matching
    /// the response again here copied it, a retain and release of each of its arrays, per
    /// request).
    private func keepAlive(after request: HTTPRequest, headers: HTTPHeaders) -> Bool {
        keepAliveIgnoringHeaders(after: request) && !headers.hasToken("Connection", "close")
    }

    /// ``keepAlive(after:headers:)`` but for the response's `Connection: close`, which a
    /// byte response's head writing finds (`HTTPResponseHead.encode`).
    @inline(__always)
    private func keepAliveIgnoringHeaders(after request: HTTPRequest) -> Bool {
        guard request.keepAliveRequested, !server.draining || queue.count > 1 else { return false }
        // A refused upgrade (400, 426): the parser stopped at its head and the client may
        // already be speaking the other protocol, so nothing after it is read as HTTP.
        if request.upgradeRequested { return false }
        // A client waiting for `100 Continue` that never came may or may not send its body
        // now: the only safe end is to close.
        // `expectsContinue` last: it walks the fields, and most requests' bodies have ended.
        if !request.sentContinue && !request.bodyEnded && request.expectsContinue { return false }
        return true
    }

    private func write(_ bytes: [UInt8], finishing count: Int, closeAfter: Bool) {
        bytes.withUnsafeBytes { write($0, finishing: count, closeAfter: closeAfter) }
    }

    /// Writes `bytes`, which need to stay valid only until this returns (a plain write
    /// copies what the kernel does not take; the TLS write is given an array of them).
    private func write(_ bytes: UnsafeRawBufferPointer, finishing count: Int, closeAfter: Bool) {
        writing = true
        // A plain connection is written without a signal (StreamConnection.writeOnLoop):
        // the signal's machinery cost a third of a request's instructions. TLS goes
        // through its signal.
        if plainStream != nil, loop.isCurrentThread {
            writeFinishing = count
            writeClosesAfter = closeAfter
            if writeDone == nil {
                // Unowned, as the connection holds it. Sound: the transport's close handler
                // (`watchingClose`, subscribed in `start`) holds this connection until the
                // handle's close callback, and libuv runs every write callback (ECANCELED
                // for queued ones) before that. Not weak: a weak reference moves the
                // object's counts to a side table and made every retain of the connection
                // slower (+670 instructions a request).
                // One use of `self` in the closure (`directWriteDone`): each load of an
                // `unowned` reference is a checked strong retain and a release, and the
                // three loads here (the call and the two fields) cost 3 of each a request.
                writeDone = DirectWrite(reusable: true) { [unowned self] error in self.directWriteDone(error) }
            }
            // Both passed without a retain (`_withUnsafeGuaranteedRef`): binding the
            // optional properties retained and released each, ~2 pairs a request. Sound:
            // `plainStream` is a `let` and `writeDone`, once set above, is never replaced
            // or cleared, so this connection holds both, and it is alive for this whole
            // call (its caller holds it: a method's `self` is guaranteed), also when the
            // write completes, and `wrote` runs, inside `writeOnLoop`.
            Unmanaged.passUnretained(plainStream.unsafelyUnwrapped)._withUnsafeGuaranteedRef { stream in
                Unmanaged.passUnretained(writeDone.unsafelyUnwrapped)._withUnsafeGuaranteedRef { done in
                    stream.writeOnLoop(bytes, done)
                }
            }
            return
        }
        _ = transport.write(Array(bytes)).subscribe(
            error: { [self] _ in self.abort() },
            completed: { [self] in self.wrote(finishing: count, closeAfter: closeAfter) })
    }

    /// The completion of a plain write (`writeDone`): what it finishes is in the fields.
    private func directWriteDone(_ error: (any Error)?) {
        if error != nil { abort() } else { wrote(finishing: writeFinishing, closeAfter: writeClosesAfter) }
    }

    private func wrote(finishing count: Int, closeAfter: Bool) {
        writing = false
        guard !isClosed else { return }
        for request in queue.prefix(count) {
            request.answeredAndDone = true
            if !request.bodyEnded {
                // The rest of an unread body is parsed and dropped, so the next request is
                // found where it starts.
                bodyBytesHeld -= request.bodyChunks.reduce(0) { $0 + $1.count }
                request.bodyChunks = []
                request.bodyDiscarding = true
            }
        }
        let finished = min(count, queue.count)
        if finished == queue.count {
            // Every queued answer written (the usual case): emptied from the end, keeping
            // its capacity, rather than through `removeFirst(_:)`'s generic
            // `replaceSubrange` (~70 instructions a request).
            while !queue.isEmpty { queue.removeLast() }
        } else {
            queue.removeFirst(finished)
        }
        if queue.isEmpty { idleSince = csys_monotonic_ns() }
        if closeAfter {
            noMoreRequests = true
            queue.removeAll()
            errorResponse = nil
            return finishConnection()
        }
        flush()
        resumeReading()
    }

    func sendContinueIfFirst(_ request: HTTPRequest) {
        guard queue.first === request, !writing, !request.sentContinue, !request.answered, !isClosed else { return }
        request.sentContinue = true
        writing = true
        _ = transport.write(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)).subscribe(
            error: { [self] _ in self.abort() },
            completed: { [self] in
                self.writing = false
                self.flush()
            })
    }

    private func upgraded(_ subscriber: Subscriber<HTTPUpgrade>) {
        writing = false
        detached = true
        stopReading()
        watchingClose?.dispose()
        server.connections[ObjectIdentifier(self)] = nil
        let leftover = pending
        pending = []
        queue.removeAll()
        subscriber.sendNext(HTTPUpgrade(transport: transport, leftover: leftover))
        subscriber.sendCompleted()
    }

    // MARK: - Ending

    /// Ends our side after the last answer and reads (discarding) until the client ends
    /// its side or `lingerTimeout` passes: closing at once would reset the connection if
    /// the client still sent bytes, and a reset can discard the answer before it is read.
    private func finishConnection() {
        guard !lingering, !isClosed else { return }
        lingering = true
        lingerSince = csys_monotonic_ns()
        _ = transport.shutdown().subscribe(error: { [self] _ in self.close() })
        stopReading()
        resumeReading()
    }

    /// Closes at once (a read or write failed, a timeout, the server shutting down).
    func abort() { close() }

    func close() {
        guard !isClosed else { return }
        transport.close()
        didClose()
    }

    /// A graceful shutdown: the requests already read are answered (the last with
    /// `Connection: close`), nothing more is read.
    func endAfterAnswers() {
        noMoreRequests = true
        flush()
    }

    private func didClose() {
        guard !isClosed, !detached else { return }
        isClosed = true
        stopReading()
        watchingClose?.dispose()
        server.connections[ObjectIdentifier(self)] = nil
        defer { server.checkDrained() }
        let failure = UVError(code: -104, operation: "read", target: transport.description)
        current?.failBody(failure)
        // The request being read holds this connection (`HTTPRequest.connection`): let it
        // go, as the queue below, so the two do not keep each other.
        current = nil
        for request in queue {
            if case .upgrade(_, let subscriber)? = request.response { subscriber.sendError(failure) }
        }
        queue.removeAll()
    }

    /// Closes the connection if a timeout ran out (the server's sweep, every fraction of a second).
    func checkTimeouts(now: UInt64) {
        let options = server.options
        if lingering {
            if now &- lingerSince > UInt64(options.lingerTimeout * 1e9) { close() }
        } else if headSince != 0 && parser.isMidMessage && current == nil {
            if now &- headSince > UInt64(options.headTimeout * 1e9) { close() }
        } else if queue.isEmpty && current == nil && !writing && !parser.isMidMessage {
            if now &- idleSince > UInt64(options.idleTimeout * 1e9) { close() }
        }
    }

    /// Whether the connection has no request under way (graceful shutdown closes these).
    var isIdle: Bool { queue.isEmpty && current == nil && !writing && !parser.isMidMessage }
}

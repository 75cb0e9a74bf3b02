import CSystemShims
import ReactiveUV

/// One pooled client connection: writes a request, parses its response, and goes back to
/// its host's pool when the response has ended and both sides want to keep it.
///
/// Confined to the client's loop thread. The connection's `connect` subscription is kept
/// in `owner`: disposing it closes the connection (ReactiveUV's ownership rule).
final class HTTPClientConnection {
    let transport: any HTTPTransport
    let owner: Disposable
    let key: String
    private let parser: HTTPParser
    private var reading: Disposable?
    private(set) var isClosed = false
    /// Whether a response was ever read here (a reused connection that fails before any
    /// byte of its next response was probably closed by the server while idle: retry).
    private(set) var served = 0
    var idleSince: UInt64 = 0

    private var exchange: HTTPExchange?
    private var gotBytes = false
    private var response: HTTPResponse?
    private var keepAlive = true
    private let bodyBufferBytes: Int
    /// Whether reading stopped because the current response holds more body bytes than
    /// ``HTTPClientOptions/bodyBufferBytes`` with no subscriber to take them.
    private(set) var paused = false
    /// The response reading paused for, held weakly: it holds this connection (through
    /// `onSubscribed`) while someone may still subscribe its body, and a response dropped
    /// unread closes the connection when it goes (``HTTPResponse``'s deinit).
    private weak var pausedResponse: HTTPResponse?
    var onFree: (HTTPClientConnection) -> Void = { _ in }
    var onClosed: (HTTPClientConnection) -> Void = { _ in }

    init(transport: any HTTPTransport, owner: Disposable, key: String, options: HTTPClientOptions) {
        self.transport = transport
        self.owner = owner
        self.key = key
        bodyBufferBytes = options.bodyBufferBytes
        parser = HTTPParser(.response, limits: .init(maxHeadBytes: options.maxHeadBytes, maxStartLineBytes: options.maxHeadBytes, maxBodyBytes: options.maxBodyBytes))
        parser.onHead = { [unowned self] head in self.head(head) }
        parser.onBody = { [unowned self] bytes in self.response?.receive(bytes) }
        parser.onEnd = { [unowned self] trailers in self.ended(trailers) }
        // The read subscription keeps the connection alive (pooled or busy) until close()
        // disposes it: nothing else need own a connection. While reading is paused the
        // closure below (`onSubscribed`, held by the response) does.
        startReading()
    }

    private func startReading() {
        reading = transport.reads.subscribe(
            next: { chunk in self.received(chunk) },
            error: { e in self.failed(e) },
            completed: { self.readEnded() })
    }

    /// Reads again after a pause for a response's unsubscribed body.
    private func resumeReading() {
        guard paused, !isClosed else { return }
        paused = false
        response = pausedResponse
        pausedResponse = nil
        startReading()
    }

    /// Sends `exchange`'s request; its response comes back through the exchange.
    func send(_ exchange: HTTPExchange, bytes: [UInt8]) {
        self.exchange = exchange
        gotBytes = false
        response = nil
        parser.skipBody = exchange.method == "HEAD"
        _ = transport.write(bytes).subscribe(error: { [weak self] e in self?.failed(e) })
    }

    private func received(_ chunk: [UInt8]) {
        gotBytes = true
        chunk.withUnsafeBytes { all in
            var offset = 0
            while offset < all.count && !isClosed {
                let (consumed, outcome) = parser.parse(UnsafeRawBufferPointer(rebasing: all[offset...]))
                switch outcome {
                case .needMore: offset = all.count
                case .messageEnd, .upgrade: offset += consumed
                case .error(let e): return failed(e)
                }
                if exchange == nil && offset < all.count {
                    // Bytes after a response nobody asked for: the connection is not sound.
                    return failed(HTTPParseError.badRequest("unexpected bytes after a response"))
                }
            }
        }
        // Backpressure: the rest of this read is parsed (it is in memory already), then
        // libuv stops reading until the body is subscribed.
        if let response, !isClosed, !paused, response.heldBytes > bodyBufferBytes {
            paused = true
            pausedResponse = response
            self.response = nil
            reading?.dispose()
            reading = nil
        }
    }

    private func head(_ head: HTTPMessageHead) {
        // 1xx interim answers (100 Continue) are not the response.
        if head.status >= 100 && head.status < 200 && head.status != 101 { return }
        let response = HTTPResponse(head: head, loop: transport.loop)
        response.onAbandon = { [weak self] in self?.close() }
        response.onSubscribed = { self.resumeReading() }
        self.response = response
        keepAlive = head.keepAlive
        exchange?.headArrived(response)
    }

    private func ended(_ trailers: HTTPHeaders) {
        guard let response else { return }
        self.response = nil
        served += 1
        exchange = nil
        // Back in the pool before the body completes: a request made from the body's
        // completion (a redirect, the next call in a chain) then reuses this connection.
        if keepAlive && !isClosed {
            idleSince = csys_monotonic_ns()
            onFree(self)
        } else {
            close()
        }
        response.end(trailers: trailers)
    }

    private func readEnded() {
        reading = nil
        if response != nil, case .messageEnd = parser.finish() { return close() }
        failed(HTTPClientError.connectionClosed)
    }

    private func failed(_ error: any Error) {
        let exchange = self.exchange, response = self.response, retriable = !gotBytes && served > 0
        self.exchange = nil
        self.response = nil
        close()
        response?.fail(error)
        exchange?.failed(error, retriable: retriable && response == nil)
    }

    func close() {
        guard !isClosed else { return }
        isClosed = true
        reading?.dispose()
        reading = nil
        owner.dispose()
        onClosed(self)
        if let response {
            // A body abandoned mid-stream (its subscriber disposed after the head) closes
            // the connection; the response must go too: it holds this connection through
            // `onSubscribed` and this connection held it, a cycle that kept both, the
            // transport and the exchange alive after the close (LeakSanitizer).
            self.response = nil
            response.fail(HTTPClientError.connectionClosed)
        }
        if let response = pausedResponse {
            pausedResponse = nil
            response.fail(HTTPClientError.connectionClosed)
        }
        if let exchange {
            self.exchange = nil
            exchange.failed(HTTPClientError.connectionClosed, retriable: false)
        }
    }

    var isBusy: Bool { exchange != nil || response != nil }
}

/// One request in flight: what it asked, and where its response goes.
final class HTTPExchange: @unchecked Sendable {
    // Thread-safety: confined to the client's loop thread (handed there through `execute`).
    let method: String
    let bytes: [UInt8]
    var attempts = 0
    var onHead: (HTTPResponse) -> Void = { _ in }
    var onFailure: (any Error, Bool) -> Void = { _, _ in }
    var timer: Disposable?
    var headSeen = false

    init(method: String, bytes: [UInt8]) {
        self.method = method
        self.bytes = bytes
    }

    func headArrived(_ response: HTTPResponse) {
        timer?.dispose()
        onHead(response)
    }

    func failed(_ error: any Error, retriable: Bool) {
        timer?.dispose()
        onFailure(error, retriable)
    }
}

import CSystemShims
import ReactiveUV

/// An HTTP/1.1 client: requests as signals of responses, keep-alive connections pooled per
/// host.
///
/// ```swift
/// let client = HTTPClient()
/// client.request("POST", "http://127.0.0.1:8080/hook", headers: ["Content-Type": "application/json"],
///                body: Array(#"{"alert":"disk full"}"#.utf8))
///     .flattenMap { response in response.text }
///     .subscribeNext { print($0) }
/// ```
///
/// **Pool.** At most ``HTTPClientOptions/maxConnectionsPerHost`` connections per scheme,
/// host and port; a request takes a free one, or opens one, or waits for one in order. A
/// connection is reused once its response has been read to the end and both sides
/// agreed to keep it; an unused one closes after ``HTTPClientOptions/idleTimeout``. A request
/// on a reused connection that the server had closed meanwhile is sent again once on a new
/// connection (only when no byte of its answer arrived).
///
/// **Threads.** Everything runs on ``loop`` (the main loop unless given); requests may be
/// made from any thread, and their events arrive on the loop's thread.
public final class HTTPClient: @unchecked Sendable {
    // Thread-safety: every mutable member is confined to `loop`'s thread.

    /// The loop the client's connections live on.
    public let loop: EventLoop
    /// The client's options.
    public let options: HTTPClientOptions
    private var idle: [String: [HTTPClientConnection]] = [:]
    private var open: [String: Int] = [:]
    private var waiting: [String: [() -> Void]] = [:]
    private var sweeper: Disposable?
    private var closed = false

    /// A client on `loop`.
    ///
    /// - Parameters:
    ///   - options: timeouts, pool bounds, redirects, and the connectors (TLS for
    ///     `https://` comes from `ReactiveUVHTTPS`: `HTTPClientOptions.https(trust:)`).
    ///   - loop: the loop for its connections; `nil` for the main loop.
    public init(options: HTTPClientOptions = HTTPClientOptions(), on loop: EventLoop? = nil) {
        self.options = options
        self.loop = loop ?? .main
    }

    /// Sends a request; sends its response once the head has arrived, then completes.
    ///
    /// Fails with ``HTTPClientError`` (bad URL or header, timeouts, too many redirects, a
    /// connection closed early, an `https://` URL without
    /// ``HTTPClientOptions/secureConnector``), ``HTTPParseError`` (a malformed response),
    /// or what the connector fails with: `UVError`, `TLSError` (connecting, verifying). Disposing before the head arrives closes the
    /// connection; after, the body is the response's (``HTTPResponse/body``).
    ///
    /// - Parameters:
    ///   - method: the method, `GET` by default.
    ///   - url: an `http://` or `https://` URL.
    ///   - headers: request fields (`Host` and `Content-Length` are the client's).
    ///   - body: the body; sent with `Content-Length` when not empty or when the method
    ///     usually has one.
    /// - Returns: a cold signal of one response.
    public func request(_ method: String = "GET", _ url: String, headers: HTTPHeaders = [:], body: [UInt8] = []) -> Signal<HTTPResponse> {
        guard let parsed = HTTPURL(url) else { return .error(HTTPClientError.invalidURL(url)) }
        if let bad = headers.fields.first(where: { !HTTPHeaders.isValidField(name: $0.name, value: $0.value) }) {
            return .error(HTTPClientError.invalidHeader(name: bad.name))
        }
        guard HTTPHeaders.isValidField(name: method, value: "") else { return .error(HTTPClientError.invalidHeader(name: method)) }
        return send(method, parsed, headers: headers, body: body, redirects: 0)
    }

    /// Reads a `text/event-stream` as a signal of events.
    ///
    /// Sends `GET` with `Accept: text/event-stream` (and `Last-Event-ID` when given),
    /// fails with ``HTTPClientError/notAnEventStream(status:contentType:)`` unless the answer
    /// is a 200 event stream, then sends each event as it is parsed
    /// (``ServerSentEventParser``; comments and heartbeats are skipped) and completes when
    /// the server ends the stream. It does not reconnect by itself: `retry`-like operators
    /// and the last event's ``ServerSentEvent/id`` make that a one-liner.
    ///
    /// - Parameters:
    ///   - url: the stream's URL.
    ///   - lastEventID: the id to resume after.
    /// - Returns: a cold signal of events.
    public func events(_ url: String, lastEventID: String? = nil) -> Signal<ServerSentEvent> {
        var headers: HTTPHeaders = ["Accept": "text/event-stream", "Cache-Control": "no-cache"]
        if let lastEventID { headers.add("Last-Event-ID", lastEventID) }
        return request("GET", url, headers: headers).flattenMap { response -> Signal<ServerSentEvent> in
            let type = response.headers["Content-Type"]
            guard response.status == 200, type?.lowercased().hasPrefix("text/event-stream") == true else {
                return .error(HTTPClientError.notAnEventStream(status: response.status, contentType: type))
            }
            let parser = HTTPBox(ServerSentEventParser())
            return response.body.flattenMap { chunk -> Signal<ServerSentEvent> in
                do { return .fromArray(try parser.value.parse(chunk)) } catch { return .error(error) }
            }
        }
    }

    /// Closes every pooled connection; requests in flight go on until they end.
    public func close() {
        let client = self
        loop.execute {
            client.closed = true
            client.sweeper?.dispose()
            for connection in client.idle.values.flatMap({ $0 }) { connection.close() }
            client.idle = [:]
        }
    }

    // MARK: - Internals (loop thread)

    private func send(_ method: String, _ url: HTTPURL, headers: HTTPHeaders, body: [UInt8], redirects: Int) -> Signal<HTTPResponse> {
        let client = self
        let exchangeSignal = Signal<HTTPResponse>.create { subscriber in
            let lifetime = CompoundDisposable()
            let exchange = HTTPExchange(method: method, bytes: Self.encode(method, url, headers, body))
            let start = {
                guard !lifetime.isDisposed else { return }
                exchange.onHead = { response in
                    subscriber.sendNext(response)
                    subscriber.sendCompleted()
                }
                client.run(exchange, url: url, subscriber: subscriber, lifetime: lifetime)
            }
            if client.loop.isCurrentThread { start() } else {
                let work = HTTPBox(start)
                client.loop.execute { work.value() }
            }
            return lifetime
        }
        guard options.followRedirects else { return exchangeSignal }
        return exchangeSignal.flattenMap { response -> Signal<HTTPResponse> in
            guard [301, 302, 303, 307, 308].contains(response.status), let location = response.headers["Location"] else {
                return .return(response)
            }
            guard redirects < client.options.maxRedirects else { return .error(HTTPClientError.tooManyRedirects) }
            guard let next = url.resolve(location) else { return .error(HTTPClientError.invalidURL(location)) }
            // The redirect's own body is read and dropped, so its connection is reused.
            let becomesGet = response.status == 303 || (response.status <= 302 && method == "POST")
            return response.body.ignoreValues().then {
                client.send(becomesGet ? "GET" : method, next, headers: headers, body: becomesGet ? [] : body, redirects: redirects + 1)
            }
        }
    }

    private static func encode(_ method: String, _ url: HTTPURL, _ headers: HTTPHeaders, _ body: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(128 + body.count)
        out.append(contentsOf: "\(method) \(url.target) HTTP/1.1\r\nHost: \(url.hostField)\r\n".utf8)
        for (name, value) in headers.fields {
            if HTTPHeaders.sameName(name, "Host") || HTTPHeaders.sameName(name, "Content-Length") || HTTPHeaders.sameName(name, "Transfer-Encoding") { continue }
            out.append(contentsOf: "\(name): \(value)\r\n".utf8)
        }
        if !body.isEmpty || ["POST", "PUT", "PATCH"].contains(method) {
            out.append(contentsOf: "Content-Length: \(body.count)\r\n".utf8)
        }
        out.append(contentsOf: "\r\n".utf8)
        out.append(contentsOf: body)
        return out
    }

    private func run(_ exchange: HTTPExchange, url: HTTPURL, subscriber: Subscriber<HTTPResponse>, lifetime: CompoundDisposable) {
        exchange.attempts += 1
        // The exchange's own callbacks hold it weakly: the connection sending it holds it
        // while they can be called, and a strong capture made exchange -> callback ->
        // exchange a cycle that outlived every request (LeakSanitizer).
        exchange.onFailure = { [weak self, weak exchange] error, retriable in
            guard let self, let exchange, !lifetime.isDisposed else { return }
            if retriable && exchange.attempts < 2 {
                self.run(exchange, url: url, subscriber: subscriber, lifetime: lifetime)
            } else {
                subscriber.sendError(error)
            }
        }
        acquire(url, lifetime: lifetime) { result in
            switch result {
            case .failure(let error):
                subscriber.sendError(error)
            case .success(let connection):
                guard !lifetime.isDisposed else { return self.release(connection) }
                exchange.timer = self.loop.scheduler.afterDelay(self.options.responseTimeout) {
                    subscriber.sendError(HTTPClientError.timedOut)
                    connection.close()
                }
                lifetime.add(Disposable {
                    let c = HTTPBox(connection)
                    self.loop.execute {
                        exchange.timer?.dispose()
                        // Disposed before the head: the answer would arrive for nobody.
                        if c.value.isBusy && !exchange.headSeen { c.value.close() }
                    }
                })
                let onHead = exchange.onHead
                exchange.onHead = { [weak exchange] response in
                    exchange?.headSeen = true
                    onHead(response)
                }
                connection.send(exchange, bytes: exchange.bytes)
            }
        }
    }

    /// A free pooled connection, a new one, or a turn in the host's queue.
    private func acquire(_ url: HTTPURL, lifetime: CompoundDisposable, _ done: @escaping (Result<HTTPClientConnection, any Error>) -> Void) {
        let key = url.poolKey
        while var free = idle[key], let connection = free.popLast() {
            idle[key] = free
            if !connection.isClosed { return done(.success(connection)) }
        }
        if open[key, default: 0] < options.maxConnectionsPerHost {
            open[key, default: 0] += 1
            return connect(url, key: key, done)
        }
        waiting[key, default: []].append { [weak self] in
            guard let self else { return }
            if lifetime.isDisposed { return self.wakeNext(key) }
            self.acquire(url, lifetime: lifetime, done)
        }
    }

    private func connect(_ url: HTTPURL, key: String, _ done: @escaping (Result<HTTPClientConnection, any Error>) -> Void) {
        let transports: Signal<any HTTPTransport>
        if url.secure {
            guard let secure = options.secureConnector else {
                connectionGone(key)
                return done(.failure(HTTPClientError.secureConnectorMissing(url.poolKey)))
            }
            transports = secure.connect(host: url.host, port: url.port, timeout: options.connectTimeout, on: loop)
        } else {
            transports = options.connector.connect(host: url.host, port: url.port, timeout: options.connectTimeout, on: loop)
        }
        let owner = SerialDisposable()
        var finished = false
        let timer = loop.scheduler.afterDelay(options.connectTimeout) { [weak self] in
            guard !finished else { return }
            finished = true
            owner.dispose()
            self?.connectionGone(key)
            done(.failure(HTTPClientError.timedOut))
        }
        owner.inner = transports.subscribe(
            next: { [weak self] transport in
                guard let self, !finished else { return }
                finished = true
                timer?.dispose()
                let connection = HTTPClientConnection(transport: transport, owner: owner, key: key, options: self.options)
                connection.onFree = { [weak self] c in self?.release(c) }
                connection.onClosed = { [weak self] c in self?.connectionGone(c.key) }
                done(.success(connection))
            },
            error: { [weak self] error in
                guard !finished else { return }
                finished = true
                timer?.dispose()
                self?.connectionGone(key)
                done(.failure(error))
            })
    }

    /// A connection's response ended and it may be reused: the next waiter takes it, or
    /// it waits in the pool.
    private func release(_ connection: HTTPClientConnection) {
        guard !connection.isClosed else { return }
        if closed { return connection.close() }
        idle[connection.key, default: []].append(connection)
        startSweeper()
        wakeNext(connection.key)
    }

    private func connectionGone(_ key: String) {
        open[key, default: 1] -= 1
        idle[key]?.removeAll { $0.isClosed }
        wakeNext(key)
    }

    private func wakeNext(_ key: String) {
        guard var queue = waiting[key], !queue.isEmpty else { return }
        let next = queue.removeFirst()
        waiting[key] = queue.isEmpty ? nil : queue
        next()
    }

    /// The connections open (busy or pooled) and pooled per host, and the requests waiting
    /// for one, in total (loop thread; for tests).
    var poolCounts: (open: Int, idle: Int, waiting: Int) {
        (open.values.reduce(0, +), idle.values.reduce(0) { $0 + $1.count }, waiting.values.reduce(0) { $0 + $1.count })
    }

    /// Closes pooled connections idle longer than the idle timeout.
    private func startSweeper() {
        guard sweeper == nil, !closed else { return }
        sweeper = loop.scheduler.afterDelay(max(0.05, min(1, options.idleTimeout / 4))) { [weak self] in
            guard let self else { return }
            self.sweeper = nil
            let now = csys_monotonic_ns()
            for connection in self.idle.values.flatMap({ $0 }) where now &- connection.idleSince > UInt64(self.options.idleTimeout * 1e9) {
                connection.close()
            }
            if !self.idle.values.allSatisfy({ $0.isEmpty }) { self.startSweeper() }
        }
    }
}

extension HTTP {
    /// Sends one request with a client shared by every caller on `loop`; see
    /// ``HTTPClient/request(_:_:headers:body:)``.
    ///
    /// The shared client speaks plain HTTP: an `https://` URL fails with
    /// ``HTTPClientError/secureConnectorMissing(_:)``. `ReactiveUVHTTPS` adds
    /// `HTTP.request(_:_:headers:body:trust:on:)`, whose shared client speaks both.
    ///
    /// - Parameters:
    ///   - method: the method.
    ///   - url: an `http://` URL.
    ///   - headers: request fields.
    ///   - body: the body.
    ///   - loop: the loop for the shared client; `nil` for the main loop.
    /// - Returns: a cold signal of one response.
    public static func request(_ method: String = "GET", _ url: String, headers: HTTPHeaders = [:], body: [UInt8] = [], on loop: EventLoop? = nil) -> Signal<HTTPResponse> {
        sharedClient(loop ?? .main).request(method, url, headers: headers, body: body)
    }

    /// One default client per loop and `kind`, kept while the loop is open: the loop's close
    /// drops them (``/ReactiveUV/EventLoop/close()`` runs the hook registered here), so a
    /// closed loop's clients, and the loop they hold, are freed with everything they pooled.
    ///
    /// `package`: ReactiveUVHTTPS keeps its HTTPS clients (one per trust) in the same table,
    /// under kinds of its own, with `make` building the client (else a default client on
    /// `loop`).
    package static func sharedClient(_ loop: EventLoop, kind: String = "http", make: (() -> HTTPClient)? = nil) -> HTTPClient {
        let key = ObjectIdentifier(loop)
        let (client, madeLoopEntry) = sharedClients.withLock { clients -> (HTTPClient, Bool) in
            if let client = clients[key]?[kind] { return (client, false) }
            let client = make?() ?? HTTPClient(on: loop)
            let first = clients[key] == nil
            clients[key, default: [:]][kind] = client
            return (client, first)
        }
        // Registered outside the lock (the loop takes its own), once per loop; the hook
        // holds the key, not the loop. A loop already closing is forgotten at once.
        if madeLoopEntry && !loop.whenClosing({ HTTP.forgetSharedClients(key) }) { forgetSharedClients(key) }
        return client
    }

    /// Drops the shared clients kept under `key` (a loop's identity).
    private static func forgetSharedClients(_ key: ObjectIdentifier) {
        let clients = sharedClients.withLock { $0.removeValue(forKey: key) }
        _ = clients  // released here, after the lock: their deinit takes no lock of ours
    }

    static let sharedClients = HTTPLocked<[ObjectIdentifier: [String: HTTPClient]]>([:])
}

/// A value behind a CSystemShims mutex.
final class HTTPLocked<Value>: @unchecked Sendable {
    // Thread-safety: `value` is only touched while `mutex` is held.
    private let mutex: OpaquePointer
    private var value: Value

    init(_ value: Value) {
        self.value = value
        mutex = csys_mutex_create(false)
    }

    deinit { csys_mutex_destroy(mutex) }

    func withLock<T>(_ body: (inout Value) -> T) -> T {
        csys_mutex_lock(mutex)
        defer { csys_mutex_unlock(mutex) }
        return body(&value)
    }
}

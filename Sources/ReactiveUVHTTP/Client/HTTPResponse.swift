import ReactiveUV

/// A response read by ``HTTPClient``: its head, and its body as a signal.
///
/// The response is sent once its head has arrived; the body follows on ``body``. Body
/// bytes that arrive before ``body`` is subscribed are held, at most
/// ``HTTPClientOptions/bodyBufferBytes`` (and one read) of them: past that, reading the
/// connection pauses until ``body`` is subscribed, so a response nobody reads yet never
/// grows in memory. A subscriber receives chunks synchronously as they are read, so
/// reading goes on only as fast as it takes them. The connection goes back to its host's pool when
/// the body has been read to its end; disposing a body subscription before the end closes
/// the connection instead.
public final class HTTPResponse: @unchecked Sendable, CustomStringConvertible {
    // Thread-safety: the head is immutable; the body state is confined to `loop`'s thread.

    /// The status code.
    public let status: Int
    /// The reason phrase.
    public let reason: String
    /// The HTTP version of the response.
    public let version: HTTPVersion
    /// The header fields.
    public let headers: HTTPHeaders
    /// The loop the response's events arrive on.
    public let loop: EventLoop

    var chunks: [[UInt8]] = []
    /// The bytes in `chunks`.
    var heldBytes = 0
    /// Called on the loop when the body is subscribed (the connection reads again if it
    /// paused for the held bytes).
    var onSubscribed: () -> Void = {}
    var ended = false
    var failure: (any Error)?
    var trailers = HTTPHeaders()
    var subscriber: Subscriber<[UInt8]>?
    var subscribed = false
    /// Called on the loop when a body subscriber leaves before the end.
    var onAbandon: () -> Void = {}

    init(head: HTTPMessageHead, loop: EventLoop) {
        status = head.status
        reason = head.reason
        version = head.version
        headers = head.headers
        self.loop = loop
    }

    deinit {
        // Dropped with its body neither read nor ended (reading may be paused for it): the
        // connection cannot be reused, close it on its loop.
        guard subscriber == nil, !ended, failure == nil, !subscribed else { return }
        // `onSubscribed` holds the connection (`onAbandon` only weakly) until the hop is done.
        let abandon = HTTPBox((onAbandon, onSubscribed))
        loop.execute {
            abandon.value.0()
            abandon.value = ({}, {})
        }
    }

    /// `200 OK`.
    public var description: String { "\(status) \(reason)" }

    /// The body, chunk by chunk, then completion; fails if the connection fails first.
    /// One subscription per response (a second fails with ``HTTPServerError/bodyAlreadySubscribed``).
    /// Events arrive on ``loop``'s thread.
    public var body: Signal<[UInt8]> {
        Signal.create { subscriber in
            let d = CompoundDisposable()
            let attach = {
                guard !d.isDisposed else { return }
                guard !self.subscribed else { return subscriber.sendError(HTTPServerError.bodyAlreadySubscribed) }
                self.subscribed = true
                let held = self.chunks
                self.chunks = []
                self.heldBytes = 0
                for chunk in held { subscriber.sendNext(chunk) }
                if let failure = self.failure { return subscriber.sendError(failure) }
                if self.ended { return subscriber.sendCompleted() }
                self.subscriber = subscriber
                self.onSubscribed()
                d.add(Disposable {
                    let leave = HTTPBox(self)
                    self.loop.execute {
                        let response = leave.value
                        if response.subscriber != nil {
                            response.subscriber = nil
                            response.onAbandon()
                        }
                    }
                })
            }
            if self.loop.isCurrentThread { attach() } else {
                let work = HTTPBox(attach)
                self.loop.execute { work.value() }
            }
            return d
        }
    }

    /// The whole body as one array.
    public var collectedBody: Signal<[UInt8]> {
        body.aggregate(start: [UInt8]()) { all, chunk in
            var all = all
            all.append(contentsOf: chunk)
            return all
        }
    }

    /// The body as UTF-8 text (invalid sequences replaced).
    public var text: Signal<String> { collectedBody.map { String(decoding: $0, as: UTF8.self) } }

    func receive(_ bytes: UnsafeRawBufferPointer) {
        if let subscriber {
            subscriber.sendNext(Array(bytes))
        } else if !subscribed {
            chunks.append(Array(bytes))
            heldBytes += bytes.count
        }
    }

    func end(trailers: HTTPHeaders) {
        ended = true
        onSubscribed = {}
        self.trailers = trailers
        if let s = subscriber {
            subscriber = nil
            s.sendCompleted()
        }
    }

    func fail(_ error: any Error) {
        guard !ended, failure == nil else { return }
        failure = error
        onSubscribed = {}
        if let s = subscriber {
            subscriber = nil
            s.sendError(error)
        }
    }
}

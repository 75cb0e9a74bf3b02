import ReactiveUV

extension HTTPRequest {
    /// The `Last-Event-ID` a reconnecting event-stream client sent: resume after it.
    public var lastEventID: String? { headers["Last-Event-ID"] }

    /// Answers with a `text/event-stream` of `events`: server-sent events.
    ///
    /// Each value becomes one event (see ``ServerSentEvent/encoded``). The stream starts
    /// with `retry:` when `retry` is given, and on a quiet stream a comment line
    /// (`: heartbeat`) goes out every `heartbeat` seconds with no event, so proxies and
    /// clients keep the connection. Completion of `events` ends the response; an error
    /// closes the connection; a client that goes away disposes `events`. Streamed as
    /// ``respond(status:headers:stream:)-(_,_,Signal<[UInt8]>)`` streams (chunked, or
    /// close-delimited to HTTP/1.0). Read ``lastEventID`` to resume where a client left off.
    ///
    /// ```swift
    /// request.respond(events: ticks.map { ServerSentEvent(data: "\($0)", id: "\($0)") }, retry: 2000)
    /// ```
    ///
    /// - Parameters:
    ///   - events: the events; any thread (they are moved to the connection's loop).
    ///   - retry: the reconnection delay to announce, in milliseconds; `nil` for none.
    ///   - heartbeat: seconds of silence before a comment line; 0 for none. Default 15.
    ///   - headers: more response fields (`Content-Type` and `Cache-Control` are set).
    /// - Returns: `false` when the request was already answered or a field was refused.
    @discardableResult
    public func respond(events: Signal<ServerSentEvent>, retry: Int? = nil, heartbeat: Double = 15, headers: HTTPHeaders = [:]) -> Bool {
        var headers = headers
        headers.set("Content-Type", "text/event-stream")
        headers.set("Cache-Control", "no-cache")
        let scheduler = loop.scheduler
        let stream = Signal<[UInt8]>.create { subscriber in
            let lifetime = CompoundDisposable()
            var quiet = true
            if let retry { subscriber.sendNext(Array("retry: \(retry)\n\n".utf8)) }
            if heartbeat > 0 {
                lifetime.add(Signal<SchedulerTime>.interval(heartbeat, on: scheduler).subscribeNext { _ in
                    if quiet { subscriber.sendNext(Array(": heartbeat\n\n".utf8)) }
                    quiet = true
                })
            }
            lifetime.add(events.deliverOn(scheduler).subscribe(
                next: { event in
                    quiet = false
                    subscriber.sendNext(event.encoded)
                },
                error: { subscriber.sendError($0) },
                completed: { subscriber.sendCompleted() }))
            return lifetime
        }
        return respond(status: 200, headers: headers, stream: stream)
    }

    /// Answers with a `text/event-stream` of any signal, each value made an event by `event`;
    /// see ``respond(events:retry:heartbeat:headers:)-(Signal<ServerSentEvent>,_,_,_)``.
    ///
    /// - Parameters:
    ///   - values: the values.
    ///   - retry: the reconnection delay to announce, in milliseconds.
    ///   - heartbeat: seconds of silence before a comment line; 0 for none.
    ///   - event: makes a value an event (its data, id, type).
    /// - Returns: `false` when the request was already answered.
    @discardableResult
    public func respond<T>(events values: Signal<T>, retry: Int? = nil, heartbeat: Double = 15, event: @escaping (T) -> ServerSentEvent) -> Bool {
        respond(events: values.map(event), retry: retry, heartbeat: heartbeat)
    }
}

import ReactiveUV
import ReactiveUVHTTP

/// The routes the server tests answer with (as ruv-http-hello's, plus a few for tests).
enum HTTPTestApp {
    static func handle(_ request: HTTPRequest) {
        switch (request.method, request.path) {
        case ("GET", "/"), ("HEAD", "/"):
            request.respond(headers: ["Content-Type": "text/plain"], body: Array("Hello, World!".utf8))
        case ("POST", "/echo"), ("PUT", "/echo"):
            var headers = HTTPHeaders()
            if let type = request.headers["Content-Type"] { headers.add("Content-Type", type) }
            request.collectedBody.subscribe(
                next: { request.respond(headers: headers, body: $0) },
                error: { _ in request.respond(status: 400, text: "bad body") })
        case ("GET", "/stream"), ("HEAD", "/stream"):
            let n = request.queryParameter("n").flatMap { Int($0) } ?? 0
            request.respond(stream: Signal<String>.create { s in
                for i in 0..<n { s.sendNext("chunk \(i)\n") }
                s.sendCompleted()
                return nil
            })
        case ("GET", "/forever"):
            // 1 KiB every 5 ms until the client goes away.
            request.respond(stream: Signal<SchedulerTime>.interval(0.005, on: request.loop.scheduler).map { _ in [UInt8](repeating: 120, count: 1024) })
        case ("GET", "/inject"):
            let accepted = request.respond(headers: ["X-Evil": "a\r\nSet-Cookie: stolen=1"], text: "never")
            precondition(!accepted, "a header value with CR LF must be refused")
        default:
            request.respond(status: 404, text: "not found")
        }
    }
}

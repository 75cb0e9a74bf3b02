// ruv-http-hello: the HTTP server example, and the HTTP benchmark's subject.
//
//     ruv-http-hello --port 8080 [--host 127.0.0.1]
//
// GET /            200 "Hello, World!" (text/plain)
// POST /echo       200 with the request's body and Content-Type
// GET /stream?n=K  200, K chunks "chunk i\n" (chunked)
// anything else    404
//
// The bound address is printed once at start (with `--port 0`, the port the kernel chose),
// so scripts and tests can read it. SIGINT and SIGTERM stop the server and exit 0.

import Glibc
import ReactiveUV
import ReactiveUVHTTP

/// Writes `text` to standard error, unbuffered.
func printError(_ text: String) {
    let bytes = Array(text.utf8)
    _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}

func usage() -> Never {
    printError("usage: ruv-http-hello --port P [--host H]\n")
    exit(2)
}

// Arguments by hand, as ruv-echo reads them.
var host = "127.0.0.1"
var port: Int?
var arguments = CommandLine.arguments.dropFirst()
while let flag = arguments.popFirst() {
    switch flag {
    case "--port", "-p":
        guard let value = arguments.popFirst(), let number = Int(value), (0...65535).contains(number) else { usage() }
        port = number
    case "--host":
        guard let value = arguments.popFirst() else { usage() }
        host = value
    case "--help", "-h":
        usage()
    default:
        printError("ruv-http-hello: unknown argument \(flag)\n")
        usage()
    }
}
guard let port else { usage() }

let loop = EventLoop.main
let hello: [UInt8] = Array("Hello, World!".utf8)
let plain: HTTPHeaders = ["Content-Type": "text/plain"]

/// Answers one request; a plain call per request, no subscription but the body's.
func handle(_ request: HTTPRequest) {
    switch (request.method, request.path) {
    case ("GET", "/"), ("HEAD", "/"):
        request.respond(headers: plain, body: hello)
    case ("POST", "/echo"):
        var headers = HTTPHeaders()
        if let type = request.headers["Content-Type"] { headers.add("Content-Type", type) }
        request.collectedBody.subscribe(
            next: { body in request.respond(headers: headers, body: body) },
            error: { _ in request.respond(status: 400, text: "bad body\n") })
    case ("GET", "/stream"):
        let n = request.queryParameter("n").flatMap { Int($0) } ?? 0
        guard (0...1_000_000).contains(n) else {
            request.respond(status: 400, text: "n must be 0...1000000\n")
            return
        }
        let chunks = Signal<String>.create { subscriber in
            for i in 0..<n where !subscriber.isDisposed { subscriber.sendNext("chunk \(i)\n") }
            subscriber.sendCompleted()
            return nil
        }
        request.respond(headers: plain, stream: chunks)
    default:
        request.respond(status: 404, text: "not found\n")
    }
}

let subscription = HTTP.listen(
    host: host, port: port, on: loop,
    onListening: { address in
        print("listening on \(address)")
        fflush(nil)
    }
).subscribe(
    next: handle,
    error: { error in
        printError("ruv-http-hello: \(error)\n")
        exit(1)
    })

// SIGINT / SIGTERM: stop listening, close every connection, exit 0.
Signal.merge([UnixSignal.signal(SIGINT, on: loop), UnixSignal.signal(SIGTERM, on: loop)])
    .take(1)
    .subscribeNext { _ in
        subscription.dispose()
        loop.stop()
    }
loop.run()
exit(0)

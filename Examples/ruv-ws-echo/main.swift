// ruv-ws-echo: a WebSocket echo server at path /ws, as signal pipelines on one loop.
//
//     ruv-ws-echo --port 8080 [--host 127.0.0.1]
//
// Every message comes back as it came: text stays text, binary stays binary (fragments
// joined, permessage-deflate negotiated with clients that offer it). Nothing is printed
// per message; the bound address is printed once at start (with `--port 0`, the port the
// kernel chose), so scripts and benchmarks can read it. SIGINT and SIGTERM stop the server
// and exit with status 0.
//
// The upgrade request is read by ReactiveUVHTTP's server (`HTTP.listen`, with its limits
// and timeouts) and answered through the request's `upgrade(headers:)`.

import Glibc
import ReactiveUV
import ReactiveUVHTTP

/// Writes `text` to standard error, unbuffered.
func printError(_ text: String) {
    let bytes = Array(text.utf8)
    _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}

func usage() -> Never {
    printError("usage: ruv-ws-echo --port P [--host H]\n")
    exit(2)
}

// Arguments by hand, as ruv-echo does.
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
        printError("ruv-ws-echo: unknown argument \(flag)\n")
        usage()
    }
}
guard let port else { usage() }

let loop = EventLoop.main
let options = WebSocketOptions()

// Each request: `/ws` is answered by the WebSocket handshake (101, or its refusal), then
// every message the client sends goes back (`send` pauses reading while the client is slow
// to take our writes); anything else is a 404. One connection's failure never ends the
// server: the upgrade's errors are caught per connection.
let server = HTTP.listen(
    host: host, port: port, on: loop,
    onListening: { address in
        print("listening on \(address)")
        fflush(nil)
    }
)
.flattenMap { request -> Signal<Void> in
    guard request.path == "/ws" else {
        request.respond(status: 404, text: "WebSocket at /ws\n")
        return .empty()
    }
    switch WebSocket.serverHandshake(method: request.method, headers: request.headers, options: options) {
    case .refuse(let status, let headers, let body):
        request.respond(status: status, headers: headers, text: body)
        return .empty()
    case .accept(let headers, let compression, let subprotocol):
        return request.upgrade(headers: headers)
            .flattenMap { upgrade -> Signal<Void> in
                let ws = WebSocketConnection(
                    upgrade: upgrade, role: .server, options: options,
                    compression: compression, subprotocol: subprotocol)
                return ws.send(ws.messages)
            }
            .catchTo(.empty())
    }
}

let subscription = server.subscribe(error: { error in
    printError("ruv-ws-echo: \(error)\n")
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

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
// Until ReactiveUVHTTP's server is merged, the upgrade request is read by the small
// bounded head reader in RequestHead.swift; with the server, this becomes `HTTP.listen`
// and the request's `upgrade(headers:)`.

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

/// Writes a whole response head (and body) and ends our side.
func respond(_ tcp: TCPConnection, status: String, headers: HTTPHeaders, body: String) -> Signal<Void> {
    var text = "HTTP/1.1 \(status)\r\n"
    for (name, value) in headers.fields { text += "\(name): \(value)\r\n" }
    text += "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body
    return tcp.write(Array(text.utf8)).then { tcp.shutdown() }
}

// Each connection: read the upgrade request, answer it (101, or a refusal), then send
// back every message the client sends (`send` pauses reading while the client is slow to
// take our writes). One connection's failure never ends the server.
let server = TCP.listen(
    host: host, port: port, backlog: 1024, options: TCPOptions(noDelay: true), on: loop,
    onListening: { address in
        print("listening on \(address)")
        fflush(nil)
    }
)
.flattenMap { tcp in
    readRequestHead(tcp).flattenMap { head, leftover -> Signal<Void> in
        guard head.target == "/ws" || head.target.hasPrefix("/ws?") else {
            return respond(tcp, status: "404 Not Found", headers: ["Content-Type": "text/plain"], body: "WebSocket at /ws\n")
        }
        switch WebSocket.serverHandshake(method: head.method, headers: head.headers, options: options) {
        case .refuse(let status, let headers, let body):
            return respond(tcp, status: "\(status) \(status == 426 ? "Upgrade Required" : status == 405 ? "Method Not Allowed" : "Bad Request")", headers: headers, body: body)
        case .accept(let headers, let compression, let subprotocol):
            var text = "HTTP/1.1 101 Switching Protocols\r\n"
            for (name, value) in headers.fields { text += "\(name): \(value)\r\n" }
            let ws = WebSocketConnection(
                upgrade: HTTPUpgrade(transport: tcp, leftover: leftover), role: .server, options: options,
                compression: compression, subprotocol: subprotocol)
            return tcp.write(Array((text + "\r\n").utf8)).then { ws.send(ws.messages) }
        }
    }
    .catchTo(.empty())
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

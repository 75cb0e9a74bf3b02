// ruv-echo: a TCP echo server written as signal pipelines on one loop.
//
//     ruv-echo --port 7070 [--host 127.0.0.1]
//
// Every connection sends back exactly the bytes it reads, until the client ends its side;
// then ours ends too. Nothing is printed per message; the bound address is printed once at
// start (with `--port 0`, the port the kernel chose), so scripts and benchmarks can read
// it. SIGINT and SIGTERM stop the server and exit with status 0.

import Glibc
import ReactiveUV

/// Writes `text` to standard error, unbuffered.
func printError(_ text: String) {
    let bytes = Array(text.utf8)
    _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}

func usage() -> Never {
    printError("usage: ruv-echo --port P [--host H]\n")
    exit(2)
}

// Arguments by hand (the daemon uses swift-argument-parser; two flags do not need it).
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
        printError("ruv-echo: unknown argument \(flag)\n")
        usage()
    }
}
guard let port else { usage() }

let loop = EventLoop.main

// The server: each accepted connection sends back its own reads; when the client ends its
// side (reads complete) and everything is flushed, we end ours, and the connection closes.
// One connection's failure (a reset peer) is caught so it never ends the server.
let server = TCP.listen(
    host: host, port: port, backlog: 1024, options: TCPOptions(noDelay: true), on: loop,
    onListening: { address in
        print("listening on \(address)")
        fflush(nil)
    }
)
.flattenMap { connection in
    connection.send(connection.reads)
        .then { connection.shutdown() }
        .catchTo(.empty())
}

let subscription = server.subscribe(error: { error in
    printError("ruv-echo: \(error)\n")
    exit(1)
})

// SIGINT / SIGTERM (UnixSignal, over uv_signal: the callback runs on the loop's thread, not
// in a signal handler): stop listening, close every connection, exit 0.
Signal.merge([UnixSignal.signal(SIGINT, on: loop), UnixSignal.signal(SIGTERM, on: loop)])
    .take(1)
    .subscribeNext { _ in
        subscription.dispose()
        loop.stop()
    }
loop.run()
exit(0)

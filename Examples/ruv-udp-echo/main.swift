// ruv-udp-echo: a UDP echo server as one signal pipeline.
//
//     ruv-udp-echo --port 7070 [--host 127.0.0.1] [--stats]
//
// Every datagram goes back to its sender, unchanged, from the bound port. The bound
// address is printed once at start (with `--port 0`, the port the kernel chose), so
// scripts and benchmarks can read it. With --stats, the datagrams received and the sends
// dropped are printed at exit. SIGINT and SIGTERM stop the server and exit with status 0.

import Glibc
import ReactiveUV

/// Writes `text` to standard error, unbuffered.
func printError(_ text: String) {
    let bytes = Array(text.utf8)
    _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}

func usage() -> Never {
    printError("usage: ruv-udp-echo --port P [--host H] [--stats]\n")
    exit(2)
}

var host = "127.0.0.1"
var port: Int?
var stats = false
var arguments = CommandLine.arguments.dropFirst()
while let flag = arguments.popFirst() {
    switch flag {
    case "--port", "-p":
        guard let value = arguments.popFirst(), let number = Int(value), (0...65535).contains(number) else { usage() }
        port = number
    case "--host":
        guard let value = arguments.popFirst() else { usage() }
        host = value
    case "--stats":
        stats = true
    case "--help", "-h":
        usage()
    default:
        printError("ruv-udp-echo: unknown argument \(flag)\n")
        usage()
    }
}
guard let port else { usage() }

let loop = EventLoop.main
var socket: UDPSocket?

// The server: the socket sends back what it receives, as one streaming send (no
// subscription per datagram). A reply the kernel refuses is counted, never the end of the
// server; under a flood the send queue's policy drops and counts instead of growing.
let server = UDP.open(
    host: host, port: port, options: UDPOptions(highWaterMark: 4 << 20, backpressure: .dropAndCount), on: loop
)
.flattenMap { bound -> Signal<Void> in
    socket = bound
    print("listening on \(bound.localAddress)")
    fflush(nil)
    return bound.send(bound.datagrams.map { (bytes: $0.payload, to: $0.sender) })
}

let subscription = server.subscribe(error: { error in
    printError("ruv-udp-echo: \(error)\n")
    exit(1)
})

Signal.merge([UnixSignal.signal(SIGINT, on: loop), UnixSignal.signal(SIGTERM, on: loop)])
    .take(1)
    .subscribeNext { _ in
        if stats, let socket {
            print("received \(socket.receivedDatagrams) dropped \(socket.droppedSends) failed \(socket.failedSends) truncated \(socket.truncatedDatagrams)")
            fflush(nil)
        }
        subscription.dispose()
        loop.stop()
    }
loop.run()
exit(0)

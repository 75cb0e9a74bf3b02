// ruv-echo: a TCP echo server written as signal pipelines on one loop.
//
//     ruv-echo --port 7070 [--host 127.0.0.1]
//
// Every connection sends back exactly the bytes it reads, until the client ends its side;
// then ours ends too. Nothing is printed per message; the bound address is printed once at
// start (with `--port 0`, the port the kernel chose), so scripts and benchmarks can read
// it. SIGINT and SIGTERM stop the server and exit with status 0.

import CLibUV
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

// SIGINT / SIGTERM: stop listening, close every connection, exit 0. uv_signal handles run
// the callback on the loop's thread, outside the signal handler.
final class Stopper: @unchecked Sendable {
    // Thread-safety: main loop thread only.
    var handles: [UnsafeMutablePointer<uv_signal_t>] = []

    func watch(_ signal: Int32) {
        let handle = UnsafeMutablePointer<uv_signal_t>.allocate(capacity: 1)
        uv_signal_init(loop.uvLoop, handle)
        handle.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        uv_signal_start(handle, { handle, _ in
            guard let handle else { return }
            Unmanaged<Stopper>.fromOpaque(handle.pointee.data).takeUnretainedValue().stop()
        }, signal)
        handles.append(handle)
    }

    func stop() {
        subscription.dispose()
        for handle in handles {
            uv_close(UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_handle_t.self)) { h in
                UnsafeMutableRawPointer(h)?.deallocate()
            }
        }
        handles = []
        loop.stop()
    }
}

let stopper = Stopper()
stopper.watch(SIGINT)
stopper.watch(SIGTERM)
loop.run()
exit(0)

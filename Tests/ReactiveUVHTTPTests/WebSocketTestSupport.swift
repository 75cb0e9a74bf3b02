import CLibUV
import Glibc
import XCTest

@testable import ReactiveUV
@testable import ReactiveUVHTTP

// What the WebSocket tests share: a small bounded request-head reader (for the article's
// stand-in request in WebSocketDocExampleTests), a test server on loopback behind our HTTP
// server, Python programs run as child processes (the
// `websockets` library from PyPI, and raw sockets for hostile frames), and the
// end-of-test check that the loop has nothing of ours left.

/// A request head: the request line's method and target, and the header fields.
struct WSRequestHead {
    let method: String
    let target: String
    let headers: HTTPHeaders
}

enum WSHeadError: Error { case tooLarge, malformed(String), closedEarly }

/// Reads one HTTP request head (at most 16 KiB) from `transport`, then stops reading and
/// sends the head and the bytes read past it.
func wsReadRequestHead(_ transport: any HTTPTransport) -> Signal<(WSRequestHead, [UInt8])> {
    Signal.create { subscriber in
        let reading = CompoundDisposable()
        var bytes: [UInt8] = []
        var done = false
        // The head waits until the reads subscription is gone: a TLS connection can deliver
        // it while `subscribe` is still running, and whoever gets it must be able to read.
        var subscribed = false
        var outcome: [() -> Void] = []
        func emit(_ send: @escaping () -> Void) {
            if subscribed { send() } else { outcome.append(send) }
        }
        reading.add(transport.reads.subscribe(
            next: { chunk in
                guard !done else { return }
                bytes += chunk
                guard let end = WebSocketClientHandshake.headEnd(bytes) else {
                    if bytes.count > 16 * 1024 {
                        done = true
                        reading.dispose()
                        emit { subscriber.sendError(WSHeadError.tooLarge) }
                    }
                    return
                }
                done = true
                reading.dispose()
                let text = String(decoding: bytes[..<(end - 4)], as: UTF8.self)
                let lines = text.split(separator: "\r\n", omittingEmptySubsequences: false)
                let requestLine = lines[0].split(separator: " ")
                guard requestLine.count == 3, requestLine[2].hasPrefix("HTTP/1.") else {
                    emit { subscriber.sendError(WSHeadError.malformed(String(lines[0]))) }
                    return
                }
                var headers = HTTPHeaders()
                for line in lines.dropFirst() {
                    guard let colon = line.firstIndex(of: ":") else {
                        emit { subscriber.sendError(WSHeadError.malformed(String(line))) }
                        return
                    }
                    headers.add(String(line[..<colon]), String(line[line.index(after: colon)...].trimmingSpaces))
                }
                emit {
                    subscriber.sendNext((WSRequestHead(method: String(requestLine[0]), target: String(requestLine[1]), headers: headers), Array(bytes[end...])))
                    subscriber.sendCompleted()
                }
            },
            error: { subscriber.sendError($0) },
            completed: { if !done { subscriber.sendError(WSHeadError.closedEarly) } }))
        subscribed = true
        outcome.forEach { $0() }
        return reading
    }
}

/// A WebSocket server on 127.0.0.1, port 0, on `loop`: ReactiveUVHTTP's server
/// (`HTTP.listen`, or ReactiveUVHTTPS's `HTTP.listen(certificate:key:)` given as `listen`), ``WebSocket/serverHandshake(method:headers:options:)``
/// and ``HTTPRequest/upgrade(headers:)``, and `handler` for each connection at `/ws`.
/// Records every connection's close and every handler error.
final class WebSocketTestServer {
    // Thread-safety: used on the test thread only, which also runs the loop.
    var port = 0
    var closes: [WebSocketClose] = []
    var messageErrors: [any Error] = []
    var connections: [WebSocketConnection] = []
    var listenError: (any Error)?
    private var subscription: Disposable?

    /// Listens with `listen` (given the loop and the bound-address callback; ReactiveUVHTTPSTests
    /// passes an HTTPS listen), or with TCP on port 0 when it is `nil`.
    init(
        on loop: EventLoop, options: WebSocketOptions = WebSocketOptions(),
        listen: ((EventLoop, @escaping (SocketAddress) -> Void) -> Signal<HTTPRequest>)? = nil,
        page: String? = nil, handler: @escaping (WebSocketConnection) -> Signal<Void>
    ) {
        let listen = listen ?? { loop, onListening in HTTP.listen(port: 0, on: loop, onListening: onListening) }
        let requests = listen(loop, { [unowned self] in port = $0.port })
        subscription = requests
            .flattenMap { [unowned self] request -> Signal<Void> in
                if request.path == "/", let page {
                    request.respond(headers: ["Content-Type": "text/html; charset=utf-8"], text: page)
                    return .empty()
                }
                guard request.path == "/ws" else {
                    request.respond(status: 404, body: [])
                    return .empty()
                }
                switch WebSocket.serverHandshake(method: request.method, headers: request.headers, options: options) {
                case .refuse(let status, let headers, let body):
                    request.respond(status: status, headers: headers, text: body)
                    return .empty()
                case .accept(let headers, let compression, let subprotocol):
                    return request.upgrade(headers: headers)
                        .flattenMap { [unowned self] upgrade -> Signal<Void> in
                            let ws = WebSocketConnection(
                                upgrade: upgrade, role: .server, options: options, compression: compression, subprotocol: subprotocol)
                            connections.append(ws)
                            _ = ws.closed.subscribeNext { [unowned self] in closes.append($0) }
                            return handler(ws).catch { [unowned self] error in messageErrors.append(error); return .empty() }
                        }
                        .catchTo(.empty())
                }
            }
            .subscribe(error: { [unowned self] in listenError = $0 })
    }

    func stop() {
        subscription?.dispose()
        subscription = nil
    }
}

/// The echo every server test uses: each message back as it came; `close me` closes with
/// 4002; the connection's end ends it.
func wsEchoHandler(_ ws: WebSocketConnection) -> Signal<Void> {
    ws.send(ws.messages.filter { message in
        if message == .text("close me") {
            ws.close(code: 4002, reason: "as asked")
            return false
        }
        return true
    })
}

/// A child process's output and end, recorded on the test's loop.
final class WSChildRun {
    // Thread-safety: used on the test thread only, which also runs the loop.
    var stdout: [UInt8] = []
    var stderr: [UInt8] = []
    var exit: SubprocessExit?
    var failure: (any Error)?
    var subscription: Disposable?
    var output: String { String(decoding: stdout, as: UTF8.self) }
    /// Complete lines only (unbuffered Python may write a line in pieces).
    var lines: [String] {
        var parts = output.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        parts.removeLast()
        return parts.filter { !$0.isEmpty }
    }
    var finished: Bool { exit != nil || failure != nil }
    /// The words after `tag` on the first line starting with `tag `.
    func line(_ tag: String) -> String? {
        lines.first { $0.hasPrefix(tag + " ") }.map { String($0.dropFirst(tag.count + 1)) }
    }
    func stop() { subscription?.dispose() }
}

/// Runs `python3 -c script args…` on `loop`.
func wsRunPython(_ script: String, _ arguments: [String], on loop: EventLoop) -> WSChildRun {
    let run = WSChildRun()
    run.subscription = Subprocess.run(["python3", "-u", "-c", script] + arguments, on: loop).subscribe(
        next: { event in
            switch event {
            case .stdout(let bytes): run.stdout += bytes
            case .stderr(let bytes): run.stderr += bytes
            case .exit(let exit): run.exit = exit
            }
        },
        error: { run.failure = $0 })
    return run
}

func wsHex(_ bytes: [UInt8]) -> String { hexString(bytes) }

/// Lowercase hex, two digits a byte (here, not beside the frame tests that use it most:
/// ReactiveUVHTTPSTests shares this file, not those).
func hexString(_ bytes: [UInt8]) -> String {
    let digits = Array("0123456789abcdef")
    var text = ""
    for byte in bytes {
        text.append(digits[Int(byte >> 4)])
        text.append(digits[Int(byte & 15)])
    }
    return text
}

/// Handles of `loop` not closing, without the loop's own two (wake-up and timer order).
func wsOpenUserHandles(_ loop: EventLoop) -> Int {
    var count = 0
    withUnsafeMutablePointer(to: &count) { counter in
        uv_walk(loop.uvLoop, { handle, arg in
            guard let handle, let arg, uv_is_closing(handle) == 0 else { return }
            arg.assumingMemoryBound(to: Int.self).pointee += 1
        }, counter)
    }
    return count - 2
}

/// Runs `loop` until every IO resource of ours is gone, checks no handle is left, closes it.
func wsAssertLoopCleanAndClose(_ loop: EventLoop, file: StaticString = #filePath, line: UInt = #line) {
    let deadline = wsMonotonicSeconds() + 60
    while (!loop.resources.isEmpty || wsOpenUserHandles(loop) > 0) && wsMonotonicSeconds() < deadline {
        _ = loop.runNoWait()
        usleep(1000)
    }
    XCTAssertTrue(loop.resources.isEmpty, "resources left: \(loop.resources.count)", file: file, line: line)
    XCTAssertEqual(wsOpenUserHandles(loop), 0, "handles left open", file: file, line: line)
    XCTAssertNoThrow(try loop.close(), "uv_loop_close must succeed: all handles closed", file: file, line: line)
}

func wsMonotonicSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// Runs `/bin/sh -c script` to its end (for `openssl`); returns its exit status.
@discardableResult
func wsRunShell(_ script: String) -> Int32 {
    var pid = pid_t()
    let argv: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/sh"), strdup("-c"), strdup(script), nil]
    defer { argv.forEach { free($0) } }
    guard posix_spawn(&pid, "/bin/sh", nil, nil, argv, environ) == 0 else { return -1 }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    return (status >> 8) & 0xff
}

/// A fresh temporary directory, removed by `remove()`.
func wsTemporaryDirectory() -> String {
    var template = Array("/tmp/ruv-ws-XXXXXX".utf8CString)
    return template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)) }
}

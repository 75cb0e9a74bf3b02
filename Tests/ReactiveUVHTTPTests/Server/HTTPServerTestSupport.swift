import CLibUV
import CSystemShims
import Foundation
import Glibc
import XCTest

@testable import ReactiveUV
@testable import ReactiveUVHTTP

// An HTTP server on a loop thread of its own, so the test thread can drive it with real
// blocking clients (curl, python3, raw sockets); and the end-of-test check that its loop
// has no handle left. (Foundation's Thread and Process appear in tests only.)

/// Handles on `loop` other than its own async and prepare handles. Call on the loop's thread.
func httpUserHandleCount(_ loop: EventLoop) -> Int {
    var count = 0
    let own: Set<UnsafeMutableRawPointer> = [UnsafeMutableRawPointer(loop.asyncHandle), UnsafeMutableRawPointer(loop.prepareHandle)]
    withUnsafeMutablePointer(to: &count) { counter in
        var context = (counter, own)
        withUnsafeMutablePointer(to: &context) { context in
            uv_walk(loop.uvLoop, { handle, arg in
                guard let handle, let arg else { return }
                let context = arg.assumingMemoryBound(to: (UnsafeMutablePointer<Int>, Set<UnsafeMutableRawPointer>).self)
                if !context.pointee.1.contains(UnsafeMutableRawPointer(handle)) { context.pointee.0.pointee += 1 }
            }, context)
        }
    }
    return count
}

/// TCP handles on `loop` (listeners and connections). Call on the loop's thread.
func httpTCPHandleCount(_ loop: EventLoop) -> Int {
    var count = 0
    withUnsafeMutablePointer(to: &count) { counter in
        uv_walk(loop.uvLoop, { handle, arg in
            guard let handle, let arg, uv_handle_get_type(handle) == UV_TCP, uv_is_closing(handle) == 0 else { return }
            arg.assumingMemoryBound(to: Int.self).pointee += 1
        }, counter)
    }
    return count
}

/// A lock-protected value.
final class Guarded<Value>: @unchecked Sendable {
    // Thread-safety: every access holds `lock`.
    private let lock = NSLock()
    private var stored: Value
    init(_ value: Value) { stored = value }
    var value: Value { lock.withLock { stored } }
    func update<T>(_ body: (inout Value) -> T) -> T { lock.withLock { body(&stored) } }
}

/// Polls `condition` every millisecond until it holds or `timeout` seconds pass.
@discardableResult
func waitFor(_ timeout: Double = 30, _ condition: () -> Bool) -> Bool {
    let deadline = csys_monotonic_ns() + UInt64(timeout * 1e9)
    while !condition() {
        if csys_monotonic_ns() > deadline { return false }
        usleep(1000)
    }
    return true
}

/// An HTTP server on its own loop thread. `handler` runs on that thread for each request.
final class HTTPTestServer: @unchecked Sendable {
    // Thread-safety: `loop`, `port` are set before init returns; the rest through `Guarded`.
    private(set) var loop: EventLoop!
    private(set) var port = 0
    let requests = Guarded<[String]>([])
    /// Whether the request signal completed (a graceful shutdown ends with it).
    let completed = Guarded(false)
    private let subscription = Guarded<Disposable?>(nil)
    private let stopping = Guarded(false)
    private let report = Guarded<(handles: Int, resources: Int, closeError: String?)?>(nil)
    private var thread: Thread?
    private let finished = DispatchSemaphore(value: 0)

    init(options: HTTPServerOptions = HTTPServerOptions(), listen: ((HTTPServerOptions, EventLoop, @escaping (SocketAddress) -> Void) -> Signal<HTTPRequest>)? = nil, handler: @escaping (HTTPRequest) -> Void) throws {
        let ready = DispatchSemaphore(value: 0)
        let box = Guarded<(EventLoop?, Int, String?)>((nil, 0, nil))
        let requests = self.requests, completed = self.completed, subscription = self.subscription, stopping = self.stopping, report = self.report, finished = self.finished
        let handlerBox = HTTPBox(handler)
        let listenBox = HTTPBox(listen)
        thread = Thread {
            let loop = try! EventLoop()
            loop.retainAsync()
            box.update { $0.0 = loop }
            let onListening: (SocketAddress) -> Void = { address in
                box.update { $0.1 = address.port }
                ready.signal()
            }
            let signal = listenBox.value?(options, loop, onListening) ?? HTTP.listen(port: 0, options: options, on: loop, onListening: onListening)
            let d = signal.subscribe(
                next: { request in
                    requests.update { $0.append("\(request.method) \(request.target)") }
                    handlerBox.value(request)
                },
                error: { error in
                    box.update { $0.2 = "\(error)" }
                    ready.signal()
                },
                completed: { completed.update { $0 = true } })
            subscription.update { $0 = d }
            while !stopping.value { loop.run() }
            loop.releaseAsync()
            let deadline = csys_monotonic_ns() + 10_000_000_000
            while (httpUserHandleCount(loop) != 0 || !loop.resources.isEmpty) && csys_monotonic_ns() < deadline {
                _ = loop.runNoWait()
                usleep(1000)
            }
            let handles = httpUserHandleCount(loop), resources = loop.resources.count
            var closeError: String?
            do { try loop.close() } catch { closeError = "\(error)" }
            report.update { $0 = (handles, resources, closeError) }
            finished.signal()
        }
        thread!.stackSize = 8 << 20
        thread!.start()
        guard ready.wait(timeout: .now() + 30) == .success else { throw UVError(code: ETIMEDOUT, operation: "test server start") }
        let (loop, port, error) = box.value
        if let error { throw UVError(code: EIO, operation: "listen: \(error)") }
        self.loop = loop
        self.port = port
    }

    /// Runs `body` on the server's loop thread and returns its result.
    func sync<T>(_ body: @escaping () -> T) -> T {
        let result = Guarded<T?>(nil)
        let done = DispatchSemaphore(value: 0)
        let work = HTTPBox(body)
        loop.execute {
            let value = work.value()
            result.update { $0 = value }
            done.signal()
        }
        _ = done.wait(timeout: .now() + 30)
        return result.value!
    }

    /// Disposes the server, stops its loop and checks that every handle closed and the
    /// loop closed cleanly (the project's all-handles-closed check).
    func stop(file: StaticString = #filePath, line: UInt = #line) {
        subscription.value?.dispose()
        stopping.update { $0 = true }
        loop.stop()
        XCTAssertEqual(finished.wait(timeout: .now() + 30), .success, "server thread did not finish", file: file, line: line)
        guard let report = report.value else { return XCTFail("no report", file: file, line: line) }
        XCTAssertEqual(report.handles, 0, "handles left open", file: file, line: line)
        XCTAssertEqual(report.resources, 0, "IO objects left registered", file: file, line: line)
        XCTAssertNil(report.closeError, "uv_loop_close", file: file, line: line)
    }
}

/// Runs a program to completion; its status, standard output and standard error.
@discardableResult
func runProgram(_ arguments: [String], stdin: Data? = nil, timeout: Double = 60) throws -> (status: Int32, out: String, err: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = arguments
    let out = Pipe(), err = Pipe(), input = Pipe()
    process.standardOutput = out
    process.standardError = err
    process.standardInput = input
    try process.run()
    if let stdin { input.fileHandleForWriting.write(stdin) }
    try input.fileHandleForWriting.close()
    // Read both pipes while the process runs, so a full pipe never stalls it.
    let outData = Guarded(Data()), errData = Guarded(Data())
    let group = DispatchGroup()
    for (pipe, sink) in [(out, outData), (err, errData)] {
        group.enter()
        DispatchQueue.global().async {
            let data = pipe.fileHandleForReading.readDataToEndOfFile()
            sink.update { $0 = data }
            group.leave()
        }
    }
    if group.wait(timeout: .now() + timeout) == .timedOut {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        throw UVError(code: ETIMEDOUT, operation: "run \(arguments.joined(separator: " "))")
    }
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: outData.value, as: UTF8.self), String(decoding: errData.value, as: UTF8.self))
}

/// A blocking client socket to 127.0.0.1:port with a receive timeout.
final class RawClient {
    private(set) var fd: Int32

    init(port: Int, receiveTimeout: Double = 20) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var tv = timeval(tv_sec: Int(receiveTimeout), tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        if rc != 0 {
            Glibc.close(fd)
            throw UVError(code: errno, operation: "connect", target: "127.0.0.1:\(port)")
        }
    }

    deinit { if fd >= 0 { Glibc.close(fd) } }

    func send(_ text: String) { send(Array(text.utf8)) }

    func send(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return }
            offset += n
        }
    }

    /// Reads until the server closes (or resets) the connection or the timeout passes.
    /// - Returns: the bytes, and whether the connection ended (EOF or reset) rather than timed out.
    func readToEnd() -> (text: String, ended: Bool) {
        var all: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 {
                all.append(contentsOf: buffer[0..<n])
            } else {
                let ended = n == 0 || errno == ECONNRESET
                return (String(decoding: all, as: UTF8.self), ended)
            }
        }
    }

    /// Reads until `marker` has arrived (or the connection ends or times out).
    func read(until marker: String) -> String {
        var all: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        let needle = Array(marker.utf8)
        while !all.containsSequence(needle) {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            all.append(contentsOf: buffer[0..<n])
        }
        return String(decoding: all, as: UTF8.self)
    }

    /// Closes with a reset (SO_LINGER 0) instead of a FIN.
    func reset() {
        var l = linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, socklen_t(MemoryLayout<linger>.size))
        Glibc.close(fd)
        fd = -1
    }
}

extension Array where Element == UInt8 {
    func containsSequence(_ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, count >= needle.count else { return needle.isEmpty }
        for start in 0...(count - needle.count) where self[start] == needle[0] {
            if Array(self[start..<start + needle.count]) == needle { return true }
        }
        return false
    }
}

extension String {
    /// How many times `piece` occurs.
    func occurrences(of piece: String) -> Int { components(separatedBy: piece).count - 1 }
}

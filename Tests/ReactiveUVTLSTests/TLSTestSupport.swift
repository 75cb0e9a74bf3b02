import CLibUV
import Glibc
import XCTest

@testable import ReactiveUV
@testable import ReactiveUVTLS

// Certificates made at test time with the `openssl` command, a recorder, and the
// end-of-test check that a loop has nothing of ours left.

/// A private CA and certificates it signed, in a fresh temporary directory.
final class TestCertificates {
    let directory: String
    var ca: String { directory + "/ca.pem" }
    /// A second CA nobody trusts.
    var otherCA: String { directory + "/other-ca.pem" }
    /// Valid, for `localhost` and `127.0.0.1`.
    var server: String { directory + "/server.pem" }
    var serverKey: String { directory + "/server.key" }
    /// Expired yesterday, for `localhost` and `127.0.0.1`.
    var expired: String { directory + "/expired.pem" }
    /// Valid, but for `other.example` only.
    var otherName: String { directory + "/other-name.pem" }
    /// Signed by the untrusted CA, for `localhost`.
    var untrusted: String { directory + "/untrusted.pem" }
    /// A key that belongs to no certificate here.
    var strayKey: String { directory + "/stray.key" }

    init() throws {
        var template = Array("/tmp/ruv-tls-XXXXXX".utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw UVError(code: errno, operation: "mkdtemp")
        }
        directory = String(cString: made)
        let ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
        let script = """
            set -e
            cd '\(directory)'
            openssl req -x509 \(ec) -keyout ca.key -out ca.pem -subj /CN=ReactiveUV-Test-CA -days 2
            openssl req -x509 \(ec) -keyout other-ca.key -out other-ca.pem -subj /CN=Untrusted-CA -days 2
            openssl req \(ec) -keyout server.key -out server.csr -subj /CN=localhost
            openssl req \(ec) -keyout stray.key -out stray.csr -subj /CN=stray
            printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\n' > local.ext
            printf 'subjectAltName=DNS:other.example\\n' > other.ext
            openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 -extfile local.ext
            openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out expired.pem -days -1 -extfile local.ext
            openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out other-name.pem -days 2 -extfile other.ext
            openssl x509 -req -in server.csr -CA other-ca.pem -CAkey other-ca.key -CAcreateserial -out untrusted.pem -days 2 -extfile local.ext
            """
        let status = runShell(script + " >/dev/null 2>&1")
        guard status == 0 else { throw UVError(code: EIO, operation: "openssl (exit \(status))", target: directory) }
    }

    func remove() { _ = runShell("rm -rf '\(directory)'") }
}

/// Runs `/bin/sh -c script` and returns its exit status.
@discardableResult
func runShell(_ script: String) -> Int32 {
    var pid = pid_t()
    let argv: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/sh"), strdup("-c"), strdup(script), nil]
    defer { argv.forEach { free($0) } }
    guard posix_spawn(&pid, "/bin/sh", nil, nil, argv, environ) == 0 else { return -1 }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    return (status >> 8) & 0xff
}

/// Records a signal's events (subscribed and run on the test's own loop thread).
final class Recorder<Value>: @unchecked Sendable {
    // Thread-safety: used on the test thread only, which also runs the loop.
    var events: [Event<Value>] = []
    var values: [Value] { events.compactMap(\.value) }
    var terminated: Bool { events.last?.isTerminating ?? false }
    var error: (any Error)? { events.last?.error }
    var completed: Bool { if case .completed? = events.last { return true } else { return false } }

    @discardableResult
    func subscribe(_ signal: Signal<Value>) -> Disposable {
        signal.subscribe(
            next: { self.events.append(.next($0)) },
            error: { self.events.append(.error($0)) },
            completed: { self.events.append(.completed) })
    }
}

/// Handles of `loop` not closing, without the loop's own two (wake-up and timer order).
func openUserHandles(_ loop: EventLoop) -> Int {
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
func assertLoopCleanAndClose(_ loop: EventLoop, file: StaticString = #filePath, line: UInt = #line) {
    let deadline = deadlineIn(60)
    while (!loop.resources.isEmpty || openUserHandles(loop) > 0) && monotonicSeconds() < deadline {
        _ = loop.runNoWait()
        usleep(1000)
    }
    XCTAssertTrue(loop.resources.isEmpty, "resources left: \(loop.resources.count)", file: file, line: line)
    XCTAssertEqual(openUserHandles(loop), 0, "handles left open", file: file, line: line)
    XCTAssertNoThrow(try loop.close(), "uv_loop_close must succeed: all handles closed", file: file, line: line)
}

func monotonicSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

func deadlineIn(_ seconds: Double) -> Double { monotonicSeconds() + seconds }

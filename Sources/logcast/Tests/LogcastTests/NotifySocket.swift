import Foundation
import Glibc

/// What systemd listens on for `Type=notify` services, played by the test: an `AF_UNIX`
/// datagram socket bound in a temporary directory (`NOTIFY_SOCKET=path` for the daemon),
/// read continuously on a thread of its own.
///
/// Continuously, because sd_notify sends with a blocking `sendmsg`: a receiver that stops
/// reading lets the queue (`net.unix.max_dgram_qlen`, 10 by default) fill, and the daemon's
/// loop would wait in sd_notify — systemd never stops reading, and neither does this.
final class NotifySocket: @unchecked Sendable {
    // Thread-safety: `received` and `stopped` under `lock`; `fd` is read-only.
    let path: String
    private let fd: Int32
    private let lock = NSLock()
    private var received: [(text: String, at: Date)] = []
    private var stopped = false
    private let finished = DispatchSemaphore(value: 0)

    /// Binds `directory/notify` and starts reading it.
    init(directory: String) throws {
        path = directory + "/notify"
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        precondition(bytes.count < MemoryLayout.size(ofValue: address.sun_path))
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
        }
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard rc == 0 else {
            close(fd)
            throw HarnessError.socket("bind \(path): errno \(errno)")
        }
        let reader = Thread { [self] in
            var buffer = [UInt8](repeating: 0, count: 4096)
            while !isStopped {
                var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                if poll(&poller, 1, 50) <= 0 { continue }
                let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, Int32(MSG_DONTWAIT)) }
                guard n > 0 else { continue }
                let text = String(decoding: buffer[0..<n], as: UTF8.self)
                lock.lock()
                received.append((text, Date()))
                lock.unlock()
            }
            finished.signal()
        }
        reader.start()
    }

    private var isStopped: Bool {
        lock.lock()
        defer { lock.unlock() }
        return stopped
    }

    /// Every message received so far, in order, with when it was read.
    var messages: [(text: String, at: Date)] {
        lock.lock()
        defer { lock.unlock() }
        return received
    }

    /// How many messages so far carry the assignment `line` (`WATCHDOG=1`).
    func count(_ line: String) -> Int { messages.filter { Self.lines($0.text).contains(line) }.count }

    /// A message's assignments, one per line (`READY=1`, `STATUS=…`).
    static func lines(_ text: String) -> [String] { text.split(separator: "\n").map(String.init) }

    /// Sends `text` to this socket from the test and waits (bounded) until the reader has
    /// it: datagrams on a Unix socket arrive in order, so every message queued before it
    /// has been read then (the positive marker for "all the daemon sent so far is counted").
    func mark(_ text: String, timeout: Double = 60) -> Bool {
        let sender = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard sender >= 0 else { return false }
        defer { close(sender) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, b) in path.utf8.enumerated() { raw[i] = b }
        }
        let sent = Array(text.utf8).withUnsafeBytes { bytes in
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(sender, bytes.baseAddress, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
        }
        guard sent == text.utf8.count else { return false }
        return wait(timeout: timeout) { $0.contains(text) }
    }

    /// Waits until `done(messages)` holds (bounded); whether it did.
    func wait(timeout: Double = 60, until done: ([String]) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if done(messages.map(\.text)) { return true }
            usleep(10_000)
        }
        return done(messages.map(\.text))
    }

    /// Stops the reader and closes the socket (the reader thread holds this object until then).
    func stop() {
        lock.lock()
        let already = stopped
        stopped = true
        lock.unlock()
        guard !already else { return }
        _ = finished.wait(timeout: .now() + 10)
        close(fd)
        unlink(path)
    }
}

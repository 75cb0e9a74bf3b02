import Glibc
import ReactiveUV

/// What `logcast` tails when no FILE is given: a demo log it creates in the temporary
/// directory and appends to every half second, so a fresh machine has something to show.
enum DemoSource {
    static let messages = [
        "GET /index.html 200 12ms", "GET /api/users 200 31ms", "POST /api/login 401 8ms",
        "GET /missing 404 2ms", "worker 3 started", "cache miss for key session:42",
        "GET /api/orders 500 120ms", "db pool: 4 of 10 connections in use",
    ]

    /// Creates the demo file and starts appending; returns its path and the appender.
    static func start() -> (path: String, appender: Disposable) {
        let dir = getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp"
        let path = "\(dir)/logcast-demo-\(getpid()).log"
        let fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        var n = 0
        let appender = Signal.interval(0.5, on: Scheduler.main).subscribeNext { _ in
            let line = "demo \(n): \(messages[n % messages.count])\n"
            n += 1
            _ = line.withCString { write(fd, $0, strlen($0)) }
        }
        return (path, CompoundDisposable([appender, Disposable { close(fd); unlink(path) }]))
    }
}

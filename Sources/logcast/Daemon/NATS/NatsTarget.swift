import Glibc
import ReactiveUV
import ReactiveUVNATS

/// Where logcast meets NATS: the server list of `--publish`/`--from`, the stream and the
/// subject, and the connect-with-retry both the edge and the hub use.
struct NatsTarget {
    /// Server URLs (`nats://H:P` or `tls://H:P`), from a comma-separated option.
    let urls: [String]
    /// The JetStream stream (`--stream`).
    let stream: String
    /// Connection options (TLS CA from `--nats-ca`).
    let options: NATSOptions

    /// Splits and checks a `--publish`/`--from` value; the error names the option.
    static func parse(_ text: String, option: String) throws -> [String] {
        let urls = text.split(separator: ",").map { part -> String in
            let url = String(part).trimmingSpaces
            return url.contains("://") ? url : "nats://" + url
        }
        do {
            try NATS.validate(urls)
        } catch let error as NATSError {
            throw NatsOptionError("\(option): \(error.detail ?? "\(error)") in '\(error.target ?? text)'")
        }
        return urls
    }

    /// The host name, for the default subject `logs.HOST` (dots would split the subject).
    static var hostName: String {
        var buffer = [CChar](repeating: 0, count: 256)
        gethostname(&buffer, buffer.count - 1)
        let name = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        let cleaned = name.map { $0 == "." || $0 == " " || $0 == "*" || $0 == ">" ? "_" : $0 }
        return cleaned.isEmpty ? "localhost" : String(cleaned)
    }

    /// Connects, retrying with a doubling pause (0.25 s … 2 s) while no server answers:
    /// an edge that starts before its servers keeps its files as the buffer meanwhile.
    /// `connected` runs for each connection made (again after one closes for good).
    ///
    /// A failure is said once, not once per attempt: servers away for an hour were 1,800
    /// identical lines (every 2 s), burying what else the log said. The same error again is
    /// said once a minute with the count of attempts; a different one at once; a
    /// connection after failures says how many there were (as rsyslog says an action
    /// suspended, then resumed).
    static func connectForever(_ target: NatsTarget, log: @escaping (String) -> Void,
                               connected: @escaping (NATSConnection) -> Void) -> Disposable {
        let serial = SerialDisposable()
        var pause = 0.25
        var failures = RetryReport()
        var attempt: (() -> Void)!
        attempt = {
            serial.inner = NATS.connect(target.urls, options: target.options).subscribe(
                next: { connection in
                    pause = 0.25
                    let after = failures.succeeded()
                    log("connected to \(connection.connectedURL ?? target.urls.joined(separator: ","))\(after)")
                    connected(connection)
                },
                error: { error in
                    if let line = failures.failed("\(error)", now: Scheduler.main.now) { log(line) }
                    let delay = pause
                    pause = min(pause * 2, 2)
                    serial.inner = Scheduler.main.afterDelay(delay) { attempt() }
                },
                completed: {
                    log("connection closed; connecting again")
                    serial.inner = Scheduler.main.afterDelay(pause) { attempt() }
                })
        }
        attempt()
        return Disposable {
            serial.dispose()
            attempt = nil
        }
    }
}

/// A bad NATS option, said as `logcast: error: …`.
struct NatsOptionError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

extension String {
    var trimmingSpaces: String {
        String(drop(while: { $0 == " " }).reversed().drop(while: { $0 == " " }).reversed())
    }
}

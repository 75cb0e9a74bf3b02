import CLibUV
import CNATS
import CNATSLibuv
import ReactiveUV

/// NATS as signals: a connection to a list of servers whose socket IO runs on the caller's
/// ``/ReactiveUV/EventLoop`` through cnats's libuv adapter.
///
/// ```swift
/// NATS.connect(["nats://127.0.0.1:4222", "nats://127.0.0.1:4223"])
///     .flattenMap { connection in connection.subscribe("logs.>") }
///     .subscribeNext { message in print(message.subject, message.payload.count) }
/// ```
public enum NATS {
    /// Connects to the first reachable of `servers` when subscribed and sends the connection.
    ///
    /// The connect runs on `loop`'s thread (cnats's adapter must attach there). The first
    /// attempt is synchronous inside cnats: on loopback it takes a millisecond, but an
    /// unreachable host may hold the loop for up to ``NATSOptions/connectTimeout`` per
    /// server. Once connected, cnats reconnects by itself (to any server of the list or
    /// discovered from the cluster); ``NATSConnection/events`` reports disconnects and
    /// reconnects on the loop's thread. The subscription owns the connection: disposing it
    /// closes the connection (from any thread). The signal completes when the connection
    /// closes on its own (out of reconnect attempts) and fails with a ``NATSError`` when no
    /// server can be reached (`No server available for connection during connect on
    /// nats://127.0.0.1:1`) or a URL is malformed (checked before anything is attempted).
    ///
    /// - Parameters:
    ///   - servers: URLs `nats://host:port` or `tls://host:port` (the port defaults to 4222).
    ///   - options: timeouts, reconnects, TLS.
    ///   - loop: the loop the connection's IO and events run on (default: the main loop).
    /// - Returns: a cold signal of one connection.
    public static func connect(
        _ servers: [String], options: NATSOptions = NATSOptions(), on loop: EventLoop = .main
    ) -> Signal<NATSConnection> {
        Signal.create { subscriber in
            let target = servers.joined(separator: ",")
            do {
                try validate(servers)
            } catch {
                subscriber.sendError(error)
                return nil
            }
            let state = ConnectState()
            loop.natsPerform {
                guard !subscriber.isDisposed else { return }
                do {
                    let connection = try NATSConnection.open(servers: servers, options: options, loop: loop, target: target) {
                        subscriber.sendCompleted()
                    }
                    state.connection = connection
                    if subscriber.isDisposed {
                        connection.close()
                    } else {
                        subscriber.sendNext(connection)
                    }
                } catch {
                    subscriber.sendError(error)
                }
            }
            return Disposable { loop.natsPerform { state.connection?.close() } }
        }
    }

    /// Checks server URLs before cnats sees them (cnats's own parser accepts much that it
    /// then fails to connect to with a vaguer error): the scheme is `nats://` or `tls://`
    /// (or none), a host is given, and a port is a number in 1...65535.
    ///
    /// - Parameter servers: the URLs.
    /// - Throws: a ``NATSError`` with status `invalidArgument`, the URL as target and why.
    public static func validate(_ servers: [String]) throws {
        if servers.isEmpty {
            throw NATSError(status: .invalidArgument, operation: "connect", target: "", detail: "no server URL given")
        }
        for url in servers {
            func bad(_ why: String) -> NATSError {
                NATSError(status: .invalidArgument, operation: "connect", target: url, detail: why)
            }
            var rest = Substring(url)
            let parts = url.split(separator: "://", maxSplits: 1, omittingEmptySubsequences: false)
            if parts.count == 2 {
                let scheme = parts[0].lowercased()
                guard scheme == "nats" || scheme == "tls" else { throw bad("unsupported scheme \(scheme)://, use nats:// or tls://") }
                rest = parts[1]
            }
            if let at = rest.lastIndex(of: "@") { rest = rest[rest.index(after: at)...] }
            if rest.hasSuffix("/") { rest = rest.dropLast() }
            var host = rest
            if let colon = rest.lastIndex(of: ":"), !rest.hasSuffix("]") {
                let port = rest[rest.index(after: colon)...]
                guard let number = Int(port), (1...65535).contains(number) else { throw bad("bad port \"\(port)\"") }
                host = rest[..<colon]
            }
            if host.isEmpty { throw bad("no host") }
            if host.contains(where: { $0 == " " || $0 == "/" || $0 == "\0" }) { throw bad("bad host \"\(host)\"") }
        }
    }
}

/// The connection made by one subscription to ``NATS/connect(_:options:on:)`` (loop thread).
final class ConnectState: @unchecked Sendable {
    // Thread-safety: loop thread only.
    var connection: NATSConnection?
}

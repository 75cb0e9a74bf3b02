import ArgumentParser
import CSystemd
import Glibc
import Logging
import ReactiveUV
import ReactiveUVHTTP

// Socket activation: systemd (a `.socket` unit, or `systemd-socket-activate`) binds the
// listening sockets and passes them to logcast as descriptors 3, 4, ... with `LISTEN_FDS`,
// `LISTEN_PID` and `LISTEN_FDNAMES`. Each passed socket stands for one listener option, named
// by the unit's `FileDescriptorName=`:
//
//     listen      --listen       a listening TCP socket (IPv4 or IPv6)
//     http        --http         a listening TCP socket
//     syslog-tcp  --syslog-tcp   a listening TCP socket
//     syslog-udp  --syslog-udp   a UDP socket
//
// A passed socket replaces its option's address (the option may then be left out): the
// listener is served on the descriptor through `TCP.listen(descriptor:)` /
// `UDP.open(descriptor:)`, and the socket's own address is what protected mode checks and
// what logcast prints. Every listener logcast starts goes through this file, which also
// counts the ones not listening yet: READY=1 (SystemdNotifier) waits for them.
//
// Not yet: `--listen-unix` and `--tls-cert` with a passed `listen` socket (both refused at
// start with a message saying so).

/// The sockets systemd passed, by the option each stands for, and the listeners started
/// but not listening yet.
final class SystemdSockets: @unchecked Sendable {
    // Thread-safety: main thread only. `shared` is set once in LogcastCommand.run before
    // the loop runs; every listener is started on the main loop.
    nonisolated(unsafe) static var shared = SystemdSockets()

    /// The listener option a passed socket stands for (its `FileDescriptorName=`).
    enum Role: String, CaseIterable {
        case listen
        case http
        case syslogUDP = "syslog-udp"
        case syslogTCP = "syslog-tcp"

        /// Whether the option listens on a stream (TCP) socket; else a datagram (UDP) one.
        var isStream: Bool { self != .syslogUDP }
    }

    /// One passed socket.
    struct Passed {
        let fd: Int32
        /// The address it is bound to.
        let host: String
        let port: Int
    }

    /// Passed sockets not yet taken by their listener.
    private var passed: [Role: Passed] = [:]
    /// Every role a socket was passed for (for the status line and the log).
    private(set) var activated: [Role] = []
    /// Listeners started and not listening yet (by role).
    private(set) var pending: Set<Role> = []
    /// Told each time a listener starts listening (SystemdNotifier checks readiness).
    var onListening: () -> Void = {}

    /// Takes the sockets systemd passed (``receive(tls:)``) into ``shared``; a socket
    /// logcast cannot use is a start-up error.
    ///
    /// - Parameter tls: whether `--tls-cert` is given.
    /// - Returns: the sockets (none when logcast was not socket-activated).
    /// - Throws: `ExitCode.failure` once the error is on standard error.
    static func start(tls: Bool) throws -> SystemdSockets {
        do {
            shared = try receive(tls: tls)
            return shared
        } catch {
            Output.err("logcast: error: \(error)\n")
            throw ExitCode.failure
        }
    }

    /// Starts systemd's notifications (``SystemdNotifier``) when `NOTIFY_SOCKET` is set,
    /// once every listener and source was started.
    ///
    /// - Parameters:
    ///   - server: the daemon.
    ///   - nats: the NATS edge and hub, for the status line.
    ///   - logger: where a failing notification socket is logged.
    /// - Throws: `ExitCode.failure` once the error (an unusable `WATCHDOG_USEC`) is on
    ///   standard error.
    static func notify(server: LogcastServer, nats: NatsRunning, logger: Logger) throws {
        do {
            try SystemdNotifier.start(server: server, nats: nats, sockets: shared, logger: logger)
        } catch {
            Output.err("logcast: error: \(error)\n")
            throw ExitCode.failure
        }
    }

    /// Takes the sockets systemd passed, if any (`sd_listen_fds_with_names`, which also
    /// unsets `LISTEN_*` so nothing logcast starts inherits them), and checks each.
    ///
    /// A socket whose name is not a role is taken for `listen` when it is the only one
    /// passed and a listening TCP socket (a `.socket` unit without `FileDescriptorName=`
    /// names it after the unit); any other is an error.
    ///
    /// - Parameter tls: whether `--tls-cert` is given (a passed `listen` socket is not
    ///   served over TLS yet: refused).
    /// - Returns: the sockets (none when logcast was not socket-activated).
    /// - Throws: ``SystemdSocketError`` saying which descriptor is wrong and why.
    static func receive(tls: Bool) throws -> SystemdSockets {
        let sockets = SystemdSockets()
        var names: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
        let count = sd_listen_fds_with_names(1, &names)
        defer {
            if let names {
                for i in 0..<Int(max(count, 0)) { free(names[i]) }
                free(names)
            }
        }
        if count < 0 { throw SystemdSocketError("LISTEN_FDS is set but unusable: \(String(cString: strerror(-count)))") }
        for i in 0..<Int(count) {
            let fd = SD_LISTEN_FDS_START + Int32(i)
            let name = names?[i].map { String(cString: $0) } ?? "unknown"
            guard let role = Role(rawValue: name) ?? (count == 1 ? .listen : nil) else {
                throw SystemdSocketError("""
                    socket activation: fd \(fd) is named '\(name)'; name each socket with FileDescriptorName= \
                    \(Role.allCases.map(\.rawValue).joined(separator: ", ")) (the option it stands for)
                    """)
            }
            guard sockets.passed[role] == nil else {
                throw SystemdSocketError("socket activation: two sockets are named '\(role.rawValue)' (fd \(sockets.passed[role]!.fd) and fd \(fd))")
            }
            try check(fd, name: name, role: role)
            if role == .listen && tls {
                throw SystemdSocketError("socket activation: a passed 'listen' socket with --tls-cert is not supported yet; let logcast bind --listen itself")
            }
            guard let address = localAddress(fd) else {
                throw SystemdSocketError("socket activation: fd \(fd) ('\(name)'): getsockname: \(String(cString: strerror(errno)))")
            }
            sockets.passed[role] = Passed(fd: fd, host: address.host, port: address.port)
            sockets.activated.append(role)
        }
        return sockets
    }

    /// Throws unless `fd` is the kind of socket `role` needs.
    private static func check(_ fd: Int32, name: String, role: Role) throws {
        let what = "socket activation: fd \(fd) ('\(name)', for --\(role.rawValue))"
        if sd_is_socket_unix(fd, 0, -1, nil, 0) > 0 {
            throw SystemdSocketError("\(what) is a Unix socket; logcast takes TCP and UDP sockets (ListenStream=HOST:PORT, ListenDatagram=HOST:PORT); --listen-unix is not socket-activated yet")
        }
        if role.isStream {
            guard sd_is_socket_inet(fd, AF_UNSPEC, Int32(SOCK_STREAM.rawValue), 1, 0) > 0 else {
                throw SystemdSocketError("\(what) is not a listening TCP socket (ListenStream=HOST:PORT)")
            }
        } else {
            guard sd_is_socket_inet(fd, AF_UNSPEC, Int32(SOCK_DGRAM.rawValue), -1, 0) > 0 else {
                throw SystemdSocketError("\(what) is not a UDP socket (ListenDatagram=HOST:PORT)")
            }
        }
    }

    /// The numeric host and the port `fd` is bound to.
    static func localAddress(_ fd: Int32) -> (host: String, port: Int)? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) == 0 }
        }
        guard named else { return nil }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        switch Int32(storage.ss_family) {
        case AF_INET:
            return withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { sin in
                    var address = sin.pointee.sin_addr
                    inet_ntop(AF_INET, &address, &text, socklen_t(text.count))
                    return (Self.string(text), Int(UInt16(bigEndian: sin.pointee.sin_port)))
                }
            }
        case AF_INET6:
            return withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { sin6 in
                    var address = sin6.pointee.sin6_addr
                    inet_ntop(AF_INET6, &address, &text, socklen_t(text.count))
                    return (Self.string(text), Int(UInt16(bigEndian: sin6.pointee.sin6_port)))
                }
            }
        default:
            return nil
        }
    }

    /// A NUL-terminated C string in an array.
    private static func string(_ chars: [CChar]) -> String {
        String(decoding: chars.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The address of the socket passed for `role`, as the option would give it; `nil`
    /// when none was passed.
    func address(_ role: Role) -> (host: String, port: Int)? {
        passed[role].map { ($0.host, $0.port) }
    }

    /// `options` with `--http` set to the passed `http` socket's address, so an `http`
    /// socket serves HTTP without `--http` and protected mode checks the real address.
    func adopting(_ options: HTTPOptions) -> HTTPOptions {
        guard let http = passed[.http] else { return options }
        var adopted = options
        adopted.http = http.host.contains(":") ? "[\(http.host)]:\(http.port)" : "\(http.host):\(http.port)"
        return adopted
    }

    /// Counts `role` as not listening yet, and wraps `onListening` to count it listening.
    private func starting<Address>(_ role: Role, _ onListening: ((Address) -> Void)?) -> (Address) -> Void {
        pending.insert(role)
        return { [self] address in
            pending.remove(role)
            onListening?(address)
            self.onListening()
        }
    }

    /// TCP clients for `role`: on the passed socket if there is one, else on `host:port`.
    ///
    /// - Parameters:
    ///   - role: the option (`listen`, `http`, `syslog-tcp`).
    ///   - host: the option's host (used without a passed socket).
    ///   - port: the option's port.
    ///   - backlog: the kernel's queue of connections not yet accepted.
    ///   - options: the accepted connections' socket options.
    ///   - onListening: the bound address, once listening.
    /// - Returns: the accepted connections.
    func tcpListen(
        _ role: Role, host: String, port: Int, backlog: Int = 511, options: TCPOptions = TCPOptions(),
        onListening: ((SocketAddress) -> Void)? = nil
    ) -> Signal<TCPConnection> {
        let told: (SocketAddress) -> Void = starting(role, onListening)
        if let socket = passed.removeValue(forKey: role) {
            return TCP.listen(descriptor: socket.fd, backlog: backlog, options: options, onListening: told)
        }
        return TCP.listen(host: host, port: port, backlog: backlog, options: options, onListening: told)
    }

    /// Datagrams for `role` (`syslog-udp`): on the passed socket if there is one, else
    /// bound to `host:port`.
    ///
    /// - Parameters:
    ///   - role: the option.
    ///   - host: the option's host (used without a passed socket).
    ///   - port: the option's port.
    ///   - options: the socket's options.
    ///   - onBound: the socket, once open.
    /// - Returns: the datagrams received.
    func udpBind(
        _ role: Role, host: String, port: Int, options: UDPOptions, onBound: ((UDPSocket) -> Void)? = nil
    ) -> Signal<Datagram> {
        let told: (UDPSocket) -> Void = starting(role, onBound)
        if let socket = passed.removeValue(forKey: role) {
            return UDP.open(descriptor: socket.fd, options: options).flattenMap { opened -> Signal<Datagram> in
                told(opened)
                return opened.datagrams
            }
        }
        return UDP.bind(host: host, port: port, options: options, onBound: told)
    }

    /// HTTP requests (`--http`): on the passed `http` socket if there is one, else on
    /// `host:port`, with the server's default options.
    ///
    /// - Parameters:
    ///   - host: `--http`'s host (used without a passed socket).
    ///   - port: `--http`'s port.
    ///   - onListening: the bound address, once listening.
    /// - Returns: the requests read.
    func http(host: String, port: Int, onListening: ((SocketAddress) -> Void)? = nil) -> Signal<HTTPRequest> {
        guard passed[.http] != nil else {
            return HTTP.listen(host: host, port: port, onListening: starting(.http, onListening))
        }
        let options = HTTPServerOptions()
        return HTTP.serve(
            tcpListen(.http, host: host, port: port, backlog: options.backlog, options: options.tcp, onListening: onListening),
            options: options)
    }
}

/// A passed socket logcast cannot use: said on standard error, then exit 1.
struct SystemdSocketError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

import Logging
import ReactiveUV

// `--syslog-udp` and `--syslog-tcp`: syslog senders (logger, rsyslog, network gear) as
// another source of lines, each tagged with the sender's address: `syslog 10.0.0.7: ...`.
// What is not syslog is counted (STATS) and dropped, never fatal.

/// The syslog counters shown by `STATS` (main loop only).
final class SyslogStats: @unchecked Sendable {
    // Thread-safety: main loop only.
    /// Messages parsed and served.
    var messages = 0
    /// Messages that were not syslog (no PRI, a broken RFC 5424 header, an oversized frame).
    var malformed = 0
    /// Datagrams that carried no message at all (empty, or truncated by the kernel).
    var badDatagrams = 0
    /// TCP senders connected now.
    var tcpSenders = 0
    /// Datagrams the kernel truncated (the UDP socket counts them).
    var truncatedDatagrams: () -> Int = { 0 }

    /// ` syslog_messages=… syslog_malformed=… syslog_bad_datagrams=… syslog_tcp_senders=…`.
    var fields: String {
        " syslog_messages=\(messages) syslog_malformed=\(malformed) syslog_bad_datagrams=\(badDatagrams + truncatedDatagrams()) syslog_tcp_senders=\(tcpSenders)"
    }
}

/// The syslog listeners of one logcast.
final class SyslogSource: @unchecked Sendable {
    // Thread-safety: main loop only.
    let stats = SyslogStats()
    let logger: Logger
    /// Serves one parsed message: (the sender tag prefix, the line).
    let deliver: ([UInt8], String) -> Void
    /// The longest message accepted, in bytes (RFC 5424 §6.1 asks receivers for 2048 at
    /// least; rsyslog's default is 8 KiB; we take what fits in a datagram).
    static let maxMessage = 64 * 1024
    /// Tag prefixes by sender host, so a busy sender does not build its prefix each time.
    private var prefixes: [String: [UInt8]] = [:]

    init(logger: Logger, deliver: @escaping ([UInt8], String) -> Void) {
        self.logger = logger
        self.deliver = deliver
    }

    /// The fan-out prefix for a sender: `syslog 127.0.0.1: `.
    private func prefix(for sender: SocketAddress) -> [UInt8] {
        if let known = prefixes[sender.host] { return known }
        let made = Array("syslog \(sender.host): ".utf8)
        if prefixes.count < 4096 { prefixes[sender.host] = made }
        return made
    }

    /// Parses and serves one message from `sender`.
    func handle(_ bytes: ArraySlice<UInt8>, from sender: SocketAddress) {
        do {
            let message = try SyslogMessage.parse(bytes)
            stats.messages += 1
            deliver(prefix(for: sender), message.line)
        } catch {
            stats.malformed += 1
            logger.debug("syslog from \(sender): \(error); dropped")
        }
    }

    /// Receives datagrams on `host:port`, one message each.
    ///
    /// - Parameters:
    ///   - onBound: the bound address (the real port for 0).
    ///   - failed: binding or receiving failed for good.
    func listenUDP(host: String, port: Int, onBound: @escaping (SocketAddress) -> Void, failed: @escaping (any Error) -> Void) -> Disposable {
        SystemdSockets.shared.udpBind(.syslogUDP, host: host, port: port, options: UDPOptions(receiveBatch: 16), onBound: { [stats] bound in
            stats.truncatedDatagrams = { [weak bound] in bound?.truncatedDatagrams ?? 0 }
            onBound(bound.localAddress)
        })
        .subscribe(
            next: { [self] datagram in
                if datagram.payload.isEmpty || datagram.payload.allSatisfy({ $0 == 0 || $0 == 10 || $0 == 13 }) {
                    stats.badDatagrams += 1
                    return
                }
                handle(datagram.payload[...], from: datagram.sender)
            },
            error: failed)
    }

    /// Accepts TCP senders on `host:port`; each connection's frames are messages (RFC 6587:
    /// octet counting, `LEN SP MSG`, or LF-terminated, told apart by their first byte).
    func listenTCP(host: String, port: Int, onBound: @escaping (SocketAddress) -> Void, failed: @escaping (any Error) -> Void) -> Disposable {
        SystemdSockets.shared.tcpListen(.syslogTCP, host: host, port: port, onListening: onBound)
            .flattenMap { [self] connection -> Signal<Void> in
                guard let sender = connection.remoteAddress else { return .empty() }
                stats.tcpSenders += 1
                let framer = SyslogFramer(maxMessage: SyslogSource.maxMessage)
                return connection.reads
                    .map { [self] chunk -> Void in
                        framer.append(chunk,
                            message: { handle($0, from: sender) },
                            malformed: { [self] reason in
                                stats.malformed += 1
                                logger.debug("syslog from \(sender): \(reason)")
                            })
                        if framer.broken { connection.close() }
                    }
                    .ignoreValues()
                    .then { [self] () -> Signal<Void> in
                        framer.finish { handle($0, from: sender) }
                        return .empty()
                    }
                    .catch { [self] error in
                        logger.debug("syslog sender \(sender): \(error)")
                        return .empty()
                    }
                    .doCompleted { [self] in stats.tcpSenders -= 1 }
            }
            .subscribe(error: failed)
    }
}

extension LogcastServer {
    /// Starts the syslog listeners asked for; their lines go into the fan-out tagged with
    /// the sender. Each listener counts as a live source (logcast keeps running while one
    /// listens, even with every FILE gone); one that cannot bind is fatal at start, like
    /// --listen.
    ///
    /// - Parameters:
    ///   - udp: `--syslog-udp` HOST:PORT, if given.
    ///   - tcp: `--syslog-tcp` HOST:PORT, if given.
    ///   - onBound: told "udp"/"tcp" and the bound address (the real port for 0).
    func startSyslog(
        udp: (host: String, port: Int)?, tcp: (host: String, port: Int)?,
        onBound: @escaping (String, SocketAddress) -> Void
    ) {
        guard udp != nil || tcp != nil else { return }
        let fanOut = self.fanOut
        let source = SyslogSource(logger: logger) { prefix, line in fanOut.ingest(prefix: prefix, line: line.utf8) }
        syslog = source
        if let udp {
            liveSources += 1
            running += source.listenUDP(
                host: udp.host, port: udp.port, onBound: { onBound("udp", $0) },
                failed: { [weak self] error in self?.fail("cannot receive syslog on udp \(udp.host):\(udp.port): \(error)") })
        }
        if let tcp {
            liveSources += 1
            running += source.listenTCP(
                host: tcp.host, port: tcp.port, onBound: { onBound("tcp", $0) },
                failed: { [weak self] error in self?.fail("cannot receive syslog on tcp \(tcp.host):\(tcp.port): \(error)") })
        }
    }
}

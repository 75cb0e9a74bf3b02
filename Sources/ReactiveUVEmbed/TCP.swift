import CLibUV
import CReactiveUVEmbed
import ReactiveUV

// TCP from C: servers and clients are subscriptions whose values are connections; a
// connection's reads and lines are ordinary byte-string signals, and writing is either
// fire-and-forget (`ruv_connection_write`) or a subscription (`ruv_connection_send`).

/// The object behind `ruv_connection_t`: a handle on one TCP connection.
///
/// The handle does not own the socket: the listen or connect subscription that delivered
/// the connection does (closing it when disposed). Thread-safety: `TCPConnection` is usable
/// from any thread.
final class ConnectionHandle {
    let connection: TCPConnection

    init(_ connection: TCPConnection) { self.connection = connection }
}

/// The subscriber behind `ruv_tcp_listen` and `ruv_tcp_connect`: hands each connection to
/// C as a new `ruv_connection_t` reference.
final class ConnectionSubscriber: CSubscription, SubscriberProtocol, @unchecked Sendable {
    typealias Value = TCPConnection

    let onConnection: ruv_connection_cb
    let onError: ruv_error_cb?
    let onCompleted: ruv_completed_cb?

    init(connection: @escaping ruv_connection_cb, error: ruv_error_cb?, completed: ruv_completed_cb?, ctx: UnsafeMutableRawPointer?) {
        onConnection = connection
        onError = error
        onCompleted = completed
        super.init(ctx: ctx)
    }

    func sendNext(_ value: TCPConnection) {
        let ctx = context.ctx
        let callback = onConnection
        deliver(terminal: false) { callback(retainedHandle(ConnectionHandle(value)), ctx) }
    }

    func sendError(_ error: any Error) { deliverError(error, onError) }

    func sendCompleted() { deliverCompleted(onCompleted) }

    func didSubscribe(with disposable: Disposable) { attachLifetime(disposable) }
}

/// The port argument, checked: `0...65535` (0 only where `allowZero`).
private func validPort(_ port: Int32, allowZero: Bool) -> Int? {
    guard port >= (allowZero ? 0 : 1), port <= 65535 else { return nil }
    return Int(port)
}

/// `ruv_tcp_listen`: a server, as a subscription whose values are accepted connections.
@c @implementation
public func ruv_tcp_listen(
    _ runtime: OpaquePointer?, _ host: UnsafePointer<CChar>?, _ port: Int32, _ onListening: ruv_listening_cb?,
    _ onConnection: ruv_connection_cb?, _ onError: ruv_error_cb?, _ ctx: UnsafeMutableRawPointer?,
    _ out: UnsafeMutablePointer<OpaquePointer?>?
) -> Int32 {
    defer { HostWakeups.afterCall() }  // a host watching only the backend fd hears of new work
    guard let rt = borrowed(runtime, as: RuntimeHandle.self), let host = string(host), let onConnection,
        let port = validPort(port, allowZero: true)
    else { return einval }
    let context = CContext(ctx: ctx)
    let server = TCP.listen(host: host, port: port, on: rt.loop, onListening: { address in
        guard let onListening else { return }
        address.host.withCString { onListening($0, Int32(address.port), context.ctx) }
    })
    let subscriber = ConnectionSubscriber(connection: onConnection, error: onError, completed: nil, ctx: ctx)
    out?.pointee = retainedHandle(subscriber)
    server.subscribe(subscriber)
    return 0
}

/// `ruv_tcp_connect`: a client, as a subscription whose one value is the connection.
@c @implementation
public func ruv_tcp_connect(
    _ runtime: OpaquePointer?, _ host: UnsafePointer<CChar>?, _ port: Int32, _ onConnected: ruv_connection_cb?,
    _ onError: ruv_error_cb?, _ onClosed: ruv_completed_cb?, _ ctx: UnsafeMutableRawPointer?,
    _ out: UnsafeMutablePointer<OpaquePointer?>?
) -> Int32 {
    defer { HostWakeups.afterCall() }  // a host watching only the backend fd hears of new work
    guard let rt = borrowed(runtime, as: RuntimeHandle.self), let host = string(host), let onConnected,
        let port = validPort(port, allowZero: false)
    else { return einval }
    let subscriber = ConnectionSubscriber(connection: onConnected, error: onError, completed: onClosed, ctx: ctx)
    out?.pointee = retainedHandle(subscriber)
    TCP.connect(host: host, port: port, on: rt.loop).subscribe(subscriber)
    return 0
}

/// `ruv_connection_reads`: the peer's bytes, chunk by chunk.
@c @implementation
public func ruv_connection_reads(_ connection: OpaquePointer?, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    guard let handle = borrowed(connection, as: ConnectionHandle.self) else { return einval }
    return output(handle.connection.reads, out)
}

/// `ruv_connection_lines`: the peer's lines.
@c @implementation
public func ruv_connection_lines(_ connection: OpaquePointer?, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    guard let handle = borrowed(connection, as: ConnectionHandle.self) else { return einval }
    return output(handle.connection.lines.map { Bytes($0.utf8) }, out)
}

/// `ruv_connection_write`: queues a copy of the bytes (fire and forget).
@c @implementation
public func ruv_connection_write(_ connection: OpaquePointer?, _ bytes: UnsafeRawPointer?, _ len: Int) -> Int32 {
    defer { HostWakeups.afterCall() }  // a host watching only the backend fd hears of new work
    guard let handle = borrowed(connection, as: ConnectionHandle.self), let value = copyBytes(bytes, len) else {
        return einval
    }
    if handle.connection.isClosed { return RUV_ECLOSED }
    handle.connection.write(value).subscribe()
    return 0
}

/// `ruv_connection_send`: writes every value of a signal, then optionally shuts down.
@c @implementation
public func ruv_connection_send(
    _ connection: OpaquePointer?, _ source: OpaquePointer?, _ shutdownWhenDone: Int32, _ onError: ruv_error_cb?,
    _ onDone: ruv_completed_cb?, _ ctx: UnsafeMutableRawPointer?, _ out: UnsafeMutablePointer<OpaquePointer?>?
) -> Int32 {
    defer { HostWakeups.afterCall() }  // a host watching only the backend fd hears of new work
    guard let handle = borrowed(connection, as: ConnectionHandle.self), let signal = borrowed(source, as: SignalHandle.self)
    else { return einval }
    let connection = handle.connection
    var sending = connection.send(signal.signal)
    if shutdownWhenDone != 0 { sending = sending.then { connection.shutdown() } }
    let subscriber = CSubscriber(next: nil, error: onError, completed: onDone, ctx: ctx)
    return subscribe(sending.compactMap { _ -> Bytes? in nil }, subscriber, out)
}

/// `ruv_connection_close`: closes the connection now.
@c @implementation
public func ruv_connection_close(_ connection: OpaquePointer?) -> Int32 {
    defer { HostWakeups.afterCall() }  // a host watching only the backend fd hears of new work
    guard let handle = borrowed(connection, as: ConnectionHandle.self) else { return einval }
    handle.connection.close()
    return 0
}

/// `ruv_connection_peer`: the peer's "host:port", snprintf-style.
@c @implementation
public func ruv_connection_peer(_ connection: OpaquePointer?, _ buffer: UnsafeMutablePointer<CChar>?, _ size: Int) -> Int32 {
    guard let handle = borrowed(connection, as: ConnectionHandle.self), size == 0 || buffer != nil else { return einval }
    guard let peer = handle.connection.remoteAddress?.description else { return UV_ENOTCONN.rawValue }
    let bytes = Array(peer.utf8)
    if let buffer, size > 0 {
        let n = min(bytes.count, size - 1)
        for i in 0..<n { buffer[i] = CChar(bitPattern: bytes[i]) }
        buffer[n] = 0
    }
    return Int32(clamping: bytes.count)
}

/// `ruv_connection_release`: gives back C's reference; the socket stays open.
@c @implementation
public func ruv_connection_release(_ connection: OpaquePointer?) {
    defer { HostWakeups.afterCall() }  // a host watching only the backend fd hears of new work
    releaseHandle(connection, as: ConnectionHandle.self)
}

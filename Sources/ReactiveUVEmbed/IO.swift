import CLibUV
import CReactiveUVEmbed
import ReactiveUV

// PLACEHOLDER until File, TCP and UnixSignal are merged from io-files/io-streams: every
// IO constructor returns UV_ENOSYS.

/// The object behind `ruv_connection_t`.
final class ConnectionHandle {}

private var enosys: Int32 { UV_ENOSYS.rawValue }

@c @implementation
public func ruv_file_tail(_ runtime: OpaquePointer?, _ path: UnsafePointer<CChar>?, _ startLines: Int, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 { enosys }
@c @implementation
public func ruv_file_lines(_ runtime: OpaquePointer?, _ path: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 { enosys }
@c @implementation
public func ruv_file_read(_ runtime: OpaquePointer?, _ path: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 { enosys }
@c @implementation
public func ruv_unix_signal_watch(_ runtime: OpaquePointer?, _ signum: Int32, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 { enosys }
@c @implementation
public func ruv_tcp_listen(_ runtime: OpaquePointer?, _ host: UnsafePointer<CChar>?, _ port: Int32, _ onListening: ruv_listening_cb?, _ onConnection: ruv_connection_cb?, _ onError: ruv_error_cb?, _ ctx: UnsafeMutableRawPointer?, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 { enosys }
@c @implementation
public func ruv_tcp_connect(_ runtime: OpaquePointer?, _ host: UnsafePointer<CChar>?, _ port: Int32, _ onConnected: ruv_connection_cb?, _ onError: ruv_error_cb?, _ onClosed: ruv_completed_cb?, _ ctx: UnsafeMutableRawPointer?, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 { enosys }
@c @implementation
public func ruv_connection_reads(_ connection: OpaquePointer?, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 { enosys }
@c @implementation
public func ruv_connection_lines(_ connection: OpaquePointer?, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 { enosys }
@c @implementation
public func ruv_connection_write(_ connection: OpaquePointer?, _ bytes: UnsafeRawPointer?, _ len: Int) -> Int32 { enosys }
@c @implementation
public func ruv_connection_send(_ connection: OpaquePointer?, _ source: OpaquePointer?, _ shutdownWhenDone: Int32, _ onError: ruv_error_cb?, _ onDone: ruv_completed_cb?, _ ctx: UnsafeMutableRawPointer?, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 { enosys }
@c @implementation
public func ruv_connection_close(_ connection: OpaquePointer?) -> Int32 { enosys }
@c @implementation
public func ruv_connection_peer(_ connection: OpaquePointer?, _ buffer: UnsafeMutablePointer<CChar>?, _ size: Int) -> Int32 { enosys }
@c @implementation
public func ruv_connection_release(_ connection: OpaquePointer?) { releaseHandle(connection, as: ConnectionHandle.self) }

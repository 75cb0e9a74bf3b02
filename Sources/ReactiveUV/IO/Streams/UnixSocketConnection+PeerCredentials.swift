import CLibUV
import Glibc

/// Who is at the other end of a Unix socket connection, as the kernel saw it when the
/// peer connected (`SO_PEERCRED`): not something the peer says, so a server may base
/// access on it (the socket file's mode decides who may connect at all).
public struct UnixPeerCredentials: Sendable, Equatable {
    /// The peer's process id at connect time.
    public let pid: Int32
    /// The peer's effective user id.
    public let uid: UInt32
    /// The peer's effective group id.
    public let gid: UInt32
}

extension UnixSocketConnection {
    /// The peer's credentials (`getsockopt(SO_PEERCRED)` on the connection's descriptor),
    /// or `nil` once the connection is closed or when the kernel does not say.
    ///
    /// Why here: the descriptor is libuv's, and only this module may ask libuv for it.
    /// Read it on the connection's loop thread (where an accepted connection is first
    /// seen), as the handle may be closed from there at any moment.
    public var peerCredentials: UnixPeerCredentials? {
        guard !isClosed else { return nil }
        var fd: uv_os_fd_t = -1
        guard uv_fileno(stream.handle.assumingMemoryBound(to: uv_handle_t.self), &fd) == 0, fd >= 0 else { return nil }
        // `struct ucred` (pid_t, uid_t, gid_t: three 32-bit fields); Glibc's module hides
        // it behind _GNU_SOURCE, so it is read as what it is.
        var credentials: (Int32, UInt32, UInt32) = (0, 0, 0)
        var length = socklen_t(MemoryLayout<(Int32, UInt32, UInt32)>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0, length == 12 else { return nil }
        return UnixPeerCredentials(pid: credentials.0, uid: credentials.1, gid: credentials.2)
    }
}

import Glibc
import Logging
import ReactiveUV

// `--listen-unix PATH`: clients are also served on a Unix socket, whose file mode and owner
// decide who may connect at all, and whose peers are identified by the uid the kernel
// gives (SO_PEERCRED), not by anything they say.

extension LogcastServer {
    /// Listens on the Unix socket `path`, made with `mode` (and `owner`), and serves each
    /// peer as `uid:<n>`.
    ///
    /// The socket is created under a umask that leaves only the owner's bits, then given
    /// `mode` and `owner` before any connection is accepted: no moment exists in which
    /// the file is open to more users than the operator asked for.
    ///
    /// - Parameters:
    ///   - path: the socket file (an existing socket nobody listens on is replaced).
    ///   - mode: its permission bits.
    ///   - owner: its owner and group, if they should be changed.
    ///   - onListening: told the path once listening.
    func listenUnix(path: String, mode: mode_t, owner: (uid: uid_t, gid: gid_t?)?, onListening: @escaping (String) -> Void) {
        Self.removeStaleSocket(path)
        let previous = umask(0o177)
        unixListening = UnixSocket.listen(path: path, backlog: 4096) { [weak self] bound in
            umask(previous)
            guard let self else { return }
            if chmod(bound, mode) != 0 {
                self.fail("--listen-unix \(bound): chmod: \(String(cString: strerror(errno)))")
            }
            if let owner, chown(bound, owner.uid, owner.gid ?? gid_t.max) != 0 {
                self.fail("--listen-unix \(bound): chown: \(String(cString: strerror(errno)))")
            }
            onListening(bound)
        }
        .subscribe(
            next: { [weak self] connection in
                guard let credentials = connection.peerCredentials else {
                    connection.close()
                    return
                }
                self?.accept(connection, identity: ("uid:\(credentials.uid)", "Unix socket peer, pid \(credentials.pid)"))
            },
            error: { [weak self] error in
                umask(previous)
                self?.fail("cannot listen on --listen-unix \(path): \(error)")
            })
    }

    /// Removes `path` if it is a socket no process listens on (left by a logcast that was
    /// killed); anything else there is left for `bind` to refuse.
    static func removeStaleSocket(_ path: String) {
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFSOCK else { return }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
        }
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        if rc != 0 && errno == ECONNREFUSED { unlink(path) }
    }
}

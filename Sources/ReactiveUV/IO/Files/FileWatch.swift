import CLibUV

/// One change reported by ``File/watch(_:on:)``: libuv's `uv_fs_event` callback.
public struct FileChange: Sendable, Equatable, Hashable, CustomStringConvertible {
    /// What happened, as libuv reports it (inotify's many kinds folded into two).
    public struct Kind: OptionSet, Sendable, Hashable {
        /// libuv's `uv_fs_event` bits (`UV_RENAME`, `UV_CHANGE`).
        public let rawValue: Int32

        /// Creates a set of kinds from libuv's bits.
        ///
        /// - Parameter rawValue: `UV_RENAME`, `UV_CHANGE`, or both.
        public init(rawValue: Int32) { self.rawValue = rawValue }

        /// A name appeared, disappeared or moved (create, delete, rename; `UV_RENAME`).
        public static let rename = Kind(rawValue: Int32(UV_RENAME.rawValue))
        /// Contents or attributes changed (write, truncate, chmod; `UV_CHANGE`).
        public static let change = Kind(rawValue: Int32(UV_CHANGE.rawValue))
    }

    /// What happened.
    public let kind: Kind
    /// The name concerned: for a watched directory, the entry's name inside it; for a
    /// watched file, the file's own name. `nil` when libuv gives none.
    public let filename: String?
    /// The watched path, as given to ``File/watch(_:on:)``.
    public let path: String

    /// Creates a change (for tests and for merging watches by hand).
    ///
    /// - Parameters:
    ///   - kind: what happened.
    ///   - filename: the name concerned, if known.
    ///   - path: the watched path.
    public init(kind: Kind, filename: String?, path: String) {
        self.kind = kind
        self.filename = filename
        self.path = path
    }

    /// `rename+change app.log in /var/log`.
    public var description: String {
        var kinds: [String] = []
        if kind.contains(.rename) { kinds.append("rename") }
        if kind.contains(.change) { kinds.append("change") }
        return "\(kinds.joined(separator: "+")) \(filename ?? "?") in \(path)"
    }
}

extension File {
    /// Changes to a file or directory, from libuv's `uv_fs_event` (inotify on Linux).
    ///
    /// Watching a **file** reports writes (`change`) and its rename or removal (`rename`);
    /// inotify follows the file, not the name, so after a rename the watch keeps reporting
    /// the renamed file. Watching a **directory** reports changes to its entries, with
    /// their names: files created, removed or renamed (`rename`) and written (`change`).
    /// inotify does not see into subdirectories, and misses changes on some file systems
    /// (network ones); ``tail(_:from:pollInterval:rotationQuietPeriod:maxLineLength:on:)``
    /// polls as well for that reason.
    ///
    /// - Parameters:
    ///   - path: the file or directory to watch; it must exist.
    ///   - loop: the loop to run on (see ``File``).
    /// - Returns: a cold signal of changes. Events arrive on the loop's thread. It never
    ///   completes; it fails with a ``UVError`` when the watch cannot start (`ENOENT` during
    ///   watch on a missing path, `ENOSPC` when inotify's watch limit is reached) or breaks.
    ///   Disposal stops the watch and closes the handle (from any thread).
    public static func watch(_ path: String, on loop: EventLoop? = nil) -> Signal<FileChange> {
        if containsNUL(path) {
            return .error(UVError(code: UV_EINVAL.rawValue, operation: "File.watch: a path with a NUL byte", target: path))
        }
        return AnonymousSignal { observer, lifetime in
            EventLoop.startWatcher(
                on: loop, operation: "File.watch", target: path, observer: observer, lifetime: lifetime
            ) { loop, send, fail in FileWatcher(loop: loop, path: path, send: send, fail: fail) }
        }
    }
}

/// One subscription of ``File/watch(_:on:)``: a `uv_fs_event_t` owned by a ``UVHandle``,
/// which keeps this object alive until the handle's close callback.
///
/// Thread-safety: loop-thread confined.
final class FileWatcher: LoopSourceWatcher, @unchecked Sendable {
    let loop: EventLoop
    let path: String
    let send: (FileChange) -> Void
    let fail: (any Error) -> Void
    private var handle: UVHandle<uv_fs_event_t>?
    private var stopped = false

    init(loop: EventLoop, path: String, send: @escaping (FileChange) -> Void, fail: @escaping (any Error) -> Void) {
        self.loop = loop
        self.path = path
        self.send = send
        self.fail = fail
    }

    func start() {
        if stopped { return }
        do {
            let h = try UVHandle<uv_fs_event_t>(loop: loop, type: UV_FS_EVENT, operation: "uv_fs_event_init", target: path) {
                uv_fs_event_init(loop.uvLoop, $0)
            }
            h.owner = self
            handle = h
            try path.withCString { p in
                try h.started(uv_fs_event_start(h.pointer, { h, filename, events, status in
                    guard let h else { return }
                    UVHandleCore.owner(of: h, as: FileWatcher.self)
                        .fired(filename: filename.map { String(cString: $0) }, events: events, status: status)
                }, p, 0), "watch")
            }
        } catch {
            stop()
            fail(error)
        }
    }

    private func fired(filename: String?, events: Int32, status: Int32) {
        if stopped { return }
        if status < 0 {
            let error = UVError(code: status, operation: "watch", target: path)
            stop()
            return fail(error)
        }
        send(FileChange(kind: FileChange.Kind(rawValue: events), filename: filename, path: path))
    }

    /// Stops and closes the handle (loop thread; re-entrant from the callback).
    func stop() {
        if stopped { return }
        stopped = true
        handle?.close()
        handle = nil
    }
}

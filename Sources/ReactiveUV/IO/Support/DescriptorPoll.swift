import CLibUV
import Glibc

// Readiness of a descriptor someone else owns, with uv_poll_t: how C client libraries
// (cnats, libpq, c-ares, libcurl's multi interface) plug into an event loop. They keep
// their socket and do their own reads and writes; the loop only says when to.

/// What a descriptor is ready for (`UV_READABLE`, `UV_WRITABLE`, ...).
public struct PollEvents: OptionSet, Sendable, Hashable, CustomStringConvertible {
    /// The raw `uv_poll_event` bits.
    public let rawValue: Int32

    /// Creates a set from `uv_poll_event` bits.
    ///
    /// - Parameter rawValue: `UV_READABLE | UV_WRITABLE | ...`.
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// Data can be read (or a listening socket has a connection, or the peer closed).
    public static let readable = PollEvents(rawValue: Int32(UV_READABLE.rawValue))
    /// Data can be written without blocking.
    public static let writable = PollEvents(rawValue: Int32(UV_WRITABLE.rawValue))
    /// The peer hung up its side (`EPOLLRDHUP`); reported only when asked for.
    public static let disconnect = PollEvents(rawValue: Int32(UV_DISCONNECT.rawValue))
    /// Urgent (out-of-band) data is ready (`EPOLLPRI`).
    public static let prioritized = PollEvents(rawValue: Int32(UV_PRIORITIZED.rawValue))

    /// `[readable, writable]`.
    public var description: String {
        var names: [String] = []
        if contains(.readable) { names.append("readable") }
        if contains(.writable) { names.append("writable") }
        if contains(.disconnect) { names.append("disconnect") }
        if contains(.prioritized) { names.append("prioritized") }
        return "[" + names.joined(separator: ", ") + "]"
    }
}

/// A descriptor owned by other code, watched for readiness.
public enum Descriptor {
    /// The readiness of `fd` for `events`, each time the loop sees it (`uv_poll_t`).
    ///
    /// The descriptor stays its owner's: we never read, write or close it. Polling is
    /// level-triggered: while the descriptor stays ready (unread data), a value is sent on
    /// every loop iteration, so the owner must do its IO (or dispose) in response.
    /// Subscribing starts the watch (`uv_poll_init`, `uv_poll_start`) on the loop's thread;
    /// disposing stops it and closes the watcher (never the descriptor). Close the
    /// descriptor only after disposing: epoll forgets a closed descriptor silently.
    ///
    /// It never completes. It fails with a ``UVError``: `EBADF` for a descriptor that is
    /// not open; `EPERM` for one epoll cannot watch (a regular file); `EEXIST` when the
    /// same descriptor is already watched on this loop; `EINVAL` for an empty event set;
    /// or the error a poll reports later (the descriptor was closed under us: `EBADF`).
    ///
    /// ```swift
    /// Descriptor.readiness(natsSocket, events: [.readable])
    ///     .subscribeNext { _ in natsProcessInput() }
    /// ```
    ///
    /// - Parameters:
    ///   - fd: the descriptor (a socket or pipe; sockets on Linux via `uv_poll_init_socket`
    ///     work the same).
    ///   - events: what to wait for.
    ///   - loop: the loop to watch on: by default the subscribing thread's loop, else
    ///     ``EventLoop/main``.
    /// - Returns: a cold signal of the ready events. Events arrive on the loop's thread.
    public static func readiness(_ fd: Int32, events: PollEvents = .readable, on loop: EventLoop? = nil) -> Signal<PollEvents> {
        let target = "fd \(fd)"
        if events.isEmpty {
            return .error(UVError(code: UV_EINVAL.rawValue, operation: "poll (no events asked for)", target: target))
        }
        return AnonymousSignal { observer, lifetime in
            EventLoop.startWatcher(
                on: loop, operation: "poll", target: target, observer: observer, lifetime: lifetime
            ) { loop, send, fail in
                DescriptorWatcher(loop: loop, fd: fd, events: events, target: target, send: send, fail: fail)
            }
        }
    }
}

/// One `Descriptor.readiness` subscription: a `uv_poll_t` (loop thread).
final class DescriptorWatcher: LoopSourceWatcher, @unchecked Sendable {
    // Thread-safety: started and stopped on the loop's thread (startWatcher's contract).
    let loop: EventLoop
    let fd: Int32
    let events: PollEvents
    let target: String
    let send: (PollEvents) -> Void
    let fail: (any Error) -> Void
    private var handle: UVHandle<uv_poll_t>?
    private var stopped = false

    init(loop: EventLoop, fd: Int32, events: PollEvents, target: String,
         send: @escaping (PollEvents) -> Void, fail: @escaping (any Error) -> Void) {
        self.loop = loop
        self.fd = fd
        self.events = events
        self.target = target
        self.send = send
        self.fail = fail
    }

    func start() {
        if stopped { return }
        do {
            // uv_poll_init checks the descriptor (fcntl) and registers it with epoll lazily.
            let handle = try UVHandle<uv_poll_t>(loop: loop, type: UV_POLL, operation: "poll", target: target) {
                uv_poll_init(loop.uvLoop, $0, fd)
            }
            handle.owner = self
            self.handle = handle
            try handle.started(uv_poll_start(handle.pointer, events.rawValue, { poll, status, ready in
                guard let poll else { return }
                UVHandle<uv_poll_t>.owner(of: poll, as: DescriptorWatcher.self).polled(status, ready)
            }), "poll")
        } catch {
            stop()
            fail(error)
        }
    }

    private func polled(_ status: Int32, _ ready: Int32) {
        if stopped { return }
        if status < 0 {
            let error = UVError(code: status, operation: "poll", target: target)
            stop()
            fail(error)
            return
        }
        send(PollEvents(rawValue: ready))
    }

    func stop() {
        if stopped { return }
        stopped = true
        handle?.close()
        handle = nil
    }
}

import CLibUV
import Glibc
import CReactiveUVEmbed
import ReactiveUV

/// The object behind `ruv_runtime_t`: an ``EventLoop`` on a host's `uv_loop_t` or on a
/// loop of its own, plus what driving it from a foreign poll loop needs.
///
/// Thread-safety: `loop` is thread-safe where `EventLoop` is (`isClosed`, `execute`,
/// `scheduler`); `driving` is touched only on the loop's thread.
final class RuntimeHandle: @unchecked Sendable {
    /// The loop everything of this runtime runs on.
    let loop: EventLoop
    /// Whether the `uv_loop_t` is the host's (created with a non-NULL loop).
    let onHostLoop: Bool
    /// Set while `ruv_runtime_run_once` runs the loop, so a nested call is refused.
    var driving = false

    init(loop: EventLoop, onHostLoop: Bool) {
        self.loop = loop
        self.onHostLoop = onHostLoop
    }

    /// The scheduler for this runtime's timers and deliveries.
    var scheduler: Scheduler { loop.scheduler }

    /// Whether a descriptor may be waiting to enter libuv's epoll set.
    ///
    /// libuv registers a descriptor lazily, in the poll phase of the next `uv_run`
    /// iteration. A foreign poll loop waiting on the backend descriptor before that would
    /// never hear from it, so ``backendTimeout()`` says "run now" while the handle layer
    /// reports that it started a watcher since the loop last ran
    /// (`EventLoop.startedWatcherSinceRun`: public libuv API only, no private field).
    var hasUnwatchedHandles: Bool { loop.startedWatcherSinceRun }

    /// `ruv_runtime_backend_timeout` (loop thread, checked by the caller).
    func backendTimeout() -> Int32 {
        let uvLoop = loop.uvLoop
        if hasUnwatchedHandles { return 0 }
        // libuv measures the timeout from its cached "now", which is as old as the last
        // iteration; refresh it so a host that did other work meanwhile does not oversleep.
        uv_update_time(uvLoop)
        let timeout = uv_backend_timeout(uvLoop)
        // With nothing alive libuv answers 0 ("uv_run would return at once"); for a poll
        // loop that means: nothing to do until the descriptor says so.
        if timeout == 0 && uv_loop_alive(uvLoop) == 0 { return -1 }
        return timeout
    }

    /// `ruv_runtime_run_once` (loop thread, checked by the caller).
    func runOnce() -> Int32 {
        driving = true
        let alive = loop.runNoWaitRegisteringWatchers()
        driving = false
        // Work its callbacks created that needs another iteration (a watcher started after
        // the poll phase, a handle closing): the descriptor says so too.
        wakeIfWorkIsDue()
        return alive ? 1 : 0
    }

    /// Makes the backend descriptor readable when there is work to do now
    /// (``backendTimeout()`` is 0) that no descriptor would announce: a watcher libuv has
    /// not registered yet, a close callback, a timer already due. The wake-up is an empty
    /// task through ``EventLoop/execute(_:)``, whose `uv_async_send` writes to the
    /// eventfd libuv keeps in its epoll set (registered by the first iteration, which
    /// ``ruv_runtime_create`` runs). A host that only watches the descriptor (libevent's
    /// `event_base`, which has no hook before it sleeps) then always hears of the work a
    /// `ruv_*` call made outside ``ruv_runtime_run_once`` created.
    func wakeIfWorkIsDue() {
        if onHostLoop || driving || loop.isClosed || !loop.isCurrentThread { return }
        if backendTimeout() == 0 { loop.execute {} }
    }

    /// `ruv_runtime_close` (loop thread, checked by the caller).
    func close() -> Int32 {
        if driving { return UV_EBUSY.rawValue }
        do {
            try loop.close()
            return 0
        } catch let error as UVError {
            return error.code
        } catch {
            return RUV_EUNKNOWN
        }
    }
}

/// `ruv_runtime_create`: a runtime on the host's loop, or on a loop of its own for NULL.
@c @implementation
public func ruv_runtime_create(
    _ loop: UnsafeMutablePointer<uv_loop_t>?, _ out: UnsafeMutablePointer<OpaquePointer?>?
) -> Int32 {
    guard let out else { return einval }
    do {
        let eventLoop = try loop.map { try EventLoop(adopting: $0) } ?? EventLoop()
        let runtime = RuntimeHandle(loop: eventLoop, onHostLoop: loop != nil)
        if loop == nil {
            // One iteration now registers the loop's wake-up eventfd in the epoll set, so
            // that ``RuntimeHandle/wakeIfWorkIsDue()`` can make the backend fd readable
            // before the host ever called ruv_runtime_run_once.
            _ = runtime.runOnce()
            HostWakeups.register(runtime)
        }
        out.pointee = retainedHandle(runtime)
        return 0
    } catch let error as UVError {
        return error.code
    } catch {
        return RUV_EUNKNOWN
    }
}

/// `ruv_runtime_loop`: the runtime's `uv_loop_t`.
@c @implementation
public func ruv_runtime_loop(_ runtime: OpaquePointer?) -> UnsafeMutablePointer<uv_loop_t>? {
    borrowed(runtime, as: RuntimeHandle.self)?.loop.uvLoop
}

/// `ruv_runtime_backend_fd`: the descriptor a foreign poll loop waits on.
@c @implementation
public func ruv_runtime_backend_fd(_ runtime: OpaquePointer?) -> Int32 {
    guard let rt = borrowed(runtime, as: RuntimeHandle.self) else { return einval }
    if rt.loop.isClosed { return RUV_ECLOSED }
    return uv_backend_fd(rt.loop.uvLoop)
}

/// `ruv_runtime_backend_timeout`: how long a foreign poll loop may wait, in milliseconds.
@c @implementation
public func ruv_runtime_backend_timeout(_ runtime: OpaquePointer?) -> Int32 {
    guard let rt = borrowed(runtime, as: RuntimeHandle.self) else { return einval }
    guard rt.loop.isCurrentThread else { return RUV_EWRONGTHREAD }
    if rt.loop.isClosed { return RUV_ECLOSED }
    return rt.backendTimeout()
}

/// `ruv_runtime_run_once`: one non-blocking iteration of the runtime's own loop.
@c @implementation
public func ruv_runtime_run_once(_ runtime: OpaquePointer?) -> Int32 {
    guard let rt = borrowed(runtime, as: RuntimeHandle.self) else { return einval }
    guard rt.loop.isCurrentThread else { return RUV_EWRONGTHREAD }
    if rt.onHostLoop { return RUV_EHOSTLOOP }
    if rt.loop.isClosed { return RUV_ECLOSED }
    if rt.driving { return UV_EBUSY.rawValue }
    return rt.runOnce()
}

/// `ruv_runtime_close`: closes everything the runtime started on its loop.
@c @implementation
public func ruv_runtime_close(_ runtime: OpaquePointer?) -> Int32 {
    guard let rt = borrowed(runtime, as: RuntimeHandle.self) else { return einval }
    guard rt.loop.isCurrentThread else { return RUV_EWRONGTHREAD }
    if rt.loop.isClosed { return 0 }
    return rt.close()
}

/// `ruv_runtime_release`: gives back C's reference, closing an unclosed runtime when it can.
@c @implementation
public func ruv_runtime_release(_ runtime: OpaquePointer?) {
    guard let rt = borrowed(runtime, as: RuntimeHandle.self) else { return }
    if rt.loop.isCurrentThread && !rt.loop.isClosed && !rt.driving { _ = rt.close() }
    releaseHandle(runtime, as: RuntimeHandle.self)
}

/// The runtimes on loops of their own, for ``afterCall()``: after a `ruv_*` call that may
/// create work (subscribe, dispose, send, write, close, release), each runtime bound to the
/// calling thread and not inside ``ruv_runtime_run_once`` wakes its backend descriptor if
/// work is due (``RuntimeHandle/wakeIfWorkIsDue()``). A call cannot know which runtime its
/// work landed on (a signal may combine several), so every runtime of the thread is asked:
/// one `uv_backend_timeout` each, and a wake-up only when there is work.
///
/// Thread-safety: `mutex` guards `runtimes` (weak: a released runtime drops out).
enum HostWakeups {
    private final class Entry {
        weak var runtime: RuntimeHandle?
        init(_ runtime: RuntimeHandle) { self.runtime = runtime }
    }

    nonisolated(unsafe) private static var runtimes: [Entry] = []
    nonisolated(unsafe) private static let mutex: UnsafeMutablePointer<pthread_mutex_t> = {
        let m = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        pthread_mutex_init(m, nil)
        return m
    }()

    static func register(_ runtime: RuntimeHandle) {
        pthread_mutex_lock(mutex)
        runtimes.removeAll { $0.runtime == nil }
        runtimes.append(Entry(runtime))
        pthread_mutex_unlock(mutex)
    }

    /// After a call that may have created work (see the type's comment).
    static func afterCall() {
        pthread_mutex_lock(mutex)
        let live = runtimes.compactMap(\.runtime)
        pthread_mutex_unlock(mutex)
        for runtime in live where runtime.loop.isCurrentThread { runtime.wakeIfWorkIsDue() }
    }
}

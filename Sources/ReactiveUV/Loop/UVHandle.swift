import CLibUV

// The one owner of a libuv handle. Every IO type (and the loop itself) holds its handles
// through a `UVHandle`, so the lifecycle libuv asks for is written once:
//
// - the handle's memory is on the heap (`uv_handle_size(type)` bytes: a generic view such
//   as `uv_stream_t` is smaller than the `uv_tcp_t` it views), never `&storedProperty`;
// - it is initialised through `uvCheck`, so a failure names the operation and the target,
//   and memory that never became a handle is freed at once;
// - the handle's `data` holds a +1 reference to the `UVHandle` from initialisation until
//   the close callback, and the `UVHandle` holds its `owner` strongly until then, so libuv
//   can always call back into a live object, whoever dropped it;
// - the memory is freed in the close callback and nowhere else;
// - `close` is idempotent and may be called from inside the handle's own callbacks;
// - `EventLoop.close()` closes every handle still open (the `LoopResource` registration is
//   made here, once), after the owner's `onLoopShutdown` hook ran.
//
// Why a non-generic base class: the close callback is a C function pointer, which cannot be
// formed in a generic context; it finds the object as a `UVHandleCore` and never needs the
// handle's Swift type. `UVHandle<Handle>` only adds the typed pointer.

/// Where a handle is in its life.
enum UVHandleState {
    /// Initialised and usable.
    case open
    /// `uv_close` was called; the close callback has not run yet.
    case closing
    /// The close callback ran: the memory is freed.
    case closed
}

/// The type-independent part of ``UVHandle``: state, owner, close and loop shutdown.
///
/// Thread-safety: confined to `loop`'s thread, like the handle itself.
class UVHandleCore: LoopResource, @unchecked Sendable {
    /// The loop the handle belongs to.
    final let loop: EventLoop
    /// The handle's heap memory, valid until the close callback.
    final let memory: UnsafeMutableRawPointer
    /// The handle's libuv type (`UV_TCP`, `UV_TIMER`, ...).
    final let type: uv_handle_type
    /// What errors about this handle name as their target (an address, a path), if anything.
    final var target: String?
    /// The object the handle's callbacks reach (see ``owner(of:as:)``), kept alive until the
    /// close callback.
    final var owner: AnyObject?
    /// Run on the loop's thread when ``EventLoop/close()`` closes the handle, before it is
    /// closed: the owner's chance to go silent (deliver nothing more to user code) or to
    /// finish something first. The handle is closed afterwards in any case.
    final var onLoopShutdown: (() -> Void)?

    /// Where the handle is in its life.
    final private(set) var state = UVHandleState.open
    /// Run by the close callback, in order.
    final private var closeHandlers: [() -> Void] = []
    /// Whether the handle is registered with the loop as a ``LoopResource``.
    private let registered: Bool

    /// Allocates and initialises a handle (loop thread).
    ///
    /// - Parameters:
    ///   - loop: the handle's loop.
    ///   - type: the libuv handle type; the memory is `uv_handle_size(type)` bytes.
    ///   - byteCount: at least this many bytes (the Swift struct's size).
    ///   - operation: names the initialisation in an error (`"uv_tcp_init"`).
    ///   - target: names the handle's object in errors.
    ///   - registers: whether ``EventLoop/close()`` closes it (false only for the loop's
    ///     own handles, which the loop closes itself).
    ///   - initializedOnFailure: whether `initialize` leaves an initialised handle even when
    ///     it fails (`uv_spawn` does): it is then closed, and freed in its close callback.
    ///   - initialize: calls the type's `uv_*_init` on the memory.
    /// - Throws: ``UVError`` from `initialize`; the memory is freed then.
    init(
        loop: EventLoop, type: uv_handle_type, byteCount: Int, operation: String, target: String?,
        registers: Bool, initializedOnFailure: Bool, initialize: (UnsafeMutableRawPointer) -> Int32
    ) throws {
        let memory = UnsafeMutableRawPointer.allocate(
            byteCount: max(uv_handle_size(type), byteCount), alignment: 16)
        do {
            try uvCheck(initialize(memory), operation, target)
        } catch {
            if initializedOnFailure {
                let handle: UnsafeMutablePointer<uv_handle_t> = uvCast(memory)
                handle.pointee.data = nil  // no owner: the close callback only frees
                uv_close(handle, uvHandleCloseCallback)
            } else {
                memory.deallocate()
            }
            throw error
        }
        self.loop = loop
        self.memory = memory
        self.type = type
        self.target = target
        self.registered = registers
        uvHandle.pointee.data = Unmanaged.passRetained(self).toOpaque()
        // Initialising may have created a descriptor libuv watches lazily (uv_async_init,
        // uv_signal_init's signal pipe): see `EventLoop.noteWatcherStarted`.
        loop.noteWatcherStarted()
        if registers { loop.register(self) }
    }

    /// The handle as the `uv_handle_t` every handle starts with.
    final var uvHandle: UnsafeMutablePointer<uv_handle_t> { uvCast(memory) }

    /// Whether ``close(reset:_:)`` was called (closing or closed).
    final var isClosing: Bool { state != .open }
    /// Whether the close callback ran (the memory is freed).
    final var isClosed: Bool { state == .closed }

    /// Passes the return code of a call that starts the handle watching (`uv_read_start`,
    /// `uv_listen`, `uv_timer_start`, `uv_fs_event_start`...) through the one check, naming
    /// this handle's target, and notes that the loop may have a new descriptor to watch.
    ///
    /// - Returns: `rc` when it is not an error.
    /// - Throws: ``UVError`` with `operation` and ``target``.
    @discardableResult
    final func started(_ rc: Int32, _ operation: String) throws -> Int32 {
        loop.noteWatcherStarted()
        return try uvCheck(rc, operation, target)
    }

    /// Passes any other libuv return code about this handle through the one check.
    ///
    /// - Returns: `rc` when it is not an error.
    /// - Throws: ``UVError`` with `operation` and ``target``.
    @discardableResult
    final func check(_ rc: Int32, _ operation: String) throws -> Int32 {
        try uvCheck(rc, operation, target)
    }

    /// Keeps the loop alive while the handle is active (`uv_ref`; the default).
    final func ref() { if state == .open { uv_ref(uvHandle) } }
    /// Lets the loop end while the handle is active (`uv_unref`).
    final func unref() { if state == .open { uv_unref(uvHandle) } }

    /// Closes the handle (loop thread). Idempotent, and safe from inside the handle's own
    /// callbacks: libuv calls nothing of the handle's afterwards but request callbacks
    /// (with `ECANCELED`) and, last, the close callback, which frees the memory, releases
    /// the owner and runs `then` and the ``whenClosed(_:)`` handlers.
    ///
    /// - Parameters:
    ///   - reset: for a TCP handle, close with `RST` (`uv_tcp_close_reset`) instead of FIN;
    ///     falls back to a plain close when libuv refuses (a shut-down socket).
    ///   - then: run by the close callback (not run when the handle was already closing:
    ///     use ``whenClosed(_:)`` for that).
    final func close(reset: Bool = false, _ then: (() -> Void)? = nil) {
        guard state == .open else { return }
        state = .closing
        if let then { closeHandlers.append(then) }
        if reset && type == UV_TCP && uv_tcp_close_reset(uvCast(memory), uvHandleCloseCallback) == 0 {
            return
        }
        uv_close(uvHandle, uvHandleCloseCallback)
    }

    /// Calls `handler` on the loop thread once the handle is closed: from the close
    /// callback, or at once when it already ran.
    final func whenClosed(_ handler: @escaping () -> Void) {
        if state == .closed {
            handler()
        } else {
            closeHandlers.append(handler)
        }
    }

    /// The close callback's work: state, memory, registration, handlers, then the owner.
    fileprivate final func didClose() {
        state = .closed
        memory.deallocate()
        if registered { loop.unregister(self) }
        let handlers = closeHandlers
        closeHandlers = []
        onLoopShutdown = nil
        for handler in handlers { handler() }
        owner = nil
    }

    /// ``LoopResource``: the loop is closing. Runs the owner's hook, then closes.
    final func closeForLoopShutdown() {
        if state != .open { return }
        if let hook = onLoopShutdown {
            onLoopShutdown = nil
            hook()
        }
        close()
    }

    /// The owner of the handle a libuv callback was given: the hot path of every callback
    /// (one load of `data`, one of ``owner``, no dynamic cast).
    ///
    /// Valid from initialisation until the close callback, with ``owner`` set to an
    /// `Owner` (the caller vouches for the type).
    @inline(__always)
    static func owner<T, Owner: AnyObject>(of handle: UnsafeMutablePointer<T>, as _: Owner.Type) -> Owner {
        unsafeDowncast(core(of: handle).owner.unsafelyUnwrapped, to: Owner.self)
    }

    /// The `UVHandleCore` behind a handle's `data` (callbacks only, until the close callback).
    @inline(__always)
    static func core<T>(of handle: UnsafeMutablePointer<T>) -> UVHandleCore {
        let data = UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_handle_t.self).pointee.data
        return Unmanaged<UVHandleCore>.fromOpaque(data.unsafelyUnwrapped).takeUnretainedValue()
    }
}

/// The close callback of every ``UVHandle``: takes back the +1 held by `data`.
private let uvHandleCloseCallback: uv_close_cb = { handle in
    guard let handle else { return }
    guard let data = handle.pointee.data else {
        // A handle whose initialisation failed half-way (see `initializedOnFailure`).
        UnsafeMutableRawPointer(handle).deallocate()
        return
    }
    Unmanaged<UVHandleCore>.fromOpaque(data).takeRetainedValue().didClose()
}

/// The one owner of a libuv handle of C type `Handle` (`uv_tcp_t`, `uv_timer_t`, or a
/// generic view such as `uv_stream_t`).
///
/// ```swift
/// final class Ticker {
///     let timer: UVHandle<uv_timer_t>
///     init(loop: EventLoop) throws {
///         timer = try UVHandle(loop: loop, type: UV_TIMER, operation: "uv_timer_init") { uv_timer_init(loop.uvLoop, $0) }
///         timer.owner = self                      // kept alive until the close callback
///         try timer.started(uv_timer_start(timer.pointer, { t in
///             UVHandle.owner(of: t!, as: Ticker.self).tick()
///         }, 100, 100), "uv_timer_start")
///     }
///     func tick() { if done { timer.close() } }   // close from inside its own callback: fine
/// }
/// ```
final class UVHandle<Handle>: UVHandleCore, @unchecked Sendable {
    /// Allocates and initialises a handle (loop thread).
    ///
    /// - Parameters:
    ///   - loop: the handle's loop.
    ///   - type: the libuv handle type (sizes the memory).
    ///   - operation: names the initialisation in an error (`"uv_tcp_init"`).
    ///   - target: names the handle's object in errors (an address, a path).
    ///   - registers: whether ``EventLoop/close()`` closes it (default `true`).
    ///   - initializedOnFailure: whether a failed `initialize` still leaves a handle to close
    ///     (`uv_spawn`); default `false`.
    ///   - initialize: calls the type's `uv_*_init` on the typed pointer.
    /// - Throws: ``UVError`` from `initialize` (the memory is freed at once, or after the
    ///   close callback when `initializedOnFailure`).
    init(
        loop: EventLoop, type: uv_handle_type, operation: String, target: String? = nil,
        registers: Bool = true, initializedOnFailure: Bool = false,
        initialize: (UnsafeMutablePointer<Handle>) -> Int32
    ) throws {
        try super.init(
            loop: loop, type: type, byteCount: MemoryLayout<Handle>.size, operation: operation, target: target,
            registers: registers, initializedOnFailure: initializedOnFailure, initialize: { initialize(uvCast($0)) })
    }

    /// The handle as its C type. Valid until the close callback.
    var pointer: UnsafeMutablePointer<Handle> { uvCast(memory) }
}

/// The one owner of a libuv request (`uv_write_t`, `uv_fs_t`, `uv_connect_t`,
/// `uv_getaddrinfo_t`, `uv_work_t`, `uv_shutdown_t`...).
///
/// The request's memory (`uv_req_size(type)` bytes, plus `extraBytes` after it for data the
/// request carries, such as a write's bytes) lives as long as this object. ``submit(_:_:_:)``
/// makes the request's `data` hold a +1 reference to it until the callback takes it back
/// with ``finish(_:)``, so the memory stays valid while libuv owns the request and is freed
/// when the callback lets go of the object. A `uv_fs_t` is cleaned up
/// (`uv_fs_req_cleanup`) before its memory is freed.
///
/// ```swift
/// let request = UVRequest<uv_connect_t>(UV_CONNECT, owner: self)
/// try request.submit("connect", address) { uv_tcp_connect($0, tcp, sockaddr, { req, status in
///     let request = UVRequest<uv_connect_t>.finish(req!)
///     request.owner(as: Connector.self).connected(status)
/// }) }
/// ```
///
/// Thread-safety: confined to the loop's thread the request runs on.
final class UVRequest<Request>: @unchecked Sendable {
    /// The request's memory (and the extra bytes after it).
    let memory: UnsafeMutableRawPointer
    /// The libuv request type.
    let type: uv_req_type
    /// What the callback reaches (a waiter, a job); released with the request.
    var owner: AnyObject?
    /// Whether libuv ever accepted the request (so `uv_fs_req_cleanup` applies; it is
    /// idempotent).
    private var submitted = false
    /// Whether the callback took the request back (``cancel()`` then does nothing).
    private var finished = false

    /// Where the extra bytes start (16-byte aligned).
    let extra: UnsafeMutableRawPointer

    /// Allocates a request of `type` with `extraBytes` of room after it.
    init(_ type: uv_req_type, owner: AnyObject? = nil, extraBytes: Int = 0) {
        let header = (max(uv_req_size(type), MemoryLayout<Request>.size) + 15) & ~15
        memory = .allocate(byteCount: header + extraBytes, alignment: 16)
        // Zeroed, so a cleanup after a submission libuv refused reads no garbage.
        memory.initializeMemory(as: UInt8.self, repeating: 0, count: header)
        extra = memory + header
        self.type = type
        self.owner = owner
    }

    deinit {
        if submitted && type == UV_FS { uv_fs_req_cleanup(uvCast(memory)) }
        memory.deallocate()
    }

    /// The request as its C type.
    var pointer: UnsafeMutablePointer<Request> { uvCast(memory) }

    /// Hands the request to libuv: `body` makes the call (`uv_write`, `uv_fs_open`...), its
    /// return code goes through the one check, and on success the request holds itself
    /// (+1) until ``finish(_:)``. A request may be submitted again after its callback
    /// (one in flight at a time); a `uv_fs_t` is cleaned up from its previous use first.
    ///
    /// - Parameters:
    ///   - operation: names the call in an error.
    ///   - target: the path or address, if any.
    ///   - loop: the loop the request may start a watcher on (see
    ///     `EventLoop.noteWatcherStarted`), if any.
    ///   - body: makes the libuv call with the request.
    /// - Throws: ``UVError`` when libuv refuses (nothing is retained then).
    func submit(
        _ operation: String, _ target: String? = nil, on loop: EventLoop? = nil,
        _ body: (UnsafeMutablePointer<Request>) -> Int32
    ) throws {
        if submitted && type == UV_FS { uv_fs_req_cleanup(uvCast(memory)) }
        let me = Unmanaged.passRetained(self)
        uvCast(memory, as: uv_req_t.self).pointee.data = me.toOpaque()
        finished = false
        let rc = body(pointer)
        if rc < 0 {
            finished = true
            me.release()
            throw uvError(rc, operation, target)
        }
        submitted = true
        loop?.noteWatcherStarted()
    }

    /// In the request's callback: takes back the reference ``submit(_:_:_:)`` made. The
    /// memory is freed when the returned object is released.
    @inline(__always)
    static func finish(_ request: UnsafeMutablePointer<Request>) -> UVRequest<Request> {
        let data = UnsafeMutableRawPointer(request).assumingMemoryBound(to: uv_req_t.self).pointee.data
        let request = Unmanaged<UVRequest<Request>>.fromOpaque(data.unsafelyUnwrapped).takeRetainedValue()
        request.finished = true
        return request
    }

    /// The owner as the type the caller vouches for (no dynamic cast).
    @inline(__always)
    func owner<Owner: AnyObject>(as _: Owner.Type) -> Owner {
        unsafeDowncast(owner.unsafelyUnwrapped, to: Owner.self)
    }

    /// Cancels the request (`uv_cancel`) when libuv still can (a queued fs, getaddrinfo or
    /// work request); its callback then runs with `ECANCELED`.
    ///
    /// - Returns: whether libuv cancelled it (`EBUSY` means it is running or done).
    @discardableResult
    func cancel() -> Bool {
        submitted && !finished && uv_cancel(uvCast(memory)) == 0
    }
}

/// Views libuv handle or request memory as the C type a call wants.
@inline(__always)
func uvCast<T>(_ pointer: UnsafeMutableRawPointer) -> UnsafeMutablePointer<T> {
    UnsafeMutablePointer<T>(OpaquePointer(pointer))
}

/// Views libuv handle or request memory as `type` (when inference cannot tell).
@inline(__always)
func uvCast<T>(_ pointer: UnsafeMutableRawPointer, as type: T.Type) -> UnsafeMutablePointer<T> {
    UnsafeMutablePointer<T>(OpaquePointer(pointer))
}

/// A +1 reference to an object carried where only a raw pointer fits: a pthread start
/// argument, a tag on a loop's queued task (`LoopTaskContext`).
///
/// It lives here, beside ``UVHandle`` and ``UVRequest``, so that every manual retain in the
/// Loop layer and above is written in this one file: whoever takes a reference through it
/// gives it back through ``take(_:as:)`` or ``release(_:)`` exactly once.
enum RetainedReference {
    /// Retains `object` and returns its address, owning that reference.
    @inline(__always)
    static func retain<Object: AnyObject>(_ object: Object) -> UnsafeMutableRawPointer {
        Unmanaged.passRetained(object).toOpaque()
    }

    /// Takes back the reference ``retain(_:)`` made, as the object (the caller vouches for
    /// its type).
    @inline(__always)
    static func take<Object: AnyObject>(_ pointer: UnsafeMutableRawPointer, as _: Object.Type) -> Object {
        Unmanaged<Object>.fromOpaque(pointer).takeRetainedValue()
    }

    /// Gives back the reference ``retain(_:)`` made without looking at the object.
    @inline(__always)
    static func release(_ pointer: UnsafeRawPointer) {
        Unmanaged<AnyObject>.fromOpaque(pointer).release()
    }
}

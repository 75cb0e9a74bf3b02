import CReactiveUVEmbed
import CSystemShims
import ReactiveUV

/// A C function pointer and its context, carried through Swift closures.
///
/// `@unchecked Sendable`: ReactiveUV never touches `ctx`; the C program promises (in
/// reactiveuv.h) that it is usable on the threads the callback is documented to run on.
struct CContext: @unchecked Sendable {
    let ctx: UnsafeMutableRawPointer?
}

/// The object behind `ruv_subscription_t`: one subscription made from C, and the gate that
/// keeps reactiveuv.h's promises about its callbacks.
///
/// Once `dispose()` returns, no callback is running on another thread or will start; after
/// a terminal event nothing more is delivered. The gate is the same Dekker handshake as the
/// library's block subscriber: a delivery exchanges its thread token into `words[0]` and
/// then reads the closed flag `words[1]`; `dispose` sets the flag and then waits while
/// another thread's token is in `words[0]`. Both sides use sequentially consistent
/// operations, so one of them sees the other. A callback that disposes its own subscription
/// finds its own token and does not wait for itself; a nested (re-entrant) delivery on the
/// same thread leaves clearing the token to the outermost one. Sources serialize events per
/// subscription (the threading contract), so only one thread delivers at a time.
///
/// Subclasses are the subscribers for each kind of value (`CSubscriber` for byte strings,
/// `ConnectionSubscriber` for TCP connections); the C functions on `ruv_subscription_t`
/// work on this base class.
///
/// Thread-safety: `words` are atomics; `lifetime` is written once, in `attachLifetime`,
/// before any event can arrive (a dispose racing with the subscribe re-checks the flag).
class CSubscription: @unchecked Sendable {
    let context: CContext
    /// Word 0: the delivering thread's token, or 0. Word 1: 1 once closed.
    let words: UnsafeMutablePointer<csys_atomic_int>
    /// The subscription's disposable, handed over before the signal is attached.
    private(set) var lifetime: Disposable?

    init(ctx: UnsafeMutableRawPointer?) {
        context = CContext(ctx: ctx)
        words = .allocate(capacity: 2)
        csys_atomic_int_init(words, 0)
        csys_atomic_int_init(words + 1, 0)
    }

    deinit { words.deallocate() }

    /// Whether the subscription has ended (disposed, or a terminal event delivered).
    final var isClosed: Bool {
        csys_atomic_int_load(words + 1, csys_seq_cst) != 0 || (lifetime?.isDisposed ?? false)
    }

    /// Keeps the subscription's disposable (`SubscriberProtocol.didSubscribe(with:)`).
    final func attachLifetime(_ disposable: Disposable) {
        lifetime = disposable
        // Disposed while being handed over (a dispose from another thread that raced the
        // subscribe): end the subscription before the signal is attached.
        if csys_atomic_int_load(words + 1, csys_seq_cst) != 0 { disposable.dispose() }
    }

    /// Runs `body` if the gate is open; `terminal` closes it for good first.
    @inline(__always)
    final func deliver(terminal: Bool, _ body: () -> Void) {
        let me = Int64(Int(bitPattern: csys_thread_token()))
        let previous = csys_atomic_int_exchange(words, me, csys_seq_cst)
        defer { if previous != me { csys_atomic_int_store(words, 0, csys_release) } }
        if terminal {
            if csys_atomic_int_exchange(words + 1, 1, csys_seq_cst) != 0 { return }
        } else if csys_atomic_int_load(words + 1, csys_seq_cst) != 0 {
            return
        }
        body()
    }

    /// Delivers an error to a C error callback (code and message).
    final func deliverError(_ error: any Error, _ callback: ruv_error_cb?) {
        let ctx = context.ctx
        deliver(terminal: true) {
            guard let callback else { return }
            let (code, message) = cError(error)
            message.withCString { callback(code, $0, ctx) }
        }
    }

    /// Delivers completion to a C completion callback.
    final func deliverCompleted(_ callback: ruv_completed_cb?) {
        let ctx = context.ctx
        deliver(terminal: true) { callback?(ctx) }
    }

    /// Closes the gate, waits for a delivery under way on another thread, then disposes
    /// the subscription's resources.
    final func dispose() {
        csys_atomic_int_exchange(words + 1, 1, csys_seq_cst)
        let me = Int64(Int(bitPattern: csys_thread_token()))
        var spins = 0
        while true {
            let delivering = csys_atomic_int_load(words, csys_seq_cst)
            if delivering == 0 || delivering == me { break }
            spins += 1
            if spins > 64 { csys_thread_yield() }
        }
        lifetime?.dispose()
    }
}

/// The subscriber behind `ruv_signal_subscribe`: byte strings to C callbacks.
final class CSubscriber: CSubscription, SubscriberProtocol, @unchecked Sendable {
    typealias Value = Bytes

    let onNext: ruv_next_cb?
    let onError: ruv_error_cb?
    let onCompleted: ruv_completed_cb?

    init(next: ruv_next_cb?, error: ruv_error_cb?, completed: ruv_completed_cb?, ctx: UnsafeMutableRawPointer?) {
        onNext = next
        onError = error
        onCompleted = completed
        super.init(ctx: ctx)
    }

    func didSubscribe(with disposable: Disposable) { attachLifetime(disposable) }

    func sendNext(_ value: Bytes) {
        guard let onNext else { return }
        let ctx = context.ctx
        deliver(terminal: false) {
            withBytes(value) { bytes, count in onNext(bytes, count, ctx) }
        }
    }

    func sendError(_ error: any Error) { deliverError(error, onError) }

    func sendCompleted() { deliverCompleted(onCompleted) }
}

/// Subscribes `subscriber` to `signal`, handing C the subscription first when it asked.
///
/// - Returns: 0.
func subscribe(_ signal: Signal<Bytes>, _ subscriber: CSubscriber, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    // Written before subscribing, so a callback running during the call can dispose it.
    out?.pointee = retainedHandle(subscriber)
    signal.subscribe(subscriber)
    return 0
}

/// `ruv_signal_subscribe`: subscribes C callbacks to a signal.
@c @implementation
public func ruv_signal_subscribe(
    _ signal: OpaquePointer?, _ onNext: ruv_next_cb?, _ onError: ruv_error_cb?, _ onCompleted: ruv_completed_cb?,
    _ ctx: UnsafeMutableRawPointer?, _ out: UnsafeMutablePointer<OpaquePointer?>?
) -> Int32 {
    defer { HostWakeups.afterCall() }  // a host watching only the backend fd hears of new work
    guard let handle = borrowed(signal, as: SignalHandle.self) else { return einval }
    let subscriber = CSubscriber(next: onNext, error: onError, completed: onCompleted, ctx: ctx)
    return subscribe(handle.signal, subscriber, out)
}

/// `ruv_subscription_dispose`: ends the subscription (any thread).
@c @implementation
public func ruv_subscription_dispose(_ subscription: OpaquePointer?) -> Int32 {
    defer { HostWakeups.afterCall() }  // a host watching only the backend fd hears of new work
    guard let subscriber = borrowed(subscription, as: CSubscription.self) else { return einval }
    subscriber.dispose()
    return 0
}

/// `ruv_subscription_is_disposed`: 1 once the subscription has ended.
@c @implementation
public func ruv_subscription_is_disposed(_ subscription: OpaquePointer?) -> Int32 {
    guard let subscriber = borrowed(subscription, as: CSubscription.self) else { return einval }
    return subscriber.isClosed ? 1 : 0
}

/// `ruv_subscription_release`: gives back C's reference; the subscription goes on.
@c @implementation
public func ruv_subscription_release(_ subscription: OpaquePointer?) {
    defer { HostWakeups.afterCall() }  // a host watching only the backend fd hears of new work
    releaseHandle(subscription, as: CSubscription.self)
}

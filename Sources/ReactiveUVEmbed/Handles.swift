import CLibUV
import CReactiveUVEmbed
import CSystemShims
import ReactiveUV

// How C handles map to Swift objects.
//
// Every `ruv_<object>_t *` is an `Unmanaged` reference to one of the final classes below:
// a constructor passes a retained reference out (the C caller owns it), functions borrow it
// (holding a Swift reference of their own while they run, since a callback they run may
// release C's), and `ruv_<object>_release` gives it back. A handle is a thin
// box around the Swift object that does the work (a `Signal`, a `Subject`, an `EventLoop`),
// so whatever else uses that object (a subscription, an operator built on a signal) keeps
// its own Swift reference and is unaffected when C releases the handle.
//
// Why not a handle table: C has no type safety or use-after-free protection from a table
// either unless every handle is also generation-checked, and a table lookup (a lock) per
// call would cost more than the calls themselves; libuv hands out raw pointers too. Misuse
// (a released or foreign pointer) is documented as undefined, as it is for `free`.

/// A value crossing the boundary: a byte string.
typealias Bytes = [UInt8]

/// The object behind `ruv_signal_t`: an immutable signal of byte strings.
final class SignalHandle {
    /// The signal; operators build new handles from it.
    let signal: Signal<Bytes>

    init(_ signal: Signal<Bytes>) { self.signal = signal }
}

/// The object behind `ruv_subject_t`.
///
/// Thread-safety: `subject` serializes its own sends; `terminated` is an atomic flag.
final class SubjectHandle: @unchecked Sendable {
    /// The subject (a `ReplaySubject` when created with a replay capacity).
    let subject: Subject<Bytes>
    /// Set by the first terminal send. Only C sends into a subject it created, so this
    /// flag knows what `Subject.hasTerminated` knows without the generic, locked read
    /// that costs more than the send itself.
    let terminated: UnsafeMutablePointer<csys_atomic_int>

    init(_ subject: Subject<Bytes>) {
        self.subject = subject
        terminated = .allocate(capacity: 1)
        csys_atomic_int_init(terminated, 0)
    }

    deinit { terminated.deallocate() }

    /// Whether a terminal event was sent.
    var hasTerminated: Bool { csys_atomic_int_load(terminated, csys_acquire) != 0 }

    /// Claims the terminal send; false when another one came first.
    func claimTermination() -> Bool { csys_atomic_int_exchange(terminated, 1, csys_acq_rel) == 0 }
}

/// Passes a new retained reference to `object` out to C.
@inline(__always)
func retainedHandle(_ object: AnyObject) -> OpaquePointer {
    OpaquePointer(Unmanaged.passRetained(object).toOpaque())
}

/// Runs `body` with the object behind a handle C lends us, holding a reference of our own
/// until `body` returns; `nil` for NULL.
///
/// Why a reference of our own (a retain and a release per call, next to the copy of the
/// value every send makes) and not C's borrowed through `_withUnsafeGuaranteedRef`, as
/// this did: C's reference does not always outlive the call. `ruv_subject_send_next` runs
/// the subscribers' callbacks, and one of them may release C's only reference to the
/// subject (`ruv_subject_release` from inside the send), which freed the handle and the
/// subject while the send was still delivering on them. Nothing touched either after the
/// callbacks, so it went unnoticed; any later change would have read freed memory.
/// `EmbedHandleLifetimeTests` (`C/handle-lifetime.c`, plainly and under valgrind) pins it.
@inline(__always)
func withBorrowed<T: AnyObject, R>(_ handle: OpaquePointer?, as type: T.Type, _ body: (T) -> R) -> R? {
    guard let handle else { return nil }
    let object = Unmanaged<T>.fromOpaque(UnsafeRawPointer(handle)).takeUnretainedValue()
    return withExtendedLifetime(object) { body(object) }
}

/// The object behind a handle C lends us, or `nil` for NULL (the count is untouched).
@inline(__always)
func borrowed<T: AnyObject>(_ handle: OpaquePointer?, as type: T.Type) -> T? {
    guard let handle else { return nil }
    return Unmanaged<T>.fromOpaque(UnsafeRawPointer(handle)).takeUnretainedValue()
}

/// Gives back the reference C owned (`ruv_<object>_release`); NULL does nothing.
@inline(__always)
func releaseHandle<T: AnyObject>(_ handle: OpaquePointer?, as type: T.Type) {
    guard let handle else { return }
    Unmanaged<T>.fromOpaque(UnsafeRawPointer(handle)).release()
}

/// Takes over a reference C passed in (a `ruv_signal_cb` result).
@inline(__always)
func takenHandle<T: AnyObject>(_ handle: OpaquePointer, as type: T.Type) -> T {
    Unmanaged<T>.fromOpaque(UnsafeRawPointer(handle)).takeRetainedValue()
}

/// Writes a new signal handle through `out`.
///
/// - Returns: 0, or `UV_EINVAL` for a NULL `out`.
@inline(__always)
func output(_ signal: Signal<Bytes>, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    guard let out else { return einval }
    out.pointee = retainedHandle(SignalHandle(signal))
    return 0
}

/// `UV_EINVAL` as the C functions return it: a NULL handle, callback or out pointer.
let einval: Int32 = UV_EINVAL.rawValue

/// Copies `len` bytes from C into a value (`bytes` may be NULL when `len` is 0).
@inline(__always)
func copyBytes(_ bytes: UnsafeRawPointer?, _ len: Int) -> Bytes? {
    if len == 0 { return [] }
    guard let bytes else { return nil }
    return Bytes(UnsafeRawBufferPointer(start: bytes, count: len))
}

/// A valid address for a zero-length value (C is promised a non-NULL pointer): the
/// static storage of an empty string literal.
@inline(__always)
private var emptyBytes: UnsafeRawPointer { UnsafeRawPointer(("" as StaticString).utf8Start) }

/// Lends a value's bytes to C for the duration of `body` (never a NULL pointer).
@inline(__always)
func withBytes<R>(_ value: Bytes, _ body: (UnsafeRawPointer, Int) -> R) -> R {
    value.withUnsafeBytes { buffer in
        body(buffer.baseAddress ?? emptyBytes, buffer.count)
    }
}

/// A C string argument as a Swift string, or `nil` for NULL.
@inline(__always)
func string(_ text: UnsafePointer<CChar>?) -> String? {
    text.map { String(cString: $0) }
}

/// A C `size_t` count as a Swift count: sizes above `Int.max` (SIZE_MAX among them) mean
/// "unlimited", which `Int.max` is in practice.
@inline(__always)
func count(_ size: Int) -> Int { size < 0 ? Int.max : size }
